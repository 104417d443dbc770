"""The batches of a runs directory for the page, each state file looked at before it is
read (files.py): a damaged one gets a row that says so, and never stalls the others."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ptysup.batch import state
from ptysup.serve import files
from ptysup.store.rundir import LOCK_FILE


def rows(runs_dir: Path) -> list[dict[str, Any]]:
    """Every batch, newest first, as ptysup.batch.state.row makes it; a batch whose files
    cannot be read is a row that says why."""
    try:
        folders = sorted((runs_dir / state.BATCHES_DIR).iterdir())
    except OSError:
        return []
    found = [_row(folder, runs_dir) for folder in folders]
    return sorted(found, key=lambda r: float(r["started"]), reverse=True)


def _row(folder: Path, runs_dir: Path) -> dict[str, Any]:
    problems = [
        f"{path.name}: {found}"
        for path in (folder / state.STATE_FILE, folder / state.LOCK_FILE)
        if (found := files.problem(path, files.SMALL_MAX)) is not None
    ]
    if problems:
        return unreadable(folder, problems)
    try:
        read = state.read(folder / state.STATE_FILE)
    except state.StateError as exc:
        return unreadable(folder, [str(exc)])
    except Exception as exc:  # e.g. nested deeper than the decoder goes
        return unreadable(folder, [f"{state.STATE_FILE}: cannot be read: {exc}"])
    if read is None:
        return unreadable(folder, [f"{state.STATE_FILE}: missing"])
    for task in read.tasks:  # the row asks whether each running task's run is alive
        lock = runs_dir / str(task.run_id) / LOCK_FILE
        if task.run_id and (found := files.problem(lock, files.SMALL_MAX)) is not None:
            return unreadable(folder, [f"task {task.id}'s run {task.run_id}: lock: {found}"])
    return {**state.row(folder, read), "damage": []}


def unreadable(folder: Path, problems: list[str]) -> dict[str, Any]:
    """The row of a batch whose state cannot be read."""
    return {
        "batch": folder.name,
        "tasks_file": "",
        "state": "unreadable",
        "pid": None,
        "started": 0.0,
        "ended": None,
        "done": 0,
        "running": 0,
        "queued": 0,
        "failed": 0,
        "tasks": [],
        "damage": problems,
    }


def failed(exc: Exception) -> list[dict[str, Any]]:
    """What the page shows when the batches cannot be read at all."""
    return [unreadable(Path("batches"), [f"cannot be read: {type(exc).__name__}: {exc}"])]
