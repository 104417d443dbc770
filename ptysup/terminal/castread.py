"""A recording (asciicast v2) read back tolerantly: its header, its well-formed events, and
how many lines were not.

A recording is cut when the disk fills or the machine dies mid-write, and may be garbled
by anything that touched the file. A line that is not an event is skipped and counted
(the rest of the terminal still replays); a file whose first line is no header is no
recording at all: CastError, one line saying so.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ptysup.logread import is_number
from ptysup.userfile import open_regular

_SIZE = re.compile(r"([1-9][0-9]{0,4})x([1-9][0-9]{0,4})")  # a resize: COLSxROWS
# Rows or columns: more is no terminal, and a screen model of 99999x99999 takes half a
# minute to clear.
_MAX_SIDE = 10_000
# A line's length: an output frame is at most 1 MiB of bytes, 6 MiB once JSON-escaped.
MAX_LINE = 16 << 20


class CastError(ValueError):
    """The file is no asciicast v2 recording; the message is one line."""


Event = tuple[float, str, str]


@dataclass(frozen=True)
class CastRead:
    """A recording: its header, its events in order, and the lines that were skipped."""

    header: dict[str, Any]
    events: list[Event]
    skipped: int = 0


def cast_event(item: Any) -> Event | None:
    """One decoded line as an event (time, code, data), or None if it is not one."""
    if not isinstance(item, list) or len(item) != 3:
        return None
    t, code, data = item
    if not is_number(t) or not isinstance(code, str) or not isinstance(data, str):
        return None
    if code == "r":
        size = _SIZE.fullmatch(data)
        if size is None or max(int(side) for side in size.groups()) > _MAX_SIDE:
            return None
    return float(t), code, data


def header_of(item: Any) -> dict[str, Any] | None:
    """A decoded first line as the recording's header (its size usable), or None."""
    if not isinstance(item, dict):
        return None
    for side in (item.get("width"), item.get("height")):
        if not isinstance(side, int) or isinstance(side, bool) or not 0 < side <= _MAX_SIDE:
            return None
    return item


def load_cast(path: Path) -> CastRead:
    """The recording at `path`; CastError if it has no header, OSError if unreadable
    (also when it is no regular file: a FIFO blocks, /dev/zero never ends)."""
    with os.fdopen(open_regular(path), encoding="utf-8", errors="replace") as f:
        header = header_of(_decode(f.readline(MAX_LINE)))
        if header is None:
            raise CastError(f"{path} is not an asciicast v2 recording (no header line)")
        events: list[Event] = []
        skipped = 0
        for line in _lines(f):
            if line is not None and not line.strip():
                continue
            event = cast_event(_decode(line)) if line is not None else None
            if event is not None:
                events.append(event)
            elif line is None or line.endswith("\n"):  # an unfinished last line is no damage
                skipped += 1
    return CastRead(header, events, skipped)


def _lines(f: TextIO) -> Iterator[str | None]:
    """The file's lines; None for one longer than MAX_LINE (read past, never kept whole:
    a file of zeros with no newline would fill the memory)."""
    while line := f.readline(MAX_LINE):
        if len(line) < MAX_LINE or line.endswith("\n"):
            yield line
            continue
        while (rest := f.readline(MAX_LINE)) and not rest.endswith("\n"):
            pass
        yield None


def _decode(line: str | None) -> Any:
    if line is None:
        return None
    try:
        return json.loads(line)
    except (ValueError, RecursionError):  # nesting too deep for Python: no event either
        return None
