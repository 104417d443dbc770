"""The runs as JSON for the page: the table's rows, one run's details, its recording.

Each row is `ptysup.store.listing.describe()` (state, task, step, iterations, cost,
elapsed), plus whether the run can be watched and `damage`: what is wrong with its files,
a line each (damage.py). A run whose files the store's readers must not read (a FIFO, a
link to /dev/zero, a file of gigabytes) gets a row of its own, state `unreadable`, that
says why. Every run is read in the background (reads.py): an answer never waits long for
one, and a run whose files are unchanged is not read again. A run is looked up by its id
among the directories actually listed, so no path from a request reaches the file system.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ptysup.logread import skipped_note
from ptysup.serve import damage, files, joined
from ptysup.serve.labels import READING, UNREADABLE, label
from ptysup.serve.reads import Job, Late, Reads
from ptysup.store.listing import describe
from ptysup.store.rundir import (
    LOCK_FILE,
    RunDir,
    RunRecord,
    incomplete_dir,
    part_recordings,
    read_events,
    run_dirs,
)

# The fields of a decision event the page shows (the supervisor's whole answer is content).
DECISION_FIELDS = ("iteration", "max_iter", "action", "content", "cost_usd", "elapsed_s")
READ_WAIT_S = 2.0  # an answer waits this long for a run's files, then says it reads them
MAX_SCANS = 1000  # recordings whose last scan is kept, to go on from


@dataclass(frozen=True)
class Recording:
    """A run's decisions and its recording's parts, as its details show them."""

    decisions: list[dict[str, Any]] = field(default_factory=list)
    parts: tuple[joined.Part, ...] = ()  # none: it records nothing (--no-recording)
    problems: tuple[str, ...] = ()
    broken: bool = False  # a part can never be shown (damaged, or ended without a header)


class RunsIndex:
    """The runs under one `.ptysup/runs/` directory."""

    def __init__(self, runs_dir: Path, wait_s: float = READ_WAIT_S) -> None:
        self.runs_dir = runs_dir
        self._rows: Reads[dict[str, Any]] = Reads(wait_s)
        self._recordings: Reads[Recording] = Reads(wait_s, keep=16)
        self._batches: Reads[list[dict[str, Any]]] = Reads(wait_s, keep=1)
        # The files a run's last reading named outside its folder (--log-file, --record):
        # a change to them is a change to the run.
        self._outside: dict[str, tuple[Path, ...]] = {}
        self._scans: dict[Path, joined.Part] = {}  # a recording's last scan, to go on from
        self._incomplete = incomplete_dir()  # where a run that could not write says so

    def rows(self) -> list[dict[str, Any]]:
        """Every run, newest first, as describe() rows plus whether it can be watched."""
        runs = list(reversed(run_dirs(self.runs_dir)))
        results = self._rows.results([self._row_job(r) for r in runs])
        return [_shown_row(r, result) for r, result in zip(runs, results, strict=True)]

    def row(self, run_dir: RunDir) -> dict[str, Any]:
        """One run's row (see rows)."""
        (result,) = self._rows.results([self._row_job(run_dir)])
        return _shown_row(run_dir, result)

    def batches(self) -> list[dict[str, Any]]:
        """Every batch of this directory, newest first (ptysup.batch.state.rows)."""
        from ptysup.serve import batches

        job = Job("batches", None, lambda: batches.rows(self.runs_dir), batches.failed)
        (result,) = self._batches.results([job])
        if isinstance(result, Late):
            return result.last or []
        return result

    def find(self, run_id: str) -> RunDir | None:
        """The run with exactly this id, or None."""
        for run_dir in run_dirs(self.runs_dir):
            if run_dir.run_id == run_id:
                return run_dir
        return None

    def details(self, run_dir: RunDir) -> dict[str, Any]:
        """One run: its row, its decisions, its recording's length and what is wrong."""
        row = self.row(run_dir)
        found = self.recording(run_dir, row)
        if isinstance(found, Late):
            note = f"its decisions and recording are being read ({found.seconds:.0f} s so far)"
            found = found.last or Recording(problems=(note,))
        if row["live"]:  # the live view waits for a recording that is not there yet
            showable = row["recorded"] and not found.broken
        else:
            showable = any(p.playable for p in found.parts)
        return {
            **row,
            "damage": [*row["damage"], *found.problems],
            "decisions": found.decisions,
            "cast_duration_s": joined.duration(found.parts),
            "showable": showable,
            "recording_damaged": found.broken,
        }

    def recording(
        self, run_dir: RunDir, row: dict[str, Any] | None = None
    ) -> Recording | Late[Recording]:
        """The run's decisions and its recording's parts, each scanned."""
        live = bool((row or self.row(run_dir))["live"])
        version = None if live else self._version(run_dir)
        job = Job(
            ("recording", run_dir.run_id),
            version,
            lambda: self._read_recording(run_dir, live),
            lambda exc: Recording(problems=(_failed(exc),)),
        )
        (result,) = self._recordings.results([job])
        return result

    def _row_job(self, run_dir: RunDir) -> Job[dict[str, Any]]:
        return Job(
            run_dir.run_id,
            self._version(run_dir),
            lambda: self._read_row(run_dir),
            lambda exc: unreadable_row(run_dir, [_failed(exc)]),
        )

    def _version(self, run_dir: RunDir) -> tuple[Any, ...] | None:
        """What changes whenever a file the run's row comes from does; None while the run
        lives (its row runs on with the clock)."""
        entries = files.folder_version(run_dir.path)
        if files.regular_in(entries, LOCK_FILE, files.SMALL_MAX) and run_dir.holder() is not None:
            return None
        outside = self._outside.get(run_dir.run_id, ())
        return (
            entries,
            files.version(self._incomplete / f"{run_dir.run_id}.json"),
            tuple(files.version(path) for path in outside),
        )

    def _read_row(self, run_dir: RunDir) -> dict[str, Any]:
        checked = damage.check(run_dir)
        if not checked.readable:
            return unreadable_row(run_dir, list(checked.problems), checked)
        self._note_outside(run_dir, [checked.log])
        try:
            row = describe(run_dir)
        except Exception as exc:  # damage no look foresaw (a line nested past the decoder)
            return unreadable_row(run_dir, [*checked.problems, _failed(exc)], checked)
        row.update(_watchable(run_dir, checked.record, row["pid"]))
        row["damage"] = list(checked.problems)
        if not row["parts"] and (files.version(checked.log) or (0, 0, 0))[1]:
            start = "no run_start event: the log's start is missing or damaged"
            row["damage"].append(f"{damage.label(run_dir, checked.log)}: {start}")
        if row.get("unreadable_lines"):
            row["damage"].append(skipped_note(row["unreadable_lines"], "its event log"))
        return row

    def _read_recording(self, run_dir: RunDir, live: bool) -> Recording:
        checked = damage.check(run_dir)
        decisions: list[dict[str, Any]] = []
        last = recording_path(run_dir, checked.record)
        casts = [] if last is None else [last]
        if checked.readable and files.version(checked.log) is not None:
            events = read_events(checked.log)
            decisions = mark_rejected(events)
            if last is not None:
                # The events name a --record path as given: relative to where the run began.
                cwd = Path(checked.record.cwd) if checked.record is not None else Path()
                casts = [cwd / cast for cast in part_recordings(events, last, run_dir.run_id)]
        self._note_outside(run_dir, casts)
        parts = tuple(map(self._scan, casts))
        broken = any(p.problem or (p.exists and p.header is None and not live) for p in parts)
        return Recording(decisions, parts, tuple(part_problems(run_dir, parts, live)), broken)

    def _scan(self, cast: Path) -> joined.Part:
        part = joined.scan(cast, self._scans.pop(cast, None))
        self._scans[cast] = part  # the newest last: the oldest go first
        while len(self._scans) > MAX_SCANS:
            del self._scans[next(iter(self._scans))]
        return part

    def _note_outside(self, run_dir: RunDir, paths: list[Path]) -> None:
        outside = {p for p in paths if p.parent != run_dir.path}
        known = self._outside.get(run_dir.run_id, ())
        if not outside <= set(known):
            self._outside[run_dir.run_id] = tuple(sorted({*known, *outside}))


