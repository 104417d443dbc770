"""`ptysup batch TASKS.yaml`, `ptysup batch plan` and `ptysup batch run`: options checked,
every task's options resolved before anything starts, then the scheduler, the display and
the summary wired together. Exit: 0 every task completed, 1 some task did not, 2 bad
input (nothing started), 128+N stopped by signal N."""

from __future__ import annotations

import contextlib
import io
import json
import signal
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TextIO

from ptysup.argspec import ArgSpec
from ptysup.batch import concurrency, state, summary, taskrun
from ptysup.batch.livestate import LiveState
from ptysup.batch.result import QUEUED, TaskResult
from ptysup.batch.scheduler import (
    Isolation,
    Scheduler,
    signal_group,
    spawner,
    stop_signals,
)
from ptysup.batch.schema import Batch, BatchError, Task
from ptysup.batch.state import BatchState, TaskState
from ptysup.batch.worktrees import GitError, Worktrees, branch, repo_root
from ptysup.config import RunConfig
from ptysup.exitcodes import ExitCode
from ptysup.store import pidlock
from ptysup.store.rundir import LOCK_FILE, RUNS_DIR, remove_left_temps

USAGE = """\
usage: ptysup batch TASKS.yaml [--jobs N] [--isolate worktree|none] [--fresh [--discard]]
                    [--on-complete commit|pr] [--summary-json FILE] [run options]
       ptysup batch plan TASKS.yaml [--format json|github-matrix|k8s]
       ptysup batch run TASKS.yaml (--index N | --id ID) [--runs-dir DIR] [--push REMOTE]
                        [run options]
Runs every task of TASKS.yaml as its own headless run, N at a time, each on its own
branch ptysup/<id> in a worktree under .ptysup/worktrees/ (never merged). Run again, it
finishes what an earlier batch of the file left (--fresh: starts over, its worktrees and
branches removed, but never one holding work unless --discard says to delete that too).
Exit: 0 every task completed, 1 some did not, 2 bad input, 128+N stopped by signal N."""

ISOLATE = ("worktree", "none")
ON_COMPLETE = ("commit", "pr")
FORMATS = ("json", "github-matrix", "k8s")
JOB_NAME = "ptysup-batch"  # deploy/k8s/job.yaml's Job, which `--format k8s` patches
# Each task's run keeps these in its own run directory; one path for every task would clash.
_SHARED_PATHS = ("--log-file", "--record")
ARGS = ArgSpec(
    flags=("--fresh", "--discard"),
    options={
        "--jobs": "text",
        "--isolate": ISOLATE,
        "--on-complete": ON_COMPLETE,
        "--summary-json": "file",
    },
    args=("file",),
    run_options=True,
    not_run_options=frozenset(_SHARED_PATHS),
    subcommands={
        "plan": ArgSpec(options={"--format": FORMATS}, args=("file",)),
        "run": taskrun.ARGS,
    },
)


class UsageError(Exception):
    """Bad input to the batch; the message is one line (exit 2)."""


def main(args: Sequence[str], env: Mapping[str, str]) -> int:
    """Entry point of `ptysup batch`."""
    head = args[: args.index("--")] if "--" in args else args
    if not args:
        return _fail("batch needs a TASKS.yaml (see: ptysup batch --help)")
    if "-h" in head or "--help" in head:
        print(USAGE)
        return 0
    if args[0] == "plan":
        return plan_main(args[1:], sys.stdout, env)
    if args[0] == "run":
        return taskrun.main(args[1:], env)
    try:
        options = parse(args)
        prepared = prepare(options, env, Path.cwd())
    except (UsageError, BatchError, GitError) as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:  # Ctrl-C while checking: nothing was started
        return ExitCode.for_signal(signal.SIGINT)
    return run(prepared, env, sys.stdout)


def _fail(message: str) -> int:
    print(f"ptysup: {' '.join(message.split())}", file=sys.stderr)
    return int(ExitCode.USAGE)


@dataclass(frozen=True)
class Options:
    """The batch's own options; `extra` are run options for every task."""

    tasks_file: Path
    jobs: int | None = None
    isolate: str | None = None  # None: worktree inside a git repository, else none
    on_complete: str = "commit"
    summary_json: Path | None = None
    extra: tuple[str, ...] = ()
    fresh: bool = False  # start over: the earlier batch's worktrees and branches removed
    discard: bool = False  # ...those holding work (commits, uncommitted files) too


