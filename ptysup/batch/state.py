"""A batch's own state, so that running the same TASKS.yaml again finishes it after a crash.

One file per TASKS.yaml in the run store, `.ptysup/runs/batches/<name>-<hash>/state.json`,
rewritten atomically at every change of a task (queued, running in run R on branch B,
ended with outcome O, committed as C); next to it `lock`, held by the live batch for its
whole life (flock: a `kill -9`ed batch holds nothing, so a later one knows it crashed).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ptysup.batch.result import TaskResult
from ptysup.exitcodes import Outcome
from ptysup.store import pidlock, readback
from ptysup.store.rundir import write_atomic

BATCHES_DIR = "batches"  # in the runs directory; not a run (no run.json, no events.jsonl)
STATE_FILE = "state.json"
LOCK_FILE = "lock"
QUEUED, RUNNING, ENDED = "queued", "running", "ended"
# Outcomes a rerun goes on from (the run resumed): it was cut short, not decided. Killed
# (no run_end), stopped by a signal, never started, its agent died (killed for memory,
# crashed) or the API failed; a log that could not be written.
INTERRUPTED = frozenset({None, "signal", "not_started", "agent_exited", "api_error", "log_error"})
# The run's own outcomes that are final: the supervisor's or the budget's word, which a
# rerun would only repeat. Anything else a task ended with (its process killed by a signal
# before its run could end, see KILLED; an exit with no run_end) is no outcome of its own,
# and a rerun finishes the task.
FINAL = frozenset(o.value for o in Outcome) - INTERRUPTED


class StateError(Exception):
    """The state file cannot be read; the message is one line."""


@dataclass(frozen=True)
class TaskState:
    """Where one task is."""

    id: str
    phase: str = QUEUED
    run_id: str | None = None
    outcome: str | None = None
    exit_code: int | None = None
    branch: str | None = None
    worktree: str | None = None
    commit: str | None = None
    diff_stat: str = ""
    error: str | None = None

    @property
    def kept(self) -> bool:
        """Ended for good: completed (and committed), or a final outcome that running the
        batch again would only repeat (abort, a spent budget: see FINAL). An interrupted
        task, one that ended with no outcome of its own (killed) or whose commit failed is
        not."""
        return self.phase == ENDED and self.outcome in FINAL and self.error is None


@dataclass(frozen=True)
class BatchState:
    """The state file's content."""

    tasks_file: str
    base: str | None  # the commit every branch starts from (None: --isolate none)
    pid: int
    started: float
    ended: float | None = None
    tasks: tuple[TaskState, ...] = field(default_factory=tuple)

    def task(self, task_id: str) -> TaskState | None:
        """The state of `task_id`, if this batch knew it."""
        return next((t for t in self.tasks if t.id.lower() == task_id.lower()), None)

    def to_json(self) -> str:
        """state.json's text."""
        return json.dumps(asdict(self), indent=2, ensure_ascii=False) + "\n"


def folder(runs_dir: Path, tasks_file: Path) -> Path:
    """The folder of the batch of `tasks_file` (its resolved path names it)."""
    resolved = str(tasks_file.resolve())
    digest = hashlib.sha256(resolved.encode()).hexdigest()[:10]
    return runs_dir / BATCHES_DIR / f"{tasks_file.stem}-{digest}"


