"""The runs of a directory as rows: each run's state, step, iterations, cost and task, read
from its run directory (run.json, the event log, state.json) and never from the run itself.
`ptysup runs`, its `--watch`, a batch's live state, `ptysup serve` and CI read runs so."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ptysup.store import runstate
from ptysup.store.rundir import (
    ALIVE_FILE,
    INCOMPLETE_FILE,
    LOCK_FILE,
    STATE_FILE,
    RunDir,
    RunNotFound,
    RunRecord,
    progress,
)
from ptysup.userfile import kind_of


def _stored_task(record: RunRecord | None) -> str:
    """The task run.json names: a run whose log took nothing (a disk full from the outset)
    still says what it was to do."""
    task = record.config.get("task") if record is not None else None
    return task if isinstance(task, str) else ""


def describe(run_dir: RunDir, clock: Callable[[], float] = time.time) -> dict[str, Any]:
    """One run as a JSON-able row: id, state, step, iterations, elapsed, cost, task. A
    live run's elapsed time is until now (`clock_from` says since when, to keep it
    ticking); an ended one's, until its end. A damaged run still gets its row, from what
    can be read, and `damaged` says what is wrong (None when nothing is)."""
    damage: list[str] = []
    try:
        record = run_dir.read_record()
    except RunNotFound as exc:  # the run still gets its row, from its events
        record = None
        damage.append(str(exc))
    events_file = Path(record.log_file) if record is not None else run_dir.default_events
    p = progress([])
    if os.path.lexists(events_file):  # none yet: a run starting, or a full disk
        try:
            p = run_dir.read_progress(events_file)
        except RunNotFound as exc:  # an unreadable log: the row says what it can
            damage.append(str(exc))
    pid = run_dir.holder()
    damage += _odd_files(run_dir)
    if record is None and not os.path.lexists(events_file) and pid is None:
        damage.append(NOTHING_WRITTEN)
    plan = record.plan if record is not None else None
    saved = runstate.read_state(run_dir.path / runstate.STATE_FILE)
    state = runstate.derive(saved, pid, p.outcome)
    current = saved if saved is not None and saved["state"] == state else None
    clock_from = p.clock_from if state in runstate.LIVE else None
    return {
        "run_id": run_dir.run_id,
        "state": state,
        "pid": pid,
        "outcome": p.outcome,
        "reason": p.reason,
        "step": p.step,
        "step_index": p.step_index,
        "steps_of": p.steps_of,
        "steps_done": list(p.steps_done),
        "iterations": p.iterations,
        "max_iter": p.max_iter,
        "elapsed_s": round(elapsed(p.elapsed_s, clock_from, clock()), 3),
        "clock_from": clock_from,
        "cost_usd": round(p.cost_usd, 6),
        "task": p.task or _stored_task(record) or (f"plan {plan}" if plan else ""),
        "parts": p.parts,
        "events": str(events_file),
        # Why the event log misses events (a write failed): iterations and cost are at least
        # what it shows.
        "log_incomplete": run_dir.incomplete(),
        # From state.json while it is current: when the state began, and what it waits on.
        "since": current.get("since") if current else None,
        "detail": str(current.get("detail") or "") if current else "",
        "unreadable_lines": p.unreadable,
        "damaged": "; ".join(damage) or None,
    }


# What a run folder with its lock alone, and no live process, went through.
NOTHING_WRITTEN = (
    "it wrote neither run.json nor its event log (a full disk or an unwritable folder "
    "as it started): nothing was started"
)


def _odd_files(run_dir: RunDir) -> list[str]:
    """The run's own files that are there but no regular file (a FIFO, a device, a
    folder): never read, they would block or never end."""
    odd = []
    for name in (STATE_FILE, LOCK_FILE, ALIVE_FILE, INCOMPLETE_FILE):
        path = run_dir.path / name
        try:
            mode = path.stat().st_mode
        except FileNotFoundError:
            continue
        except OSError as exc:  # a link that leads nowhere, a loop of links
            odd.append(f"{path}: {exc.strerror or exc}")
            continue
        if not stat.S_ISREG(mode):
            odd.append(f"{path}: not a regular file ({kind_of(mode)})")
    return odd


def elapsed(logged_s: float, clock_from: float | None, now: float) -> float:
    """A run's elapsed time: a live one's (`clock_from` set) runs on to `now`."""
    return logged_s if clock_from is None else max(logged_s, now - clock_from)
