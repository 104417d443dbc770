"""One task as a run: the options it gets, and `ptysup batch run TASKS.yaml --index N|--id ID`,
which the batch's children and each pod of a Kubernetes Indexed Job both use.

In a pod, `--runs-dir DIR` (a folder of this index alone, on a volume that outlives the
pod) makes a retry go on with the task's run there instead of starting over, and
`--push REMOTE` makes the work leave the pod: committed on `ptysup/<id>` and pushed."""

from __future__ import annotations

import dataclasses
import signal
import sys
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ptysup.argspec import ArgSpec
from ptysup.batch.schema import Batch, BatchError, Task
from ptysup.config import RunConfig
from ptysup.exitcodes import ExitCode
from ptysup.store.rundir import RunDir, RunNotFound

if TYPE_CHECKING:  # git and the remote load only for --push
    from ptysup.batch.remote import Remote

USAGE = (
    "usage: ptysup batch run TASKS.yaml (--index N | --id ID) [--runs-dir DIR] "
    "[--push REMOTE] [run options]   (N is 0-based, as $JOB_COMPLETION_INDEX)"
)
ARGS = ArgSpec(
    options={"--index": "text", "--id": "text", "--runs-dir": "dir", "--push": "text"},
    args=("file",),
    run_options=True,
    unsaid=("--run-id",),  # for a batch's children only
)
# `batch run`'s own exit codes, beside the run's: both mean "try again" to a Kubernetes
# Job's podFailurePolicy. The agent killed with SIGKILL (the kernel's out-of-memory killer,
# most likely) ends the run agent_exited (4, final); a try with more memory, or on a less
# busy node, may well finish it, so it is said as a death by SIGKILL is (128+9).
AGENT_KILLED = 137
PUSH_FAILED = 75  # EX_TEMPFAIL: the work is committed in the pod but did not reach REMOTE


def load(path: Path) -> Batch:
    """TASKS.yaml checked against the run's own options (as a plan's are)."""
    from ptysup.batch import schema
    from ptysup.cli.planoptions import checks

    return schema.load(path, checks())


def task_args(task: Task, extra: Sequence[str] = ()) -> list[str]:
    """The run's command line for `task` (no program name): its options from the file,
    then `extra` (the batch's own command line, which wins), then the task text."""
    from ptysup.cli.options import option_params

    params = {p.name: p for p in option_params() if isinstance(p, click.Option) and p.name}
    args: list[str] = []
    if task.plan is not None:
        args += ["--plan", str(task.plan)]
    for name, value in task.options.items():
        args += _option(params[name], value)
    args += list(extra)
    if task.task is not None:
        args += ["--", task.task]  # a task starting with '-' is still the task
    return args


def _option(param: click.Option, value: Any) -> list[str]:
    if param.is_flag and param.secondary_opts:  # --wait / --no-wait
        return [param.opts[0] if value else param.secondary_opts[0]]
    if param.multiple:
        return [
            x
            for item in (value if isinstance(value, list) else [value])
            for x in (param.opts[0], _text(item))
        ]
    return [param.opts[0], _text(value)]


def _text(value: Any) -> str:
    """A YAML value as typed on a command line (YAML's `true` is not Python's `True`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def config_for(task: Task, extra: Sequence[str], env: Mapping[str, str]) -> RunConfig | int:
    """The task's RunConfig, as a run with its command line would resolve it (environment
    and config file included), or the exit code after printing the problem."""
    from ptysup.cli.commandline import parse_options

    parsed = parse_options(task_args(task, extra), env)
    return parsed if isinstance(parsed, int) else parsed[0]


def main(args: Sequence[str], env: Mapping[str, str]) -> int:
    """Entry point of `ptysup batch run`: one task, in this process, as a headless run."""
    from ptysup.cli import commandline as cli
    from ptysup.run import compose
    from ptysup.store.rundir import Part

    if not args:
        return cli._fail("batch run needs a TASKS.yaml and --index N or --id ID", ExitCode.USAGE)
    if args[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    try:
        picked, rest = _pick(list(args[1:]))
        batch = load(Path(args[0]))
        task = batch.find(**picked)
        runs_dir, rest = _take(rest, "--runs-dir")
        run_id, rest = _take(rest, "--run-id")
        remote, rest = _take(rest, "--push")
    except (BatchError, ValueError) as exc:
        return cli._fail(str(exc), ExitCode.USAGE)
    config = config_for(task, rest, env)
    if isinstance(config, int):
        return config
    if runs_dir is not None:  # a batch's child: its run directory stays with the batch
        config = dataclasses.replace(config, runs_dir=Path(runs_dir).resolve())
    target = None
    if remote is not None:
        checked = _remote_first(task, remote, config.cwd)
        if isinstance(checked, int):
            return checked
        target = checked
    from ptysup.run import app

    earlier = None
    if runs_dir is not None and run_id is None:  # a pod's folder: a retry goes on
        earlier = _last_run(config.runs_dir)
    if earlier is not None:
        code, run_dir = _go_on(earlier, rest, env), earlier
    else:
        part = Part(run_id or app.new_run_id(), str(uuid.uuid4()))
        code = compose.supervise(config, env, fail=cli._fail, preflight=cli.preflight, part=part)
        run_dir = RunDir.of(config, part.run_id)
    code = _killed(run_dir, code)
    if target is not None and remote is not None and code == ExitCode.COMPLETE:
        return _push(task, target, remote, config.cwd)
    return code


def _last_run(runs_dir: Path) -> RunDir | None:
    """The latest run in a task's own runs directory, if it has one."""
    from ptysup.store.rundir import run_dirs

    try:
        runs = [r for r in run_dirs(runs_dir) if r.record_file.is_file()]
    except RunNotFound:
        return None
    return runs[-1] if runs else None