def parse(args: Sequence[str]) -> Options:
    """The command line of `ptysup batch TASKS.yaml ...`."""
    if args[0].startswith("-"):
        raise UsageError(f"batch: TASKS.yaml comes first; {USAGE.splitlines()[0]}")
    values: dict[str, str] = {}
    extra: list[str] = []
    flags: set[str] = set()
    it = iter(args[1:])
    for arg in it:
        name, eq, inline = arg.partition("=")
        if arg == "--":
            extra += [arg, *it]
        elif arg in ARGS.flags:
            flags.add(arg)
        elif name in ARGS.options:
            value = inline if eq else next(it, None)
            if value is None:
                raise UsageError(f"{name} needs a value")
            values[name] = value
        elif name in _SHARED_PATHS:
            raise UsageError(
                f"{name} cannot be given to a batch: each run logs to its own run directory"
            )
        elif name == "--plan":
            raise UsageError(
                "--plan cannot be given to a batch: give a task its plan (plan: in TASKS.yaml)"
            )
        else:
            extra.append(arg)
    jobs = values.get("--jobs")
    if jobs is not None and (not jobs.isdigit() or int(jobs) < 1):
        raise UsageError(f"--jobs must be a whole number of at least 1, not {jobs!r}")
    for name, allowed in (("--isolate", ISOLATE), ("--on-complete", ON_COMPLETE)):
        if name in values and values[name] not in allowed:
            raise UsageError(f"{name} must be {' or '.join(allowed)}, not {values[name]!r}")
    if "--discard" in flags and "--fresh" not in flags:
        raise UsageError("--discard goes with --fresh (what starting over may delete)")
    summary_json = values.get("--summary-json")
    return Options(
        tasks_file=Path(args[0]),
        jobs=int(jobs) if jobs is not None else None,
        isolate=values.get("--isolate"),
        on_complete=values.get("--on-complete", "commit"),
        summary_json=Path(summary_json) if summary_json else None,
        extra=tuple(extra),
        fresh="--fresh" in flags,
        discard="--discard" in flags,
    )


WARNING = "ptysup: warning:"


def load(path: Path, extra: Sequence[str], env: Mapping[str, str]) -> LoadedBatch:
    """The one loader of `batch` and `batch plan`: TASKS.yaml checked, then every task's
    run options resolved as its run will resolve them (environment, config file, the plan's
    file); BatchError naming `FILE:LINE` and the task for the first a run would refuse."""
    batch = taskrun.load(path)
    warnings: dict[str, None] = {}  # each task's run would warn alike: said once, here
    configs = []
    for task in batch.tasks:
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            config = taskrun.config_for(task, extra, env)
        lines = err.getvalue().strip().splitlines()
        warnings.update(dict.fromkeys(w for w in lines if w.startswith(WARNING)))
        if isinstance(config, int):
            said = [line for line in lines if not line.startswith(WARNING)]
            problem = "".join(said[-1:]).removeprefix("ptysup:").strip()
            raise BatchError(f"{_where(batch, task)}: {problem or f'exit {config}'}")
        configs.append(config)
    for warning in warnings:
        print(warning, file=sys.stderr)
    return LoadedBatch(batch, tuple(configs))


@dataclass(frozen=True)
class LoadedBatch:
    """A checked TASKS.yaml and each task's resolved run options, in the same order."""

    batch: Batch
    configs: tuple[RunConfig, ...]


def _where(batch: Batch, task: Task) -> str:
    return f"{batch.path}:{task.line or 1}: task {task.id!r}"


def check_commands(loaded: LoadedBatch, env: Mapping[str, str]) -> None:
    """A verify or notify command that is not on this machine is bad input (every try
    would fail alike); a missing agent or supervisor is the task's outcome (exit 4, 5) as
    in a run. Not `batch plan`'s: it runs where the tasks do not (a CI matrix's first job)."""
    from ptysup.cli.commandline import preflight

    for task, config in zip(loaded.batch.tasks, loaded.configs, strict=True):
        missing = preflight(config, env)
        if missing is not None and missing[1] == ExitCode.USAGE:
            raise UsageError(f"{_where(loaded.batch, task)}: {missing[0]}")


