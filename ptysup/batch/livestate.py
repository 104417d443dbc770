"""Each running task's state as `ptysup.store.listing.describe()` reads it from its run directory,
re-read only when one of the run's files changed: describe() reads the whole event log,
and a batch looks twice a second at runs whose logs grow for hours."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ptysup.batch.result import ORPHAN, QUEUED, TaskResult
from ptysup.store.listing import describe
from ptysup.store.rundir import RUN_FILE, RunDir

Signature = tuple[tuple[int, int], ...]


def _signature(run_dir: Path) -> Signature:
    """Size and change time of every file in the run directory (a handful)."""
    out = []
    try:
        with os.scandir(run_dir) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                st = entry.stat()
                out.append((st.st_size, st.st_mtime_ns))
    except OSError:
        return ()
    return tuple(out)


class LiveState:
    """Remembers each run's last description and the files it was read from."""

    def __init__(self) -> None:
        self._seen: dict[Path, tuple[Signature, dict[str, Any]]] = {}

    def rows(self, results: Sequence[TaskResult]) -> list[TaskResult]:
        """The results, a running task's with its run's current state and progress."""
        rows = []
        for r in results:
            if r.outcome is None and r.state != QUEUED and (r.run_dir / RUN_FILE).is_file():
                row = self._describe(r.run_dir)
                # An orphan's run says "working": the batch says it is waiting for it.
                state = r.state if r.state == ORPHAN else str(row.get("state"))
                rows.append(replace(r, state=state, extra=row))
            else:
                rows.append(replace(r))
        return rows

    def _describe(self, run_dir: Path) -> dict[str, Any]:
        signature = _signature(run_dir)
        seen = self._seen.get(run_dir)
        if seen is not None and seen[0] == signature:
            return seen[1]
        row = describe(RunDir(run_dir))
        self._seen[run_dir] = (signature, row)
        return row
