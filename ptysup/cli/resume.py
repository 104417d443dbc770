"""`ptysup resume [RUN]`: continue an interrupted run — same events, budgets, plan step and
Claude Code conversation."""

from __future__ import annotations

import dataclasses
import os
import sys
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

from ptysup.argspec import ArgSpec
from ptysup.config import ConfigError, RunConfig
from ptysup.events import counted
from ptysup.exitcodes import ExitCode
from ptysup.logread import skipped_note
from ptysup.plan.schema import Plan
from ptysup.store.rundir import (
    Part,
    Progress,
    RunDir,
    RunNotFound,
    config_from_json,
    find_run_dir,
)

USAGE = (
    "usage: ptysup resume [RUN] [--say TEXT] [OPTIONS]   (RUN: 'last' (default), a run id "
    "or prefix, a run directory or events file; OPTIONS as for a run override the stored ones)"
)
# Where the run's files are: they stay with the run.
_FIXED = {"log_file", "record", "recording", "plan", "task", "task_file", "config"}
ARGS = ArgSpec(
    options={"--say": "text"},
    args=("file",),
    run_options=True,
    not_run_options=frozenset(f"--{name.replace('_', '-')}" for name in _FIXED),
)


class Refused(Exception):
    """The run cannot be resumed; the message is one line."""


