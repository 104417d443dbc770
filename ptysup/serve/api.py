"""The runs as JSON for the page: the table's rows, one run's details, its recording.

Each row is `ptysup.store.listing.describe()` (state, task, step, iterations, cost, elapsed): the
page shows the state as the string it gets, whatever states exist. A run is looked up by
its id among the directories actually listed, so no path from a request ever reaches the
file system.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ptysup.serve import joined
from ptysup.store.listing import describe
from ptysup.store.rundir import RunDir, RunNotFound, part_recordings, read_events, run_dirs

# The fields of a decision event the page shows (the supervisor's whole answer is content).
DECISION_FIELDS = ("iteration", "max_iter", "action", "content", "cost_usd", "elapsed_s")


class RunsIndex:
    """The runs under one `.ptysup/runs/` directory."""

    def __init__(self, runs_dir: Path) -> None:
        self.runs_dir = runs_dir
        # The page asks for a run's details every few seconds: a long recording is read
        # again only when it changed. Keyed by each part's (path, size, mtime).
        self._durations: dict[tuple[tuple[Path, int, int], ...], float | None] = {}

    def rows(self) -> list[dict[str, Any]]:
        """Every run, newest first, as describe() rows plus whether it can be watched."""
        return [self._row(r) for r in reversed(run_dirs(self.runs_dir))]

    def batches(self) -> list[dict[str, Any]]:
        """Every batch of this directory, newest first (ptysup.batch.state.rows)."""
        from ptysup.batch import state

        return state.rows(self.runs_dir)

    def find(self, run_id: str) -> RunDir | None:
        """The run with exactly this id, or None."""
        for run_dir in run_dirs(self.runs_dir):
            if run_dir.run_id == run_id:
                return run_dir
        return None

    def details(self, run_dir: RunDir) -> dict[str, Any]:
        """One run: its row, its decisions and its recording's length."""
        row = self._row(run_dir)
        row["decisions"] = decisions(Path(row["events"]))
        row["cast_duration_s"] = self._duration(recordings(run_dir))
        return row

    def _duration(self, casts: list[Path]) -> float | None:
        key = tuple(map(_version, casts))
        known = self._durations  # one look: another request's thread may replace it
        if key in known:
            return known[key]
        duration = joined.duration(casts)
        self._durations = {key: duration}  # only the newest is kept
        return duration

    def _row(self, run_dir: RunDir) -> dict[str, Any]:
        row = describe(run_dir)
        cast = recording_path(run_dir)
        row["live"] = row["pid"] is not None
        row["recorded"] = cast is not None  # the run records its terminal (or will)
        row["has_recording"] = cast is not None and cast.is_file()
        return row


def recording_path(run_dir: RunDir) -> Path | None:
    """Where the run records its terminal (asciicast v2; the file may not exist yet): where
    run.json says, else events.cast; None for a run with --no-recording."""
    try:
        record = run_dir.read_record()
    except RunNotFound:
        record = None
    if record is None:  # no run.json: a run from before run directories, or a damaged one
        path = run_dir.default_events.with_suffix(".cast")
    elif record.record:
        path = Path(record.record)
    else:
        return None  # run with --no-recording
    return path


def recordings(run_dir: RunDir) -> list[Path]:
    """Every part's recording, in order (each resumed part records to a file of its own);
    none for a run with --no-recording."""
    last = recording_path(run_dir)
    if last is None:
        return []
    try:
        record = run_dir.read_record()
        events = read_events(run_dir.events_file())
    except RunNotFound:
        return [last]
    # The events name a --record path as given: relative to where the run was started.
    cwd = Path(record.cwd) if record is not None else Path()
    return [cwd / cast for cast in part_recordings(events, last, run_dir.run_id)]


def _version(path: Path) -> tuple[Path, int, int]:
    """(path, size, mtime): changes whenever the file does ((path, -1, -1) if it is missing)."""
    try:
        st = path.stat()
    except OSError:
        return path, -1, -1
    return path, st.st_size, st.st_mtime_ns


def decisions(events_file: Path) -> list[dict[str, Any]]:
    """The supervisor's decisions in a run's event log, oldest first."""
    try:
        events = read_events(events_file)
    except RunNotFound:
        return []
    return mark_rejected(events)


def mark_rejected(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The decisions, each with `rejected`: a [COMPLETE] that --verify then failed (the run
    went on) was no completion, and is not shown as one."""
    out: list[dict[str, Any]] = []
    for e in events:
        name = e.get("event")
        if name == "decision":
            out.append({**{k: e.get(k) for k in DECISION_FIELDS}, "rejected": False})
        elif name == "verify" and e.get("passed") is False and out:
            last = out[-1]
            if str(last.get("action") or "").lower() == "complete":
                last["rejected"] = True
    return out
