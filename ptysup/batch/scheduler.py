"""Runs a batch's tasks, at most `jobs` at once, each as its own headless ptysup process.

Each worker thread takes the next task: makes its worktree (if isolated) and locks it,
starts the child in it (its own session, stdin not a terminal, output to the run
directory's output.log), waits, unlocks, and commits the work of a task that completed.
A stop (a signal) sends the signal on to every running child, which ends its run with
run_end as a signalled run does; tasks not started by then are reported as such.

A task an earlier batch of the same file left unfinished (`prior`, from ptysup.batch.state)
goes on where it is: in its worktree; an orphaned run of that batch (alive, its lock held)
is waited for; an interrupted run is resumed (`ptysup resume`); a run that ended complete
has its work committed.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ptysup.batch.result import KILLED, NOT_STARTED, ORPHAN, STARTING, TaskResult
from ptysup.batch.schema import Task
from ptysup.batch.state import TaskState
from ptysup.batch.state import ended as state_ended
from ptysup.batch.worktrees import GitError, Worktree, Worktrees, uncommitted
from ptysup.exitcodes import ExitCode
from ptysup.store import pidlock
from ptysup.store.listing import describe
from ptysup.store.rundir import LOCK_FILE, RUN_FILE, RunDir

OUTPUT_LOG = "output.log"  # the child's own stdout and stderr, in its run directory


@dataclass(frozen=True)
class Isolation:
    """Worktrees for every task, from one base commit; `subdir` is where in the repository
    the batch was started, so each task starts in the same folder of its worktree."""

    trees: Worktrees
    base: str
    subdir: Path = Path(".")


Spawn = Callable[[Sequence[str], Path, Path], "subprocess.Popen[bytes]"]
# The batch writes one step summary for all its tasks: a run's own would repeat each task.
_NOT_FOR_CHILDREN = ("GITHUB_STEP_SUMMARY",)
Finish = Callable[[Task, TaskResult, Worktree], None]  # e.g. open a pull request
Argv = Callable[[Task, TaskResult], list[str]]


def spawner(env: Mapping[str, str]) -> Spawn:
    """Starts one task's ptysup: its own session (the batch forwards signals itself), no
    terminal on stdin, stdout and stderr to `output`, the batch's environment."""
    child_env = {k: v for k, v in env.items() if k not in _NOT_FOR_CHILDREN}

    def spawn(argv: Sequence[str], cwd: Path, output: Path) -> subprocess.Popen[bytes]:
        output.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(output, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)  # as event logs
        with open(fd, "ab") as out:
            return subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=child_env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    return spawn


