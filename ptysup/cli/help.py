"""`ptysup --help`: options in groups, then examples and exit codes (plain text, no rich)."""

from __future__ import annotations

import click
import typer.core

# Options not listed here (added later) still show, under "Other options".
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Task", ("task", "task_file", "plan")),
    ("Budgets", ("max_iter", "max_time", "max_cost", "max_repeats")),
    ("Agent", ("agent_cmd", "start_timeout", "turn_timeout", "idle")),
    ("API errors", ("wait", "max_waits", "wait_base")),
    (
        "Supervisor and verification",
        (
            "supervisor_cmd",
            "supervisor_model",
            "supervisor_tools",
            "warm_supervisor",
            "supervisor_timeout",
            "supervisor_retries",
            "supervisor_backoff",
            "second_opinion",
            "verify",
            "verify_timeout",
            "verify_baseline",
            "protect",
        ),
    ),
    (
        "Questions and notifications",
        ("questions", "escalate_wait", "notify", "notify_url", "notify_on"),
    ),
    ("Output", ("log_file", "log_format", "record", "recording", "summary_json", "redact")),
    ("Terminal", ("status", "escape_key")),
    ("General", ("config", "debug", "version", "help")),
)

EPILOG = """\b
Examples:
  ptysup "implement feature X" --max-iter 50
  ptysup --task-file TASK.md --verify "python -m pytest -q" --max-time 90m
  ptysup --plan plan.yaml       steps, each with its own check (ptysup check plan.yaml)
  ptysup doctor                 check this machine and folder before a first (CI) run
  ptysup replay last            a past run's decisions with the screens behind them
  ptysup resume last            continue an interrupted run (ptysup runs lists them)
  ptysup batch TASKS.yaml       many tasks in parallel, each on its own branch
  ptysup attach last            watch a running run's terminal from another terminal
  ptysup send last "use SQLite" type into a running run as you (budget, stop: steer it)
  ptysup serve                  the runs of this folder as a local web page
  ptysup judge-bench            how good the judge is, on labelled turn ends
  ptysup -- replay              a task that is literally a subcommand's name
\b
Subcommands: replay, resume, runs, attach, send, budget, stop, batch, serve, check,
doctor, judge-bench, completion, help, version.
\b
In a terminal: Ctrl-] then s stops the run, p pauses and resumes supervision (you take
over), Ctrl-] again sends Ctrl-] to the agent (--escape-key).
\b
Exit codes: 0 complete, 1 abort, 2 usage error, 3 budget (iterations, time, cost, a plan
step's max_iter), 4 agent exited or could not start, 5 supervisor failed, 6 API error or
usage limit (with --no-wait or --max-waits used up), 7 escalated to a person ([ESCALATE]
or --max-repeats identical rounds; no terminal), 8 stopped by the person (escape key),
70 internal error, 74 the event log could not be written (the run was ended), 128+N
killed by signal N.
"""


class GroupedCommand(typer.core.TyperCommand):
    """The run command, its options shown in groups."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Arguments and options under a heading per group."""
        help_option = self.get_help_option(ctx)
        records = {
            "help" if p is help_option else p.name: rec
            for p in self.get_params(ctx)
            if p.name and (rec := p.get_help_record(ctx)) is not None
        }
        shown: set[str] = set()
        for title, names in GROUPS:
            rows = [records[n] for n in names if n in records]
            shown.update(names)
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)
        rest = [rec for name, rec in records.items() if name not in shown]
        if rest:
            with formatter.section("Other options"):
                formatter.write_dl(rest)