def _shown_row(run_dir: RunDir, result: dict[str, Any] | Late[dict[str, Any]]) -> dict[str, Any]:
    """A row read in time, else its last one, else one that says it is being read; with
    what the page calls its state (labels.py)."""
    if not isinstance(result, Late):
        row = result
    elif result.last is not None:
        row = result.last
    else:
        row = unreadable_row(run_dir, [])
        row.update(
            state=READING, detail=f"its files are being read ({result.seconds:.0f} s so far)"
        )
    return {**row, **label(row)}


def part_problems(run_dir: RunDir, parts: tuple[joined.Part, ...], live: bool) -> list[str]:
    """What is wrong with each part of a recording, a line each. An ended run's recording
    with no whole header line never gets one; a live run's may not have it yet."""
    out = []
    for part in parts:
        name = damage.label(run_dir, part.path)
        if part.problem is not None:
            out.append(f"{name}: {part.problem}")
        elif part.exists and part.header is None and not live:
            out.append(f"{name}: {joined.NO_HEADER}")
        if part.skipped:
            out.append(f"{name}: {skipped_note(part.skipped, 'it')}")
    if parts and not live and not any(part.exists for part in parts):
        out.append(f"{damage.label(run_dir, parts[-1].path)}: missing")
    return out


def _failed(exc: Exception) -> str:
    """What a read that raised says (a bug, or damage no check foresaw)."""
    return f"its files cannot be read: {type(exc).__name__}: {exc}"


