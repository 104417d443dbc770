"""`ptysup runs --watch`: the runs table kept current until Ctrl-C.

In a terminal the table is redrawn in place (rich's Live, redrawn only when something
changed); without one, each state change is one line (`--json`: one JSON object), so a
log or a script can follow it. Changes are noticed cheaply: a stat of each run's
state.json, and, for runs that were live, whether their lock is still held (a run killed
with SIGKILL changes no file, only its lock).
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from ptysup.batch import state as batch_state
from ptysup.store import runstate
from ptysup.store.listing import describe as describe_run
from ptysup.store.rundir import RUNS_DIR, RunDir, RunNotFound, run_dirs
from ptysup.views.table import render, render_batches

POLL_S = 0.3  # between looks at the files: a change shows within this, at little cost
FINAL = frozenset({runstate.DONE, runstate.FAILED, runstate.CRASHED})
Stamp = tuple[Any, ...]


def _stat(path: Path) -> tuple[int, int, int] | None:
    """What changes whenever the file does: state.json is replaced (a new inode) on each
    write, so even two writes within one tick of the file system's clock differ."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


class Watcher:
    """The newest `count` runs, re-described only when one of them changed."""

    def __init__(
        self,
        runs_dir: Path,
        count: int,
        describe: Callable[[RunDir], dict[str, Any]],
        batches: Callable[[Path], list[dict[str, Any]]] = batch_state.rows,
    ) -> None:
        self._runs_dir = runs_dir
        self._count = count
        self._describe = describe
        self._batches = batches
        self._stamps: dict[str, Stamp] = {}
        self.rows: dict[str, dict[str, Any]] = {}  # by run id, newest first
        self.removed: set[str] = set()
        self.batch_rows: list[dict[str, Any]] = []  # each batch's row, newest first
        self.batches_changed: list[dict[str, Any]] = []

    def poll(self) -> list[dict[str, Any]]:
        """The rows that changed since the last poll (all of them the first time); a run
        gone from the directory (pruned) sets `removed`, a batch's row that changed is in
        `batches_changed` (each batch's state is small: read at every poll)."""
        batches = self._batches(self._runs_dir)
        self.batches_changed = [b for b in batches if b not in self.batch_rows]
        self.batch_rows = batches
        runs = list(reversed(run_dirs(self._runs_dir)[-self._count :]))
        changed = []
        rows: dict[str, dict[str, Any]] = {}
        for run in runs:
            row = self.rows.get(run.run_id)
            stamp = self._stamp(run, row)
            if row is None or stamp != self._stamps.get(run.run_id):
                fresh = self._describe(run)
                # Stamped before describe(): whatever changes after it shows next time.
                self._stamps[run.run_id] = stamp
                if fresh != row:
                    changed.append(fresh)
                row = fresh
            rows[run.run_id] = row
        self.removed = set(self.rows) - set(rows)
        self._stamps = {k: v for k, v in self._stamps.items() if k in rows}
        self.rows = rows
        return changed

    def _stamp(self, run: RunDir, row: dict[str, Any] | None) -> Stamp:
        state = _stat(run.path / runstate.STATE_FILE)
        # Runs of older versions have no state.json: their event log moves instead.
        events = _stat(run.default_events) if state is None else None
        live = None if row is not None and row["state"] in FINAL else run.holder() is not None
        return state, events, live


def _table(watcher: Watcher, runs_dir: Path, now: float, width: int | None = None) -> str:
    buf = io.StringIO()
    buf.write(f"ptysup runs --watch  {runs_dir}/  (Ctrl-C to stop)\n\n")
    render_batches(watcher.batch_rows, buf, width)
    render(list(watcher.rows.values()), buf, now, width)
    return buf.getvalue().rstrip("\n")


def _line(row: dict[str, Any]) -> str:
    when = time.strftime("%H:%M:%S")
    if "batch" in row:  # a batch's row: its tasks counted
        counts = ", ".join(
            f"{row[k]} {k}" for k in ("done", "running", "queued", "interrupted", "failed")
        )
        return f"{when} batch {row['batch']} {row['state']}  {counts}\n"
    detail = f"  {row['detail']}" if row.get("detail") else ""
    return f"{when} {row['run_id']} {row['state']}{detail}\n"


def watch(
    runs_dir: Path = RUNS_DIR,
    count: int = 20,
    out: TextIO | None = None,
    as_json: bool = False,
    sleep: Callable[[float], None] = time.sleep,
    describe: Callable[[RunDir], dict[str, Any]] | None = None,
    clock: Callable[[], float] = time.time,
) -> int:
    """Show the runs live until Ctrl-C (exit 0)."""
    out = out or sys.stdout
    watcher = Watcher(runs_dir, count, describe or (lambda run: describe_run(run, clock)))
    try:
        if _isatty(out) and not as_json:
            _live(watcher, runs_dir, out, sleep, clock)
        else:
            _lines(watcher, out, as_json, sleep)
    except KeyboardInterrupt:
        return 0
    except RunNotFound as exc:  # the runs directory became unreadable
        print(f"ptysup: runs: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `| head`: the reader is gone, nothing more to show
        _quiet(out)
    return 0


def _lines(watcher: Watcher, out: TextIO, as_json: bool, sleep: Callable[[float], None]) -> None:
    """A line per change of a run's state (or detail): the log of a terminal-less watch."""
    shown: dict[str, tuple[str, str]] = {}
    while True:
        runs = watcher.poll()
        for batch in reversed(watcher.batches_changed):  # oldest first, as a log reads
            out.write(json.dumps(batch, ensure_ascii=False) + "\n" if as_json else _line(batch))
        for row in reversed(runs):
            key = (str(row["state"]), str(row.get("detail") or ""))
            if shown.get(row["run_id"]) == key:
                continue  # the iteration or cost moved, not the state
            shown[row["run_id"]] = key
            out.write(json.dumps(row, ensure_ascii=False) + "\n" if as_json else _line(row))
        out.flush()
        sleep(POLL_S)


def _live(
    watcher: Watcher,
    runs_dir: Path,
    out: TextIO,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
) -> None:
    """The table redrawn in place, only when a run changed or, while one is live, when its
    elapsed time moves a second: no flicker, no busy screen."""
    from rich.console import Console
    from rich.live import Live
    from rich.text import Text

    def view() -> Text:
        text = _table(watcher, runs_dir, clock(), console.width)  # fits: nothing is cropped
        return Text(text, no_wrap=True, overflow="ellipsis")

    console = Console(file=out, highlight=False)
    watcher.poll()
    shown = _second(watcher, clock)
    with Live(view(), console=console, auto_refresh=False, redirect_stdout=False) as live:
        while True:
            sleep(POLL_S)
            changed = watcher.poll() or watcher.removed or watcher.batches_changed
            second = _second(watcher, clock)  # a live run's clock ticks: once a second
            if changed or second != shown:
                shown = second
                live.update(view(), refresh=True)


def _second(watcher: Watcher, clock: Callable[[], float]) -> int | None:
    """The current second while a run is live (its elapsed time shows it), else None."""
    live = any(row.get("clock_from") is not None for row in watcher.rows.values())
    return int(clock()) if live else None


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (ValueError, AttributeError):
        return False


def _quiet(out: TextIO) -> None:
    """After a broken pipe, point the stream at /dev/null so the interpreter's exit is
    silent (it flushes stdout once more)."""
    try:
        fd = out.fileno()
    except (OSError, ValueError, AttributeError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)