def read(path: Path) -> BatchState | None:
    """The state in `path`, or None when there is none; StateError if it is damaged."""
    try:
        data = readback.read_json(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise StateError(f"cannot read {path}: {readback.problem(exc)}") from None
    try:
        tasks = tuple(TaskState(**t) for t in data.pop("tasks"))
        return BatchState(**data, tasks=tasks)
    except (TypeError, KeyError, AttributeError) as exc:
        raise StateError(f"cannot read {path}: {exc}") from None


def all_states(runs_dir: Path) -> list[tuple[Path, BatchState]]:
    """Every batch this runs directory holds, with its folder (a damaged one left out)."""
    out = []
    with contextlib.suppress(OSError):
        for sub in sorted((runs_dir / BATCHES_DIR).iterdir()):
            with contextlib.suppress(StateError):
                found = read(sub / STATE_FILE)
                if found is not None:
                    out.append((sub, found))
    return out


def live_pid(batch_folder: Path) -> int | None:
    """The pid of the live batch holding the folder's lock, or None."""
    return pidlock.holder(batch_folder / LOCK_FILE)


def task_state(r: TaskResult) -> TaskState:
    """What the state file says of one task's result."""
    phase = QUEUED if not r.run_id else RUNNING if r.outcome is None else ENDED
    if r.outcome is not None and not r.run_id:
        phase = ENDED  # not started (the batch was stopped first)
    return TaskState(
        id=r.id,
        phase=phase,
        run_id=r.run_id or None,
        outcome=r.outcome,
        exit_code=r.exit_code,
        branch=r.branch,
        worktree=str(r.worktree) if r.worktree is not None else None,
        commit=r.commit,
        diff_stat=r.diff_stat,
        error=r.error,
    )


class Recorder:
    """Writes the batch's state file, whole, whenever a task changes."""

    def __init__(self, path: Path, tasks_file: Path, base: str | None, started: float) -> None:
        self.path = path
        self._head: dict[str, Any] = {
            "tasks_file": str(tasks_file.resolve()),
            "base": base,
            "pid": os.getpid(),
            "started": started,
        }

    def save(self, results: Sequence[TaskResult], ended: bool = False) -> None:
        """Write the state of every task (atomically: a crash leaves the old or the new)."""
        state = BatchState(
            **self._head,
            ended=time.time() if ended else None,
            tasks=tuple(task_state(r) for r in results),
        )
        write_atomic(self.path, state.to_json())


def row(batch_folder: Path, state: BatchState) -> dict[str, Any]:
    """One batch as `ptysup runs` and `serve` show it: its file, whether it is alive (else
    ended, or crashed: its lock is free and it never wrote its end), and its tasks counted
    as counts() does."""
    from ptysup.store.rundir import RunDir

    runs_dir = batch_folder.parent.parent
    pid = live_pid(batch_folder)
    # While the batch lives, its running tasks are (a run starting has no lock yet).
    alive = {
        t.id: pid is not None or RunDir(runs_dir / t.run_id).holder() is not None
        for t in state.tasks
        if t.phase == RUNNING and t.run_id
    }
    status = "running" if pid is not None else "ended" if state.ended is not None else "crashed"
    return {
        "batch": batch_folder.name,
        "tasks_file": state.tasks_file,
        "state": status,
        "pid": pid,
        "started": state.started,
        "ended": state.ended,
        **counts(state, alive),
        "tasks": [asdict(t) for t in state.tasks],
    }


def rows(runs_dir: Path) -> list[dict[str, Any]]:
    """Every batch of a runs directory as row() makes it, newest first."""
    found = [row(where, state) for where, state in all_states(runs_dir)]
    return sorted(found, key=lambda r: float(r["started"]), reverse=True)


def counts(state: BatchState, alive: Mapping[str, bool]) -> dict[str, int]:
    """Tasks done / running / queued / interrupted / failed. Interrupted: running the
    batch again goes on with it (its run was killed, or ended as INTERRUPTED says), as a
    task whose run is not alive while the batch does not run it; failed: it ended for good
    without completing (an abort, a spent budget), and a rerun keeps it as it is."""
    out = {"done": 0, "running": 0, "queued": 0, "interrupted": 0, "failed": 0}
    for t in state.tasks:
        if t.phase == ENDED:
            ok = t.outcome == "complete" and t.exit_code == 0 and t.error is None
            out["done" if ok else "failed" if t.kept else "interrupted"] += 1
        elif t.phase == RUNNING:
            out["running" if alive.get(t.id, False) else "interrupted"] += 1
        else:
            out["queued"] += 1
    return out


def ended(run_dir: Path) -> tuple[str, int] | None:
    """How a run ended (its run_end's outcome and exit code), or None when it was
    interrupted (killed, no run_end; a signal; see INTERRUPTED)."""
    from ptysup.store.listing import describe
    from ptysup.store.rundir import RunDir, read_events

    row = describe(RunDir(run_dir))
    outcome = row.get("outcome")
    if outcome in INTERRUPTED:
        return None
    ends = [e for e in read_events(Path(row["events"])) if e.get("event") == "run_end"]
    code = ends[-1].get("exit_code") if ends else None
    return str(outcome), code if isinstance(code, int) else 1
