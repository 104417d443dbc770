"""What is wrong with a run's files, found before the store's readers read them.

Each file the listing reads (run.json, the event log, state.json, lock, log_incomplete)
is looked at first (files.py): one that is no regular file, or too big, or that cannot
even be decoded, would make a reader wait forever, run out of memory or raise, so the run
is not read further and its row says why. What the readers take in their stride (a
run.json that is not JSON, lines of the log that are not events, a missing log) is said
too, a line for each, and the run is read as ever.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from ptysup.serve import files
from ptysup.store import runstate
from ptysup.store.rundir import (
    ALIVE_FILE,
    INCOMPLETE_FILE,
    LOCK_FILE,
    RunDir,
    RunNotFound,
    RunRecord,
    incomplete_dir,
)


@dataclass(frozen=True)
class Checked:
    """A run's files as serve found them."""

    problems: tuple[str, ...]  # what is wrong, a line each
    readable: bool  # the store's readers may read them: nothing there blocks or blows up
    log: Path  # its event log
    record: RunRecord | None  # run.json, when it could be read
    lock_ok: bool  # its lock is a regular file: whether the run is alive can be asked


def label(run: RunDir, path: Path) -> str:
    """A file's name as the page says it: its name in the run's folder, else its path."""
    return path.name if path.parent == run.path else str(path)


def check(run: RunDir) -> Checked:
    """Look at every file of the run the listing reads (see the module)."""
    problems: list[str] = []
    fatal = False

    def unusable(path: Path, limit: int) -> bool:
        nonlocal fatal
        found = files.problem(path, limit)
        if found is not None:
            problems.append(f"{label(run, path)}: {found}")
            fatal = True
        return found is not None

    record = None
    if not unusable(run.record_file, files.SMALL_MAX):
        try:
            record = run.read_record()
        except RunNotFound as exc:  # not JSON, or not what ptysup writes: read without it
            problems.append(str(exc))
        except Exception as exc:  # e.g. nested deeper than the decoder goes
            problems.append(f"{label(run, run.record_file)}: cannot be read: {exc}")
            fatal = True
    log = Path(record.log_file) if record is not None else run.default_events
    if not unusable(log, files.LOG_MAX):
        size = files.version(log)
        if size is None:
            problems.append(f"{label(run, log)}: missing")
        elif size[1] == 0:
            problems.append(f"{label(run, log)}: empty")
    lock_ok = not unusable(run.path / LOCK_FILE, files.SMALL_MAX)
    for path in (run.path / INCOMPLETE_FILE, incomplete_dir() / f"{run.run_id}.json"):
        unusable(path, files.SMALL_MAX)
    fatal = _check_state(run, problems) or fatal
    alive = files.problem(run.path / ALIVE_FILE, sys.maxsize)  # only its time is read
    if alive is not None:
        problems.append(f"{ALIVE_FILE}: {alive}")
    return Checked(tuple(problems), not fatal, log, record, lock_ok)


def _check_state(run: RunDir, problems: list[str]) -> bool:
    """state.json's problems added to `problems`; whether it must not be read."""
    path = run.path / runstate.STATE_FILE
    found = files.problem(path, files.SMALL_MAX)
    if found is not None:
        problems.append(f"{label(run, path)}: {found}")
        return True
    if files.version(path) is None:
        return False  # none yet, or a run from before state.json
    try:
        state = runstate.read_state(path)
    except Exception as exc:  # e.g. nested deeper than the decoder goes
        problems.append(f"{label(run, path)}: cannot be read: {exc}")
        return True
    if state is None:
        problems.append(f"{label(run, path)}: not a state ptysup wrote (left out)")
    return False
