"""Which request gets which answer. Nothing here writes; a control request asks the run.

/                          the page
/static/...                its scripts and styles (the vendored player too)
/api/session               what this visitor may do: {"control": bool}
/api/runs                  every run's row (JSON)
/api/batches               every batch's row: its tasks done / running / queued / failed (JSON)
/api/runs/ID               one run: its row and its decisions (JSON)
/api/runs/ID/cast          its recording (asciicast v2; every part of a resumed run), for replay
/api/runs/ID/live          its recording as server-sent events while it is written

With the control token only (`--control`):
/control                   the control page (#ID: the run it steers)
/api/runs/ID/steer         the run's budgets and what it waits on (JSON)
/api/runs/ID/terminal      its terminal from its attach socket, as server-sent events
POST /api/runs/ID/ACTION   send, budget, stop, approve (control.py)
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ptysup.attach.client import Refused, open_socket
from ptysup.serve import attached, control, damage, files, joined, stream
from ptysup.serve.api import RunsIndex, recording_path
from ptysup.serve.assets import CONTROL_PAGE as CONTROL_PAGE  # the server redirects to it
from ptysup.serve.assets import Asset
from ptysup.serve.reads import Late
from ptysup.serve.security import CONTROL_CSP, new_token
from ptysup.store.rundir import RunDir, RunNotFound
from ptysup.terminal.record import wait_complete

JSON = "application/json; charset=utf-8"
TEXT = "text/plain; charset=utf-8"
CAST = "application/x-asciicast; charset=utf-8"


@dataclass(frozen=True)
class Response:
    """A whole answer."""

    status: int
    content_type: str
    body: bytes
    csp: str | None = None  # a Content-Security-Policy of its own (the control page's)


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


NO_CONTROL = Response(403, TEXT, b"steering needs the control URL ptysup serve --control printed\n")
NONCE_MARK = b"{{style-nonce}}"  # in control.html: the nonce its answer's policy allows


class Router:
    """Answers the page's requests from the runs index and the static files."""

    def __init__(
        self,
        index: RunsIndex,
        assets: dict[str, Asset],
        wait: Callable[[float], bool],
        clock: Callable[[], float],
        steer: control.Steer | None = None,
    ) -> None:
        self.index = index
        self.assets = assets
        self._wait = wait  # True when the server is shutting down
        self._clock = clock
        self._steer = steer  # None: read-only (no --control)

    def get(self, path: str, control: bool = False) -> Response | Stream:
        """The answer to GET `path` (the query string already removed); `control`: the
        request carries the control token."""
        try:
            if path == "/api/session":
                return _json({"control": control and self._steer is not None})
            if path == CONTROL_PAGE or _steering(path):
                return self._control_get(path) if control else NO_CONTROL
            return self._get(path)
        except RunNotFound as exc:  # the runs directory became unreadable while serving
            return Response(503, TEXT, f"{exc}\n".encode())
        except Exception as exc:  # a bug, or damage nothing foresaw: said, never a hang-up
            return Response(500, TEXT, f"cannot answer: {type(exc).__name__}: {exc}\n".encode())

    def post(self, path: str, body: bytes, address: str) -> Response:
        """The answer to a control request (the Guard let it in) from `address`."""
        parts = path.split("/")
        if self._steer is None or len(parts) != 5 or parts[:3] != ["", "api", "runs"]:
            return not_found()
        try:
            run_dir = self.index.find(parts[3])
            if run_dir is None:
                return not_found("no such run")
            if not self._is_live(run_dir):  # an ended run's files are never read for it here
                answer = control.refused(control.not_running(run_dir))
            else:
                answer = control.act(self._steer, run_dir, parts[4], body, address)
        except RunNotFound as exc:  # the runs directory became unreadable while serving
            return Response(503, TEXT, f"{exc}\n".encode())
        except Exception as exc:  # a bug: said, never a hang-up
            return Response(500, TEXT, f"cannot answer: {type(exc).__name__}: {exc}\n".encode())
        return Response(answer.status, JSON, answer.encoded())

    @staticmethod
    def _is_live(run_dir: RunDir) -> bool:
        """Whether the run lives: its lock is held (the lock a small plain file, looked at
        first). Never its row, which a loaded machine may still be reading: a live run
        would be taken for an ended one."""
        return damage.check(run_dir).lock_ok and run_dir.holder() is not None

    def _control_get(self, path: str) -> Response | Stream:
        if self._steer is None:
            return NO_CONTROL
        if path == CONTROL_PAGE:
            page = self.assets[CONTROL_PAGE]
            nonce = new_token()  # fresh in each answer: a nonce known beforehand lets all in
            body = page.body.replace(NONCE_MARK, nonce.encode())
            return Response(200, page.content_type, body, CONTROL_CSP.format(nonce=nonce))
        _, _, _, run_id, what = path.split("/")
        run_dir = self.index.find(run_id)
        if run_dir is None:
            return not_found("no such run")
        live = self._is_live(run_dir)
        if what == "steer":
            return _json(control.state(run_dir, live))
        found: RunDir = run_dir

        def connect() -> socket.socket:
            if not live:
                raise Refused(f"{control.not_running(found)}: its terminal is in its replay")
            return open_socket(found)

        return Stream(attached.live(connect, self._wait, self._clock))

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

    def _cast(self, run_dir: RunDir) -> Response | Stream:
        found = self.index.recording(run_dir)
        if isinstance(found, Late):
            return busy(found)
        if not found.parts:
            return not_found("this run has no recording")
        if not any(part.exists for part in found.parts):
            return not_found("this run's recording does not exist (yet)")
        if not any(part.playable for part in found.parts):
            return cannot("replay", [_unplayable(run_dir, p) for p in found.parts if p.exists])
        return Stream(blocks(joined.cast_lines(found.parts)), CAST, extra=())  # read as sent

    def _live(self, run_dir: RunDir) -> Response | Stream:
        checked = damage.check(run_dir)  # run.json is read only if it is a small, plain file
        found = recording_path(run_dir, checked.record)
        if found is None:
            return not_found("this run has no recording")
        cast: Path = found
        problem = files.problem(cast, files.CAST_MAX)
        if problem is not None:
            return cannot("show", [f"{damage.label(run_dir, cast)}: {problem}"])

        def alive() -> bool:
            held = checked.lock_ok and run_dir.holder() is not None
            return held or being_written(cast)

        # A run that has just started may not have its recording yet: live() waits for it.
        return Stream(stream.live(cast, alive, self._wait, self._clock))