@dataclass(frozen=True)
class Prepared:
    """Everything checked: the batch is ready to start."""

    options: Options
    batch: Batch
    jobs: int
    home: Path
    isolation: Isolation | None
    pr_base: str | None = None  # --on-complete pr: the branch pull requests go into
    prior: BatchState | None = None  # what an earlier batch of this file left


def prepare(options: Options, env: Mapping[str, str], home: Path) -> Prepared:
    """Load and check everything; nothing is created before this returns."""
    from ptysup.batch import pullrequest
    from ptysup.run import outputs

    loaded = load(options.tasks_file, options.extra, env)
    check_commands(loaded, env)
    batch = loaded.batch
    jobs = concurrency.jobs(options.jobs or batch.jobs, len(batch.tasks))
    if options.summary_json is not None:
        problem = outputs.problem(options.summary_json)
        if problem is not None:
            raise UsageError(f"cannot write --summary-json {options.summary_json}: {problem}")
    prior = _prior(options.tasks_file, home, options.fresh)
    root = repo_root(home)
    isolate = options.isolate or ("worktree" if root is not None else "none")
    isolation = None
    if isolate == "worktree":
        if root is None:
            raise UsageError("--isolate worktree needs a git repository (or --isolate none)")
        trees = Worktrees(home)
        base = trees.pin_base()
        if prior is not None and options.fresh:
            _check_fresh(prior, trees, options.discard)
        elif prior is not None and prior.base is not None:
            base = prior.base  # the branches it made start there: so do the rest
        for task in batch.tasks:
            if prior is not None and prior.task(task.id) is not None:
                continue  # the earlier batch's own branch: finished, or removed by --fresh
            conflict = trees.conflict(task.id)
            if conflict is not None:
                raise UsageError(f"task {task.id!r}: {conflict}")
        subdir = home.resolve().relative_to(root.resolve())
        isolation = Isolation(trees, base, subdir)
    pr_base = None
    if options.on_complete == "pr":
        if isolation is None:
            raise UsageError("--on-complete pr needs --isolate worktree (a branch per task)")
        pr_base = pullrequest.preflight(home, env)
    return Prepared(options, batch, jobs, home, isolation, pr_base, prior)


def _check_fresh(prior: BatchState, trees: Worktrees, discard: bool) -> None:
    """UsageError, before anything is touched, when starting over would delete work an
    earlier task's branch or worktree holds (commits, uncommitted files) and --discard
    was not given."""
    held = []
    for before in prior.tasks:
        if before.branch is None:
            continue
        work = trees.work_in(before.id, prior.base or "HEAD")
        if work.commits or work.uncommitted:
            held.append(f"{branch(before.id)} ({work})")
    if held and not discard:
        raise UsageError(
            f"--fresh would delete the work of the earlier batch: {', '.join(held)}; keep "
            "it first (git branch -m, commit or copy it), or delete it: --fresh --discard"
        )


def _prior(tasks_file: Path, home: Path, fresh: bool) -> BatchState | None:
    """The state an earlier batch of `tasks_file` left; UsageError while it still runs,
    or if it cannot be read (but for --fresh, which starts over anyway)."""
    where = state.folder(home / RUNS_DIR, tasks_file)
    pid = state.live_pid(where)
    if pid is not None:
        raise UsageError(f"a batch of {tasks_file} is already running (pid {pid})")
    try:
        return state.read(where / state.STATE_FILE)
    except state.StateError as exc:
        if fresh:
            return None
        raise UsageError(f"{exc} (--fresh starts the batch over)") from None


def run(prepared: Prepared, env: Mapping[str, str], out: TextIO) -> int:
    """Run the batch: display while it runs, the summary at the end; the exit code."""
    from ptysup.run import outputs

    runs_dir = prepared.home / RUNS_DIR
    runs_dir.mkdir(parents=True, exist_ok=True)
    outputs.ignore_in_git(runs_dir.parent)
    tasks_file = prepared.options.tasks_file
    where = state.folder(runs_dir, tasks_file)
    try:
        with pidlock.hold(where / state.LOCK_FILE):
            remove_left_temps(where)  # of a batch killed while it wrote its state
            return _run_locked(prepared, env, out, runs_dir, where)
    except pidlock.Taken as exc:
        return _fail(f"a batch of {tasks_file} is already running ({exc})")