def unreadable_row(
    run_dir: RunDir, problems: list[str], checked: damage.Checked | None = None
) -> dict[str, Any]:
    """The row of a run whose files cannot be read: its id, what is wrong, and what little
    is known for sure (its task from run.json, whether it is alive)."""
    record = checked.record if checked is not None else None
    task = record.config.get("task") if record is not None else None
    pid = run_dir.holder() if checked is not None and checked.lock_ok else None
    # A live run's terminal may still be watched, whatever became of its log.
    watchable = _watchable(run_dir, record, pid) if checked is not None else {}
    return {
        "run_id": run_dir.run_id,
        "state": UNREADABLE,
        "pid": pid,
        "outcome": None,
        "reason": "",
        "step": None,
        "step_index": None,
        "steps_of": None,
        "steps_done": [],
        "iterations": 0,
        "max_iter": None,
        "elapsed_s": 0.0,
        "clock_from": None,
        "cost_usd": 0.0,
        "task": task if isinstance(task, str) else "",
        "parts": 1,
        "events": str(checked.log if checked is not None else run_dir.default_events),
        "log_incomplete": None,
        "since": None,
        "detail": "",
        "unreadable_lines": 0,
        "live": pid is not None,
        "recorded": False,
        "has_recording": False,
        **watchable,
        "damage": problems,
    }


def _watchable(run_dir: RunDir, record: RunRecord | None, pid: int | None) -> dict[str, bool]:
    """Whether the run is live, records its terminal (or will), and has a recording yet."""
    cast = recording_path(run_dir, record)
    return {
        "live": pid is not None,
        "recorded": cast is not None,
        "has_recording": cast is not None and files.version(cast) is not None,
    }


def recording_path(run_dir: RunDir, record: RunRecord | None) -> Path | None:
    """Where the run records its terminal (asciicast v2; the file may not exist yet): where
    its run.json (`record`, as damage.check read it) says, else events.cast; None for a run
    with --no-recording."""
    if record is None:  # no run.json: a run from before run directories, or a damaged one
        return run_dir.default_events.with_suffix(".cast")
    return Path(record.record) if record.record else None


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