def _steering(path: str) -> bool:
    """Whether GET `path` is one of the control page's own requests."""
    parts = path.split("/")
    return (
        len(parts) == 5 and parts[:3] == ["", "api", "runs"] and parts[4] in ("steer", "terminal")
    )


def blocks(lines: Iterator[bytes], size: int = 1 << 16) -> Iterator[bytes]:
    """Lines gathered into blocks of about `size` bytes: one write each, not one a line."""
    block = bytearray()
    for line in lines:
        block += line
        if len(block) >= size:
            yield bytes(block)
            block.clear()
    if block:
        yield bytes(block)


def busy(late: Late[Any]) -> Response:
    """A 503 for a run whose files are still being read."""
    text = f"this run's files are still being read ({late.seconds:.0f} s so far); try again\n"
    return Response(503, TEXT, text.encode())


def cannot(what: str, problems: list[str]) -> Response:
    """A 422: the run's recording is there but cannot be used, and why."""
    return Response(
        422, TEXT, f"cannot {what} this run's recording: {'; '.join(problems)}\n".encode()
    )


def _unplayable(run_dir: RunDir, part: joined.Part) -> str:
    why = part.problem or "it has no header line (yet)"
    return f"{damage.label(run_dir, part.path)}: {why}"


def being_written(cast: Path) -> bool:
    """Whether a recording's writer still holds it (it is complete once its lock is free);
    a file that is no regular file is never opened to ask."""
    if files.problem(cast, sys.maxsize) is not None:
        return False
    try:
        return not wait_complete(cast, 0.0)
    except OSError:
        return False
