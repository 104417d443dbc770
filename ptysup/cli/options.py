"""The run's options and the subcommands' names: the one click command `ptysup TASK` is,
where each option's value is checked, and where a bad value came from.
The command line (commandline), completion and the checks of files all read options here."""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Annotated, Any

import click
import typer

from ptysup.cli.help import EPILOG, GroupedCommand
from ptysup.cli.numbers import Number, WholeNumber
from ptysup.cli.optioncheck import OptionCheck, _prompt_template, check_given, file_check
from ptysup.config import (
    DEFAULT_IDLE,
    DEFAULT_MAX_REPEATS,
    DEFAULT_MAX_WAITS,
    DEFAULT_NOTIFY_ON,
    DEFAULT_START_TIMEOUT,
    DEFAULT_SUPERVISOR_BACKOFF,
    DEFAULT_SUPERVISOR_RETRIES,
    DEFAULT_SUPERVISOR_TIMEOUT,
    DEFAULT_SUPERVISOR_TOOLS,
    DEFAULT_TURN_TIMEOUT,
    DEFAULT_VERIFY_TIMEOUT,
    DEFAULT_WAIT_BASE,
    ConfigError,
    RunConfig,
    parse_duration,
    split_command,
)
from ptysup.terminal.keys import DEFAULT_ESCAPE_KEY, parse_escape_key

ENV_PREFIX = "PTYSUP"
NO_SECOND_OPINION = "none"
# Options read only from a config file, not from the command line.
_FILE_ONLY = ("prompt_template",)
# Repeatable: one item per line in PTYSUP_VERIFY etc.
_LIST_OPTIONS = ("verify", "redact", "notify", "notify_url", "notify_on", "protect")
_NOT_FROM_ENV = ("version", "help")
# No rich markup: it would swallow "[tool.ptysup]" in the help text.
app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)

# Subcommands: NAME → "module:function", a `function(args) -> int` imported only when used.
# A task that is literally one of these words runs as `ptysup -- WORD`.
SUBCOMMANDS: dict[str, str] = {
    "replay": "ptysup.views.replay:main",
    "doctor": "ptysup.cli.doctor:main",
    "completion": "ptysup.cli.completion:main",
    "help": "ptysup.cli.commandline:help_main",
    "version": "ptysup.cli.commandline:version_main",
    "check": "ptysup.cli.check:main",
    "resume": "ptysup.cli.resume:main",
    "runs": "ptysup.views.runs:main",
    "attach": "ptysup.attach.client:main",
    "send": "ptysup.attach.steercli:send_main",
    "budget": "ptysup.attach.steercli:budget_main",
    "stop": "ptysup.attach.steercli:stop_main",
    "batch": "ptysup.batch.command:main",
    "serve": "ptysup.serve.cli:main",
    "judge-bench": "ptysup.judgebench.command:main",
}


def _opt(help: str, **kw: Any) -> Any:
    return typer.Option(help=help, **kw)