def _run_locked(
    prepared: Prepared, env: Mapping[str, str], out: TextIO, runs_dir: Path, where: Path
) -> int:
    from ptysup.batch import display, pullrequest
    from ptysup.run import app

    tasks_file = prepared.options.tasks_file
    prior = prepared.prior
    if prior is not None and prepared.options.fresh:
        _clear(prior, prepared, where)
        prior = None
    results = [TaskResult(id=t.id, run_id="", run_dir=runs_dir) for t in prepared.batch.tasks]
    known = {}
    for task, result in zip(prepared.batch.tasks, results, strict=True):
        before = prior.task(task.id) if prior is not None else None
        if before is None:
            continue
        known[task.id] = before
        if before.kept:
            _keep(result, before, runs_dir, prepared.isolation)
    extra = (*_config_file(prepared.options.extra, env, prepared.home), *prepared.options.extra)

    def argv(task: Task, result: TaskResult) -> list[str]:
        return taskrun.child_argv(tasks_file, task, result.run_id, runs_dir, extra)

    def resume_argv(task: Task, result: TaskResult) -> list[str]:
        # The run keeps its own config file and options; the batch's command line on top.
        return taskrun.resume_argv(result.run_dir, prepared.options.extra)

    base = prepared.isolation.base if prepared.isolation is not None else None
    recorder = state.Recorder(where / state.STATE_FILE, tasks_file, base, time.time())

    on_commit = None
    if prepared.pr_base is not None:
        on_commit = pullrequest.opener(prepared.pr_base, prepared.home, env)
    scheduler = Scheduler(
        prepared.batch.tasks,
        results,
        jobs=prepared.jobs,
        argv=argv,
        home=prepared.home,
        isolation=prepared.isolation,
        spawn=spawner(env),
        runs_dir=runs_dir,
        new_run_id=lambda: str(app.new_run_id()),
        on_commit=on_commit,
        prior=known,
        resume_argv=resume_argv,
        on_change=recorder.save,
    )
    recorder.save(results)
    shown = display.for_stream(out)
    live = LiveState()
    with _stop_signals() as pending:
        scheduler.start()
        while not scheduler.done.wait(0.5):
            while pending:
                scheduler.stop(pending.pop(0))
            shown.update(live.rows(results))
        shown.update(live.rows(results))
    shown.close()
    recorder.save(results, ended=True)
    code = summary.exit_code(results, scheduler.stopped_by)
    out.write(summary.table(results))
    out.flush()
    try:
        if prepared.options.summary_json is not None:
            data = summary.to_json(results, code=code, base=base, jobs=prepared.jobs)
            summary.write_json(prepared.options.summary_json, data)
        summary.append_step_summary(summary.markdown(results, code, base), env)
    except OSError as exc:
        print(f"ptysup: cannot write the summary: {exc.strerror or exc}", file=sys.stderr)
    return code


def _config_file(extra: Sequence[str], env: Mapping[str, str], home: Path) -> list[str]:
    """`--config FILE` for the children: the config file that applies where the batch was
    started (a task starts in its worktree, which lacks an uncommitted .ptysup.yaml)."""
    from ptysup.cli import configfile

    given = any(a == "--config" or a.startswith("--config=") for a in extra)
    if given or env.get("PTYSUP_CONFIG"):
        return []
    found = configfile.find(home)
    return ["--config", str(found.resolve())] if found is not None else []


def _keep(result: TaskResult, before: TaskState, runs_dir: Path, iso: Isolation | None) -> None:
    """A task the earlier batch ended for good: its result as it was, not run again."""
    from ptysup.batch.worktrees import uncommitted
    from ptysup.store.listing import describe
    from ptysup.store.rundir import RunDir

    result.outcome = before.outcome
    result.state = before.outcome or QUEUED
    result.exit_code, result.commit = before.exit_code, before.commit
    result.branch, result.diff_stat, result.error = before.branch, before.diff_stat, before.error
    result.worktree = Path(before.worktree) if before.worktree else None
    if before.run_id:
        result.run_id, result.run_dir = before.run_id, runs_dir / before.run_id
        result.extra = describe(RunDir(result.run_dir))
    if iso is not None and result.worktree is not None and not result.completed:
        with contextlib.suppress(GitError, OSError):
            result.uncommitted = len(uncommitted(result.worktree))