class Scheduler:
    """The tasks of one batch, run `jobs` at a time."""

    def __init__(
        self,
        tasks: Sequence[Task],
        results: Sequence[TaskResult],
        *,
        jobs: int,
        argv: Argv,
        home: Path,
        isolation: Isolation | None,
        spawn: Spawn,
        runs_dir: Path,
        new_run_id: Callable[[], str],
        on_commit: Finish | None = None,
        prior: Mapping[str, TaskState] | None = None,
        resume_argv: Argv | None = None,
        on_change: Callable[[Sequence[TaskResult]], None] | None = None,
    ) -> None:
        self.tasks = list(tasks)
        self.results = list(results)
        self._jobs = jobs
        self._argv = argv
        self._home = home
        self._isolation = isolation
        self._spawn = spawn
        self._on_commit = on_commit
        self._runs_dir = runs_dir
        self._new_run_id = new_run_id
        self._taken: set[str] = set()
        self._prior = dict(prior or {})
        self._resume_argv = resume_argv or argv
        self._on_change = on_change
        self._todo: queue.Queue[int] = queue.Queue()
        self._lock = threading.Lock()
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        self._orphans: dict[int, int] = {}  # id(result) → pid of a crashed batch's run
        self._stopping: int | None = None
        self._threads: list[threading.Thread] = []
        self.done = threading.Event()

    def start(self) -> None:
        """Start the workers; `done` is set when every task has ended or was skipped."""
        for i, result in enumerate(self.results):
            if result.outcome is None:  # an earlier batch's ended task is kept as it is
                self._todo.put(i)
        for _ in range(self._jobs):
            t = threading.Thread(target=self._work, name="ptysup-batch-worker", daemon=True)
            t.start()
            self._threads.append(t)
        threading.Thread(target=self._join, name="ptysup-batch-join", daemon=True).start()

    def _join(self) -> None:
        for t in self._threads:
            t.join()
        self.done.set()

    @property
    def stopped_by(self) -> int | None:
        """The signal that stopped the batch, if one did."""
        return self._stopping

    def stop(self, signum: int) -> None:
        """Start no more tasks and pass `signum` on to every running child (and to every
        orphaned run waited for: it was a child of the batch before)."""
        with self._lock:
            self._stopping = signum
            pids = [c.pid for c in self._children.values()] + list(self._orphans.values())
        for pid in pids:
            signal_group(pid, signum)

    def changed(self) -> None:
        """Tell on_change (the state file) that a task moved on."""
        if self._on_change is not None:
            with self._lock:
                self._on_change(self.results)

    def _work(self) -> None:
        while True:
            try:
                i = self._todo.get_nowait()
            except queue.Empty:
                return
            task, result = self.tasks[i], self.results[i]
            if self._stopping is not None:
                self._skip(result, f"not started: the batch got signal {self._stopping}")
                continue
            try:
                self._run(task, result)
            except (GitError, OSError) as exc:
                self._failed(result, " ".join(str(exc).split()))
            except Exception as exc:  # a bug here must not lose the task from the summary
                self._failed(result, f"internal error: {type(exc).__name__}: {exc}")
            self.changed()

    def _failed(self, result: TaskResult, why: str) -> None:
        result.error = why
        if result.outcome is None:
            result.outcome = NOT_STARTED if result.exit_code is None else f"exit {result.exit_code}"
        result.state = result.outcome

    def _skip(self, result: TaskResult, why: str) -> None:
        result.outcome = result.state = NOT_STARTED
        result.error = why

    def _run(self, task: Task, result: TaskResult) -> None:
        result.state = STARTING
        cwd, tree = self._home, None
        iso = self._isolation
        prior = self._prior.get(task.id)
        if iso is not None:
            if prior is not None and prior.branch is not None:
                tree = iso.trees.reuse(task.id, iso.base)
            else:
                tree = iso.trees.create(task.id, iso.base)
            result.branch, result.worktree = tree.branch, tree.path
            cwd = tree.path / iso.subdir
            iso.trees.lock(tree, f"ptysup batch pid {os.getpid()} task {task.id}")
        try:
            code = self._go_on(task, result, cwd, prior)
        finally:
            if iso is not None and tree is not None:
                iso.trees.unlock(tree)
        if code is None:
            return
        result.exit_code = code
        if iso is not None and tree is not None:
            if result.completed:
                self._commit(task, result, iso, tree)
            else:  # its work stays where it is, for a person to look at
                result.uncommitted = len(uncommitted(tree.path))

    def _go_on(
        self, task: Task, result: TaskResult, cwd: Path, prior: TaskState | None
    ) -> int | None:
        """Run the task, or go on with the run an earlier batch left: the exit code."""
        run_id = prior.run_id if prior is not None else None
        if not run_id or not (self._runs_dir / run_id / RUN_FILE).is_file():
            return self._child(task, result, cwd, self._argv)  # none, or it died unborn
        run_dir = self._runs_dir / run_id
        result.run_id, result.run_dir = run_id, run_dir
        self._wait_orphan(result)
        ended = state_ended(run_dir)
        if ended is None:  # interrupted: the same run goes on, its conversation too
            return self._child(task, result, cwd, self._resume_argv)
        result.outcome, code = ended
        result.state = result.outcome
        result.extra = describe(RunDir(run_dir))
        return code

    def _wait_orphan(self, result: TaskResult) -> None:
        """Wait for the run's live process (an orphan of a crashed batch) to end."""
        pid = RunDir(result.run_dir).holder()
        if pid is None:
            return
        with self._lock:
            self._orphans[id(result)] = pid
            stopping = self._stopping
        result.state = ORPHAN
        self.changed()
        if stopping is not None:
            signal_group(pid, stopping)
        try:
            pidlock.wait(result.run_dir / LOCK_FILE)
        finally:
            with self._lock:
                self._orphans.pop(id(result), None)

    def _child(self, task: Task, result: TaskResult, cwd: Path, argv: Argv) -> int | None:
        with self._lock:
            if self._stopping is not None:
                self._skip(result, f"not started: the batch got signal {self._stopping}")
                return None
            if not result.run_id:  # minted as the task starts: a batch's runs sort by start
                run_id = self._new_run_id()
                while run_id in self._taken or (self._runs_dir / run_id).exists():
                    run_id = self._new_run_id()  # ids made in the same second
                self._taken.add(run_id)
                result.run_id, result.run_dir = run_id, self._runs_dir / run_id
            child = self._spawn(argv(task, result), cwd, result.run_dir / OUTPUT_LOG)
            self._children[id(result)] = child
            if self._on_change is not None:
                self._on_change(self.results)
        try:
            code = child.wait()
        finally:
            with self._lock:
                self._children.pop(id(result), None)
        row = describe(RunDir(result.run_dir))
        result.extra = row
        if row.get("outcome"):
            result.outcome = str(row["outcome"])
            result.state = str(row.get("state") or result.outcome)
            return code
        # No outcome of its own: the run never got to its run_end (or never began).
        result.outcome = result.state = KILLED if code < 0 else f"exit {code}"
        began = (result.run_dir / RUN_FILE).is_file()
        how = f"killed by {_signal_name(-code)}" if code < 0 else f"exited {code}"
        when = "before its run ended" if began else "before its run began"
        result.error = f"{how} {when}: running the batch again goes on with it"
        return ExitCode.for_signal(-code) if code < 0 else code

    def _commit(self, task: Task, result: TaskResult, iso: Isolation, tree: Worktree) -> None:
        what = task.task if task.task is not None else f"plan {task.plan}"
        message = (
            f"ptysup batch: {task.id}\n\n{what.strip()}\n\n"
            f"Task: {task.id}\nRun: {result.run_id}\nOutcome: {result.outcome}\n"
        )
        result.commit = iso.trees.commit(tree, message)
        result.diff_stat = iso.trees.diff_stat(iso.base, tree.branch)
        if self._on_commit is not None:
            self._on_commit(task, result, tree)


def _signal_name(signum: int) -> str:
    """SIGTERM for 15: as a person reads a signal."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def signal_group(pid: int, signum: int) -> None:
    """Signal the process group a run leads (started with its own session); a lock whose
    pid could not be read (-1) names nobody."""
    if pid > 0:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signum)


def stop_signals() -> tuple[signal.Signals, ...]:
    """The signals that stop a batch (and are passed on to its runs)."""
    return (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