def _go_on(run_dir: RunDir, rest: Sequence[str], env: Mapping[str, str]) -> int:
    """A retry of the task: its run resumed if it was interrupted; if it ended, its exit
    code again (a completed run is not run twice)."""
    from ptysup.batch.state import ended
    from ptysup.cli import resume

    done = ended(run_dir.path)
    if done is not None:
        print(f"ptysup: run {run_dir.run_id} already ended ({done[0]})", file=sys.stderr)
        return done[1]
    return resume.main([str(run_dir.path), *rest], env)


def _killed(run_dir: RunDir, code: int) -> int:
    """AGENT_KILLED for a run whose agent died of SIGKILL, else `code`."""
    from ptysup.store.rundir import read_events

    if code != ExitCode.AGENT:
        return code
    try:
        ends = [e for e in read_events(run_dir.events_file()) if e.get("event") == "run_end"]
    except (RunNotFound, OSError):
        return code
    reason = str(ends[-1].get("reason") or "") if ends else ""
    return AGENT_KILLED if reason.endswith(f"signal {int(signal.SIGKILL)}") else code


def _remote_first(task: Task, given: str, cwd: Path) -> Remote | int:
    """--push's remote, read before the task runs (the agent cannot point it elsewhere),
    and its branch checked: a branch of the task's name already there that is not this
    checkout's own (pushed by an earlier try of this pod) is another batch's work, which
    running the task again would only fail to push over (exit 2: nothing is started);
    a remote that cannot be reached is PUSH_FAILED (a pod's retry tries again)."""
    from ptysup.batch import remote, worktrees

    name = worktrees.branch(task.id)
    try:
        top = worktrees.repo_root(cwd)
        if top is None:
            raise worktrees.GitError(f"{cwd} is not in a git repository")
        target = remote.resolve(top, given)
    except worktrees.GitError as exc:
        print(f"ptysup: --push {given}: {exc}", file=sys.stderr)
        return int(ExitCode.USAGE)
    try:
        there = target.head(name, top)
    except worktrees.GitError as exc:
        print(f"ptysup: --push {given}: cannot reach it: {exc}", file=sys.stderr)
        return PUSH_FAILED
    ours = worktrees.git(["rev-parse", "--verify", "--quiet", name], top, check=False).strip()
    if there is not None and there != ours:
        print(
            f"ptysup: --push {given}: branch {name} is already there (an earlier batch's "
            f"work?): delete it there (git push {given} --delete {name}) or rename the task",
            file=sys.stderr,
        )
        return int(ExitCode.USAGE)
    return target


def _push(task: Task, target: Remote, given: str, cwd: Path) -> int:
    """Commit the task's work on ptysup/<id> and push it to the remote: PUSH_FAILED if it
    does not get there (the commit stays, a retry pushes it)."""
    from ptysup.batch import worktrees

    try:
        top = worktrees.repo_root(cwd)
        if top is None:
            raise worktrees.GitError(f"{cwd} is not in a git repository")
        commit = worktrees.commit_on_branch(top, task.id, f"ptysup batch: {task.id}")
        target.push(top, worktrees.branch(task.id))
    except worktrees.GitError as exc:
        print(f"ptysup: --push {given}: {exc}", file=sys.stderr)
        return PUSH_FAILED
    print(f"ptysup: pushed {worktrees.branch(task.id)} ({commit[:12]}) to {given}")
    return int(ExitCode.COMPLETE)


def _pick(args: list[str]) -> tuple[dict[str, Any], list[str]]:
    index, rest = _take(args, "--index")
    task_id, rest = _take(rest, "--id")
    if index is not None and task_id is not None:
        raise ValueError("batch run takes --index N or --id ID, not both")
    if index is None and task_id is None:
        raise ValueError(f"batch run needs one of --index N or --id ID; {USAGE}")
    if index is not None:
        if not index.isdigit():
            raise ValueError(f"--index must be a whole number from 0, not {index!r}")
        return {"index": int(index)}, rest
    return {"task_id": task_id}, rest


def _take(args: list[str], name: str) -> tuple[str | None, list[str]]:
    """The value of `name` (`--name V` or `--name=V`) and the other arguments."""
    value = None
    rest: list[str] = []
    it = iter(args)
    for arg in it:
        if arg == "--":
            rest += [arg, *it]
            break
        if arg == name:
            value = next(it, None)
            if value is None:
                raise ValueError(f"{name} needs a value")
        elif arg.startswith(f"{name}="):
            value = arg.split("=", 1)[1]
        else:
            rest.append(arg)
    return value, rest


def child_argv(
    tasks_file: Path, task: Task, run_id: str, runs_dir: Path, extra: Sequence[str]
) -> list[str]:
    """The command line of a batch's child process for `task`."""
    return [
        sys.executable,
        "-m",
        "ptysup",
        "batch",
        "run",
        str(tasks_file.resolve()),
        "--id",
        task.id,
        "--run-id",
        run_id,
        "--runs-dir",
        str(runs_dir.resolve()),
        *extra,
    ]


def resume_argv(run_dir: Path, extra: Sequence[str]) -> list[str]:
    """The command line of a batch's child that goes on with an interrupted run of its
    task (`ptysup resume`: the same run, its conversation too)."""
    return [sys.executable, "-m", "ptysup", "resume", str(run_dir.resolve()), *extra]