def _clear(prior: BatchState, prepared: Prepared, where: Path) -> None:
    """--fresh: end the earlier batch's orphaned runs, remove its worktrees and branches
    (its run directories stay: they are its history), forget its state; each said on
    stderr, with the work that went with it (--discard)."""
    from ptysup.store.rundir import RunDir

    runs_dir = prepared.home / RUNS_DIR
    for before in prior.tasks:
        if before.run_id:
            run_dir = RunDir(runs_dir / before.run_id)
            pid = run_dir.holder()
            if pid is not None:
                _say(f"ended run {before.run_id} of task {before.id!r} (still running)")
                signal_group(pid, signal.SIGTERM)
                pidlock.wait(run_dir.path / LOCK_FILE)
        if prepared.isolation is not None and before.branch is not None:
            trees = prepared.isolation.trees
            work = trees.work_in(before.id, prior.base or "HEAD")
            trees.remove(before.id)
            _say(f"removed {branch(before.id)} and its worktree ({work})")
    (where / state.STATE_FILE).unlink(missing_ok=True)


def _say(what: str) -> None:
    print(f"ptysup: --fresh: {what}", file=sys.stderr)


@contextlib.contextmanager
def _stop_signals() -> Iterator[list[int]]:
    """While the batch runs, a stop signal is only queued (the handler does nothing more);
    the main loop passes it on to every run."""
    pending: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        pending.append(signum)

    saved = {s: signal.signal(s, handler) for s in stop_signals()}
    try:
        yield pending
    finally:
        for s, previous in saved.items():
            signal.signal(s, previous)


def k8s_patch(batch: Batch, name: str) -> str:
    """A kustomize patch sizing the Job for `batch`: one completion per task (pod i runs
    task i), `jobs:` pods at once (all of them without it). Made, never kept by hand."""
    completions = len(batch.tasks)
    parallelism = min(batch.jobs or completions, completions)
    return (
        f"# Made by `ptysup batch plan {name} --format k8s` ({completions} task(s)):\n"
        "# make it again whenever the tasks change.\n"
        "apiVersion: batch/v1\n"
        "kind: Job\n"
        "metadata:\n"
        f"  name: {JOB_NAME}\n"
        "spec:\n"
        f"  completions: {completions}\n"
        f"  parallelism: {parallelism}\n"
    )


def plan_main(args: Sequence[str], out: TextIO, env: Mapping[str, str]) -> int:
    """`ptysup batch plan TASKS.yaml [--format json|github-matrix|k8s]`."""
    if not args:
        return _fail("batch plan needs a TASKS.yaml (see: ptysup batch --help)")
    if args[0] in ("-h", "--help"):
        print(f"usage: {USAGE.splitlines()[2].strip()}", file=out)
        return 0
    fmt = "json"
    rest = list(args[1:])
    while rest:
        arg = rest.pop(0)
        if arg == "--format" and rest:
            fmt = rest.pop(0)
        elif arg.startswith("--format="):
            fmt = arg.split("=", 1)[1]
        else:
            return _fail(f"batch plan: unknown argument {arg!r}")
    if fmt not in FORMATS:
        return _fail(f"--format must be {' or '.join(FORMATS)}, not {fmt!r}")
    try:
        batch = load(Path(args[0]), (), env).batch
    except BatchError as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        return ExitCode.for_signal(signal.SIGINT)
    if fmt == "github-matrix":  # ids only: task text never reaches a workflow expression
        out.write(json.dumps({"include": [{"id": t.id} for t in batch.tasks]}) + "\n")
    elif fmt == "k8s":
        out.write(k8s_patch(batch, Path(args[0]).name))
    else:
        from ptysup.redact import Redactor, redact_strings

        # Printed like every line ptysup prints: secrets redacted (the file keeps them).
        tasks = [redact_strings(t.to_json(), Redactor()) for t in batch.tasks]
        out.write(json.dumps({"jobs": batch.jobs, "tasks": tasks}, indent=2, ensure_ascii=False))
        out.write("\n")
    return 0