def main(args: Sequence[str], env: Mapping[str, str]) -> int:
    """Entry point of `ptysup resume`."""
    from ptysup.cli import commandline as cli

    if args[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    run = args[0] if args and not args[0].startswith("-") else "last"
    rest = list(args[1:] if args and not args[0].startswith("-") else args)
    try:
        say, rest = _take_say(rest)
    except ValueError as exc:
        return cli._fail(str(exc), ExitCode.USAGE)
    parsed = cli.parse_options(rest, env, need_task=False)
    if isinstance(parsed, int):
        return parsed
    given, explicit = parsed
    try:
        config, part = prepare(run, given, explicit, say, env)
    except (Refused, RunNotFound, ConfigError) as exc:
        return cli._fail(str(exc), ExitCode.USAGE)
    if part.resumed is not None and part.resumed.unreadable:  # said before the agent's screen
        where = f"run {part.run_id}'s event log"
        print(f"ptysup: resume: {skipped_note(part.resumed.unreadable, where)}", file=sys.stderr)
    spent = spent_budget(part.run_id, config, part.resumed) if part.resumed else None
    if spent is not None:  # killed while its budget stopped it: it ends so now
        print(f"ptysup: resume: {spent[1]}; it ends now, as it was ending", file=sys.stderr)
    from ptysup.run import lifecycle

    return lifecycle.supervise(config, env, fail=cli._fail, preflight=cli.preflight, part=part)


def _take_say(args: list[str]) -> tuple[str | None, list[str]]:
    """--say TEXT (or --say=TEXT) out of the options."""
    say = None
    rest: list[str] = []
    it = iter(args)
    for arg in it:
        if arg == "--say":
            say = next(it, None)
            if say is None:
                raise ValueError("--say needs the text to type")
        elif arg.startswith("--say="):
            say = arg.split("=", 1)[1]
        else:
            rest.append(arg)
    if say is not None and not say.strip():
        raise ValueError("--say is empty")
    return say, rest


def prepare(
    run: str,
    given: RunConfig,
    explicit: frozenset[str],
    say: str | None,
    env: Mapping[str, str],
) -> tuple[RunConfig, Part]:
    """The stored run with the command line's options on top, and how to continue it."""
    fixed = sorted(explicit & _FIXED)
    if fixed:
        what = "task (--task-file)" if fixed[0] == "task_file" else fixed[0].replace("_", "-")
        raise Refused(f"a resumed run keeps its {what}")
    run_dir = find_run_dir(run, given.cwd / given.runs_dir)
    record = run_dir.read_record()
    if record is None:
        why = "it has no run.json"
        if not os.path.lexists(run_dir.default_events):
            why = "it wrote nothing but its lock (a full disk or an unwritable folder as it "
            why += "started): nothing was started, start it again"
        raise Refused(f"run {run_dir.run_id} cannot be resumed: {why}")
    pid = run_dir.holder()
    if pid is not None:
        raise Refused(f"run {run_dir.run_id} is still running (pid {pid})")
    done = run_dir.read_progress(Path(record.log_file))
    if done.outcome == "complete":
        raise Refused(f"run {run_dir.run_id} is already complete")
    plan = _plan(run_dir, record.plan)
    # The run directory stays where it is: a batch's task runs in its worktree (record.cwd)
    # while its run directory is in the folder the batch was started from.
    stored = config_from_json(
        record.config, cwd=Path(record.cwd), runs_dir=run_dir.path.parent.resolve(), plan=plan
    )
    if stored.log_file is not None:  # the same file, wherever resume is started from
        stored = dataclasses.replace(stored, log_file=Path(record.log_file))
    if done.budgets is not None:  # moved by a person while the run went: they stand
        moved = done.budgets
        stored = dataclasses.replace(
            stored,
            max_iter=int(moved.get("max_iter") or stored.max_iter),
            max_time=None if moved.get("max_time") is None else float(moved["max_time"] or 0),
            max_cost=None if moved.get("max_cost") is None else float(moved["max_cost"] or 0),
        )
    fields = {f.name for f in dataclasses.fields(RunConfig)}
    config = dataclasses.replace(
        stored, **{n: getattr(given, n) for n in explicit if n in fields and n not in _FIXED}
    )
    # The escape key belongs to the terminal at hand (run.json leaves it out): the resume's
    # own, from its command line, environment or config file.
    config = dataclasses.replace(config, escape_key=given.escape_key)
    _check_unknown(run_dir, config, explicit)
    spent = spent_budget(run_dir.run_id, config, done)
    # A run killed in its budget's stop (no run_end) ends now, as it was ending; a budget
    # given on this command line that is spent already is refused with what was used.
    if spent is not None and (done.outcome is not None or spent[0] in explicit):
        raise Refused(spent[1])
    done = _fresh_step_budget(config, done)
    reopen, lost = _conversation(run_dir.run_id, config, done, record.session_id, env)
    if say is not None and not reopen:
        raise Refused(
            f"run {run_dir.run_id} never reached the agent: --say has nothing to answer"
            if lost is None
            else f"run {run_dir.run_id}'s agent never saved its conversation: "
            "--say has nothing to answer"
        )
    session = record.session_id if reopen and record.session_id else str(uuid.uuid4())
    return config, Part(run_dir.run_id, session, resumed=done, say=say, reopen=reopen, unsaved=lost)


def _conversation(
    run_id: str, config: RunConfig, done: Progress, session: str | None, env: Mapping[str, str]
) -> tuple[bool, str | None]:
    """Whether the run's conversation can be reopened, and the id of one the agent began
    but never saved a message of (killed in the second after its task was typed: reopening
    it would end the agent at once, on every resume). Either way but reopening, a new
    conversation starts, under a new id (the agent may keep the old one's file)."""
    if not done.typed or session is None:  # nothing was typed: no conversation at all
        return False, None
    from ptysup.agents import registry

    if registry.find(config.agent_cmd, config.agent).saved(session, env):
        return True, None
    return False, session


def _plan(run_dir: RunDir, path: str | None) -> Plan | None:
    """The run's own copy of its plan (named by its original path), if it has one."""
    if not run_dir.plan_file.is_file():
        return None
    from ptysup.cli import planoptions as options

    loaded = options.load(run_dir.plan_file)
    return dataclasses.replace(loaded, path=path) if path else loaded


def _check_unknown(run_dir: RunDir, config: RunConfig, explicit: frozenset[str]) -> None:
    """A run whose event log misses events used an unknown share of its budgets: they
    count as spent, so this resume must be given each of them anew."""
    lost = run_dir.incomplete()
    if lost is None:
        return
    budgets = {"max_iter": "--max-iter N"}
    if config.max_time is not None:
        budgets["max_time"] = "--max-time SECONDS"
    if config.max_cost is not None:
        budgets["max_cost"] = "--max-cost USD"
    missing = [flag for name, flag in budgets.items() if name not in explicit]
    if missing:
        raise Refused(
            f"run {run_dir.run_id}'s event log is incomplete ({lost}): what it used is "
            f"unknown and counts as spent; give the resume its budget: {' '.join(missing)}"
        )


def spent_budget(run_id: str, config: RunConfig, done: Progress) -> tuple[str, str] | None:
    """The first budget the run has used up, if any: its option's name and what it used."""
    # Each names what the run used: a budget given below it (--max-iter 5 for a run that
    # did 20) must not read as if the run had stopped there.
    if done.iterations >= config.max_iter:
        used = (
            f"used its {counted(config.max_iter, 'iteration')}"
            if done.iterations == config.max_iter
            else f"used {counted(done.iterations, 'iteration')}, "
            f"more than --max-iter {config.max_iter}"
        )
        return "max_iter", (
            f"run {run_id} {used}: raise the budget, e.g. --max-iter {done.iterations + 10}"
        )
    if config.max_time is not None and done.elapsed_s >= config.max_time:
        return "max_time", (
            f"run {run_id} used {done.elapsed_s:.0f}s of its time budget "
            f"({config.max_time:.0f}s): raise it with --max-time"
        )
    if config.max_cost is not None and done.cost_usd >= config.max_cost:
        return "max_cost", (
            f"run {run_id} used ${done.cost_usd:.4f} of its cost budget "
            f"(${config.max_cost:.4f}): raise it with --max-cost"
        )
    return None


def _fresh_step_budget(config: RunConfig, done: Progress) -> Progress:
    """A step that used up its own max_iter gets another round: a person chose to go on."""
    if config.plan is None or done.step is None:
        return done
    step = next((s for s in config.plan.steps if s.id == done.step), None)
    if step is not None and step.max_iter is not None and done.step_iterations >= step.max_iter:
        return dataclasses.replace(done, step_iterations=0)
    return done
