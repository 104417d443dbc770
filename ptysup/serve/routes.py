"""Which GET gets which answer. Read-only: nothing here writes.

/                          the page
/static/...                its scripts and styles (the vendored player too)
/api/runs                  every run's row (JSON)
/api/batches               every batch's row: its tasks done / running / queued / failed (JSON)
/api/runs/ID               one run: its row and its decisions (JSON)
/api/runs/ID/cast          its recording (asciicast v2; every part of a resumed run), for replay
/api/runs/ID/live          its recording as server-sent events while it is written
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ptysup.serve import joined, stream
from ptysup.serve.api import RunsIndex, recording_path, recordings
from ptysup.serve.assets import Asset
from ptysup.store.rundir import RunDir, RunNotFound
from ptysup.terminal.record import wait_complete

JSON = "application/json; charset=utf-8"
TEXT = "text/plain; charset=utf-8"


@dataclass(frozen=True)
class Response:
    """A whole answer."""

    status: int
    content_type: str
    body: bytes


@dataclass(frozen=True)
class Stream:
    """An answer sent piece by piece (server-sent events) until the iterator ends."""

    chunks: Iterator[bytes]
    content_type: str = "text/event-stream; charset=utf-8"
    status: int = 200
    extra: tuple[tuple[str, str], ...] = field(default=(("X-Accel-Buffering", "no"),))


def not_found(what: str = "not found") -> Response:
    """A 404 with a short reason."""
    return Response(404, TEXT, f"{what}\n".encode())


def _json(data: Any) -> Response:
    return Response(200, JSON, json.dumps(data, ensure_ascii=False).encode())


class Router:
    """Answers the page's requests from the runs index and the static files."""

    def __init__(
        self,
        index: RunsIndex,
        assets: dict[str, Asset],
        wait: Callable[[float], bool],
        clock: Callable[[], float],
    ) -> None:
        self.index = index
        self.assets = assets
        self._wait = wait  # True when the server is shutting down
        self._clock = clock

    def get(self, path: str) -> Response | Stream:
        """The answer to GET `path` (the query string already removed)."""
        try:
            return self._get(path)
        except RunNotFound as exc:  # the runs directory became unreadable while serving
            return Response(503, TEXT, f"{exc}\n".encode())

    def _get(self, path: str) -> Response | Stream:
        asset = self.assets.get(path)
        if asset is not None:
            return Response(200, asset.content_type, asset.body)
        parts = path.split("/")
        if parts == ["", "api", "batches"]:
            return _json(self.index.batches())
        if parts[:3] != ["", "api", "runs"]:
            return not_found()
        if len(parts) == 3:
            return _json(self.index.rows())
        run_dir = self.index.find(parts[3])  # by exact id among the listed runs
        if run_dir is None:
            return not_found("no such run")
        rest = parts[4:]
        if not rest:
            return _json(self.index.details(run_dir))
        if rest == ["cast"]:
            return self._cast(run_dir)
        if rest == ["live"]:
            return self._live(run_dir)
        return not_found()

    def _cast(self, run_dir: RunDir) -> Response:
        casts = recordings(run_dir)
        if not casts:
            return not_found("this run has no recording")
        try:
            body = joined.cast(casts)  # a resumed run's parts, one after another
        except OSError as exc:
            return not_found(f"cannot read the recording: {exc.strerror or exc}")
        return Response(200, "application/x-asciicast; charset=utf-8", body)

    def _live(self, run_dir: RunDir) -> Response | Stream:
        found = recording_path(run_dir)
        if found is None:
            return not_found("this run has no recording")
        cast: Path = found

        def alive() -> bool:
            return run_dir.holder() is not None or being_written(cast)

        # A run that has just started may not have its recording yet: live() waits for it.
        return Stream(stream.live(cast, alive, self._wait, self._clock))


def being_written(cast: Path) -> bool:
    """Whether a recording's writer still holds it (it is complete once its lock is free)."""
    try:
        return not wait_complete(cast, 0.0)
    except OSError:
        return False