@app.command(
    cls=GroupedCommand,
    help="Run an AI coding agent on TASK in a PTY and supervise it with a fresh `claude -p` "
    "at every turn end. Every option can also be set as PTYSUP_<NAME> or in .ptysup.yaml / "
    "[tool.ptysup] in pyproject.toml (looked up from here to the repository root).",
    epilog=EPILOG,
)
def run_command(
    ctx: typer.Context,
    task: Annotated[
        str | None,
        typer.Argument(
            help="What the agent should do (or --task-file; optional with --plan).",
            show_default=False,
        ),
    ] = None,
    plan: Annotated[
        Path | None,
        _opt(
            "A YAML plan of steps, each with its own check (see `ptysup check`).",
            show_default=False,
        ),
    ] = None,
    task_file: Annotated[
        str | None,
        _opt(
            "Read the task from FILE ('-': standard input) instead of TASK.",
            show_default=False,
            metavar="FILE",
        ),
    ] = None,
    max_iter: Annotated[
        int, _opt("The most supervisor decisions in one run.", click_type=WholeNumber(1))
    ] = 50,
    max_time: Annotated[
        str | None, _opt("A second hard budget, e.g. 90m or 1h30m (exit 3).", show_default=False)
    ] = None,
    max_cost: Annotated[
        float | None,
        _opt(
            "Stop once the run's cost, agent and supervisor, reaches USD (exit 3).",
            # More than 0, as the help says (x>0): a cap of 0 would end the run before its
            # first turn. One range object validates and describes it.
            click_type=Number(0, above=True),
        ),
    ] = None,
    max_repeats: Annotated[
        int,
        _opt(
            "Identical rounds in a row (same instruction, same answer, no file changed) "
            "that end the run as an escalation (exit 7); 0 turns it off.",
            click_type=WholeNumber(0),
        ),
    ] = DEFAULT_MAX_REPEATS,
    agent_cmd: Annotated[
        str, _opt("The agent's command line (split like a shell, never run through one).")
    ] = "claude",
    agent: Annotated[
        str | None,
        _opt(
            "Which agent --agent-cmd starts: claude, codex, gemini, qwen, opencode, aider or "
            "generic (default: known by its program's name; for a wrapper script).",
            show_default=False,
        ),
    ] = None,
    supervisor_cmd: Annotated[
        str, _opt("Run fresh for each decision; the prompt goes on its stdin.")
    ] = "claude -p",
    supervisor_timeout: Annotated[
        float,
        _opt(
            "Seconds before a supervisor is killed with its process group.", click_type=Number(0.1)
        ),
    ] = DEFAULT_SUPERVISOR_TIMEOUT,
    supervisor_retries: Annotated[
        int,
        _opt(
            "Retries of one failed decision before giving up (exit 5).", click_type=WholeNumber(0)
        ),
    ] = DEFAULT_SUPERVISOR_RETRIES,
    supervisor_backoff: Annotated[
        float,
        _opt(
            "Seconds before the first retry; each next one waits 4x longer.", click_type=Number(0)
        ),
    ] = DEFAULT_SUPERVISOR_BACKOFF,
    supervisor_model: Annotated[
        str | None,
        _opt("The model of a claude supervisor (default: Claude Code's).", show_default=False),
    ] = None,
    supervisor_tools: Annotated[
        str,
        _opt("Tools of a claude supervisor, comma-separated (e.g. Read,Grep,Glob,Bash)."),
    ] = DEFAULT_SUPERVISOR_TOOLS,
    warm_supervisor: Annotated[
        bool, _opt("Start the next supervisor ahead of time, so it answers sooner.")
    ] = True,
    second_opinion: Annotated[
        str | None,
        _opt(
            "Another supervisor command asked before a [COMPLETE] counts (its [CONTINUE] "
            "goes to the agent, [ABORT] or [ESCALATE] escalates); auto: an installed CLI of "
            "another vendor than the agent's and the judge's; none: no second opinion.",
            show_default=False,
            metavar="CMD",
        ),
    ] = None,
    verify: Annotated[
        list[str] | None,
        _opt(
            "A command that must pass before [COMPLETE] is accepted (repeatable).",
            show_default=False,
        ),
    ] = None,
    verify_timeout: Annotated[
        float, _opt("Seconds a --verify command may run.", click_type=Number(0.1))
    ] = DEFAULT_VERIFY_TIMEOUT,
    verify_baseline: Annotated[
        bool,
        _opt(
            "Run the checks once before the agent starts: a check that already passes "
            "cannot tell done from not done (you and the supervisor are told)."
        ),
    ] = True,
    protect: Annotated[
        list[str] | None,
        _opt(
            "Files that define done, beyond the test files git tracks and the files the "
            "checks name: a git pathspec (repeatable); none protects nothing.",
            show_default=False,
            metavar="PATHSPEC",
        ),
    ] = None,
    wait: Annotated[
        bool, _opt("On API errors and usage limits, wait and type 'continue' (else exit 6).")
    ] = True,
    max_waits: Annotated[
        int,
        _opt(
            "The most such waits in one run; one more ends it (exit 6).", click_type=WholeNumber(0)
        ),
    ] = DEFAULT_MAX_WAITS,
    wait_base: Annotated[
        float,
        _opt("Seconds of the first wait without a reset time; then doubled.", click_type=Number(0)),
    ] = DEFAULT_WAIT_BASE,
    log_file: Annotated[
        Path | None,
        _opt("JSONL event log (default: .ptysup/runs/RUN-ID/events.jsonl).", show_default=False),
    ] = None,
    log_format: Annotated[
        str, _opt("What to print when stdout is not a terminal: text or json.")
    ] = "text",
    record: Annotated[
        Path | None,
        _opt(
            "The agent's terminal as asciicast v2 (default: next to the event log).",
            show_default=False,
        ),
    ] = None,
    recording: Annotated[bool, _opt("Record the agent's terminal.")] = True,
    summary_json: Annotated[
        Path | None, _opt("Write the final summary as JSON here.", show_default=False)
    ] = None,
    redact: Annotated[
        list[str] | None,
        _opt(
            "A regex whose matches are hidden in logs and prompts (repeatable).", show_default=False
        ),
    ] = None,
    status: Annotated[
        bool, _opt("In a terminal, show iteration, time and last decision on the bottom row.")
    ] = True,
    escape_key: Annotated[
        str,
        _opt(
            "ptysup's own key in a terminal, then: s stop the run (exit 8), p pause/resume "
            "supervision, the key again sends it to the agent; none turns it off."
        ),
    ] = DEFAULT_ESCAPE_KEY,
    idle: Annotated[
        float,
        _opt("Quiet seconds that end a turn for agents without hooks.", click_type=Number(0.1)),
    ] = DEFAULT_IDLE,
    turn_timeout: Annotated[
        float,
        _opt(
            "Seconds with no output and no turn end before the supervisor is asked.",
            click_type=Number(1),
        ),
    ] = DEFAULT_TURN_TIMEOUT,
    questions: Annotated[
        str, _opt("Who answers the agent's questions: supervisor or person.")
    ] = "supervisor",
    escalate_wait: Annotated[
        str | None,
        _opt(
            "Without a terminal, how long an escalation waits for an answer sent with "
            "`ptysup send` (or the control page), e.g. 30m; then exit 7. Off: ends at once.",
            show_default=False,
            metavar="DURATION",
        ),
    ] = None,
    notify: Annotated[
        list[str] | None,
        _opt(
            "On a notification, run CMD with the event as JSON on stdin (repeatable).",
            show_default=False,
        ),
    ] = None,
    notify_url: Annotated[
        list[str] | None,
        _opt(
            "Send notifications to this apprise URL (repeatable; pip install 'ptysup[notify]').",
            show_default=False,
        ),
    ] = None,
    notify_on: Annotated[
        list[str] | None,
        _opt(
            f"Which events notify (repeatable or comma-separated; default "
            f"{','.join(DEFAULT_NOTIFY_ON)}).",
            show_default=False,
        ),
    ] = None,
    start_timeout: Annotated[
        float,
        _opt(
            "Seconds the agent may take to reach its input box (exit 4); without a terminal "
            "a first-run dialog ends the start at once.",
            click_type=Number(1),
        ),
    ] = DEFAULT_START_TIMEOUT,
    config: Annotated[
        Path | None,
        _opt(
            "A YAML config file (default: .ptysup.yaml, or [tool.ptysup] in pyproject.toml).",
            show_default=False,
        ),
    ] = None,
    debug: Annotated[bool, _opt("Show tracebacks.")] = False,
    version: Annotated[
        bool, typer.Option("--version", "-V", help="Print the version and exit.", is_eager=True)
    ] = False,
) -> None:
    for param in ctx.command.params:  # the same checks as every file's values get
        name = param.name or ""
        try:
            check_given(name, ctx.params.get(name))
        except ValueError as exc:
            raise ConfigError(f"--{name.replace('_', '-')}: {exc}{_origin(ctx, name)}") from None
    # Imported here, not at the top: `ptysup --help` never gets this far.
    from ptysup.cli.tasktext import resolve_task
    from ptysup.notify import parse_kinds

    loaded = ctx.meta.get("plan")
    if (
        task is None
        and task_file is None
        and (loaded is not None or not ctx.meta.get("need_task", True))
    ):
        task = ""  # a plan's goal and steps stand for the task; a resume keeps its own
    else:
        task = resolve_task(task, task_file, sys.stdin)
    ctx.meta["explicit"] = frozenset(
        name
        for name in ctx.params
        if ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE
    )
    file_only: dict[str, Any] = ctx.meta.get("file_only") or {}
    template = file_only.get("prompt_template")
    escape = parse_escape_key(escape_key)  # each value passed check_given above
    notify_kinds = parse_kinds(notify_on) if notify_on else DEFAULT_NOTIFY_ON
    duration = parse_duration(max_time, "--max-time") if max_time else None
    ctx.obj = RunConfig(
        task=task or (loaded.goal if loaded is not None else ""),
        plan=loaded,
        max_iter=max_iter,
        max_time=duration,
        max_cost=max_cost,
        max_repeats=max_repeats,
        agent_cmd=split_command(agent_cmd, "--agent-cmd"),
        agent=agent,
        supervisor_cmd=split_command(supervisor_cmd, "--supervisor-cmd"),
        supervisor_timeout=supervisor_timeout,
        supervisor_retries=supervisor_retries,
        supervisor_backoff=supervisor_backoff,
        supervisor_model=supervisor_model or None,
        supervisor_tools=supervisor_tools,
        warm_supervisor=warm_supervisor,
        second_opinion=_second_opinion(second_opinion),
        verify=tuple(split_command(v, "--verify") for v in verify or ()),
        verify_timeout=verify_timeout,
        verify_baseline=verify_baseline,
        protect=tuple(protect or ()),
        wait=wait,
        max_waits=max_waits,
        wait_base=wait_base,
        log_file=log_file,
        log_format=log_format,
        record=record,
        recording=recording,
        summary_json=summary_json,
        redact=tuple(redact or ()),
        status=status,
        escape_key=escape,
        prompt_template=template,
        idle=idle,
        turn_timeout=turn_timeout,
        start_timeout=start_timeout,
        cwd=Path.cwd(),
        debug=debug,
        questions=questions,
        escalate_wait=parse_duration(escalate_wait, "--escalate-wait") if escalate_wait else None,
        notify=tuple(split_command(n, "--notify") for n in notify or ()),
        notify_url=tuple(notify_url or ()),
        notify_on=notify_kinds,
    )


def _second_opinion(value: str | None) -> tuple[str, ...] | None:
    """--second-opinion's command line; None for none (a config file's turned off)."""
    if value is None or value.strip() == NO_SECOND_OPINION:
        return None
    return split_command(value, "--second-opinion")


@functools.cache
def _command() -> click.Command:
    """The click command typer builds from `app` (built once: it reads every annotation)."""
    command = typer.main.get_command(app)
    for param in command.params:
        if param.name in _NOT_FROM_ENV and isinstance(param, click.Option):
            param.allow_from_autoenv = False  # a stray PTYSUP_VERSION is no request for it
    return command


def option_params() -> list[click.Parameter]:
    """The run's options as click parameters (what a plan or config file may set)."""
    return list(_command().params)


def _variable(name: str) -> str:
    """The environment variable of an option (parameter name)."""
    return f"{ENV_PREFIX}_{name.upper()}"


def _origin(ctx: click.Context, name: str | None) -> str:
    """Where a bad value came from when it was not the command line: ' (from PTYSUP_X)'
    or ' (from FILE)'; `name` None: a value only a file can give."""
    source = None if name is None else ctx.get_parameter_source(name)
    if name is not None and (
        source is click.core.ParameterSource.ENVIRONMENT or name in ctx.meta.get("from_env", ())
    ):
        return f" (from {_variable(name)})"
    if name is None or source is click.core.ParameterSource.DEFAULT_MAP:
        plan = ctx.meta.get("plan")  # a plan's options beat the config file's
        if plan is not None and (name or "prompt_template") in plan.options:
            return f" (from {plan.path})"
        where = ctx.meta.get("config_file")
        return f" (from {where})" if where else ""
    return ""


def checks(exclude: tuple[str, ...] = ()) -> dict[str, OptionCheck]:
    """Each run option a file may set (parameter name) → the check of its value."""
    out = {p.name: file_check(p) for p in option_params() if p.name and p.name not in exclude}
    out["prompt_template"] = _prompt_template
    return out
