"""A run's recording for replay, whole: a resumed run records each part to a file of its
own (events.cast, events.part2.cast, ...), and the page's player takes one asciicast v2.

Each part is looked at first (scan): a part that is no recording, or no regular file, or
too big for a page, says why; its lines that are no event (garbled, cut by a full disk)
are counted. The parts that can be replayed are then joined as they happened, one after
another, read again line by line as they are sent: the first part's header, then each
part's events with its times shifted to start where the part before ended. A part that
does not exist (removed, or never started) is left out, as `ptysup replay` does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO

from ptysup.serve import files
from ptysup.terminal.castread import cast_event, header_of

NO_HEADER = "not an asciicast v2 recording (no header line)"


@dataclass(frozen=True)
class Part:
    """One part's recording as serve found it, and where its scan stopped."""

    path: Path
    problem: str | None = None  # why it cannot be replayed (None: it can, or may soon)
    header: dict[str, Any] | None = None  # None: no whole first line yet (or no file)
    duration: float = 0.0  # the time of its last event
    skipped: int = 0  # lines that are no event (a last line still being written is not)
    exists: bool = True
    inode: int = 0
    offset: int = 0  # the end of its last whole line: a later scan goes on from here

    @property
    def playable(self) -> bool:
        """It has a header and nothing wrong: the player can show it."""
        return self.header is not None and self.problem is None


def scan(path: Path, after: Part | None = None) -> Part:
    """The recording at `path`, read through; from where the scan `after` stopped if the
    file is the same one and has only grown (a live run's is scanned again and again)."""
    try:
        f = files.open_regular(path, files.CAST_MAX)
    except FileNotFoundError:
        return Part(path, exists=False)
    except (OSError, files.Damaged) as exc:
        return Part(path, _reason(exc))
    with f:
        st = os.fstat(f.fileno())
        fresh = Part(path, inode=st.st_ino)
        part = after if after is not None and _goes_on(after, st) else fresh
        f.seek(part.offset)
        try:
            return _read_on(f, part)
        except OSError as exc:
            return replace(part, problem=_reason(exc))


def _goes_on(after: Part, st: os.stat_result) -> bool:
    """Whether a scan may go on from `after`: the same file, only grown, nothing wrong."""
    return after.problem is None and after.inode == st.st_ino and after.offset <= st.st_size


def _read_on(f: BinaryIO, part: Part) -> Part:
    header, duration, skipped, offset = part.header, part.duration, part.skipped, part.offset
    for line in f:
        if not line.endswith(b"\n"):
            break  # still being written (or cut by a full disk): not read, not counted
        offset += len(line)
        item = decode(line)
        if header is None:
            header = header_of(item)
            if header is None:
                return replace(part, problem=NO_HEADER, offset=offset)
            continue
        event = cast_event(item)
        if event is not None:
            duration = event[0]
        elif line.strip():
            skipped += 1
    return replace(part, header=header, duration=duration, skipped=skipped, offset=offset)


def decode(line: bytes) -> Any:
    """One line's JSON, or None (not JSON, or nested deeper than the decoder goes)."""
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def _reason(exc: Exception) -> str:
    if isinstance(exc, OSError):
        return f"cannot be read: {exc.strerror or exc}"
    return str(exc)


def duration(parts: Sequence[Part]) -> float | None:
    """The length of the joined recording (None if no part can be replayed)."""
    playable = [p.duration for p in parts if p.playable]
    return sum(playable) if playable else None


def cast_lines(parts: Sequence[Part]) -> Iterator[bytes]:
    """The replayable parts joined into one asciicast v2, line by line. A later part drawn
    at another size starts with a resize to it."""
    playable = [p for p in parts if p.playable]
    size = ""
    offset = 0.0
    for n, part in enumerate(playable):
        assert part.header is not None
        part_size = f"{part.header.get('width', 80)}x{part.header.get('height', 24)}"
        if n == 0:
            yield _line(part.header)
        elif part_size != size:
            yield _line([round(offset, 6), "r", part_size])
        size = part_size
        for t, code, data in _events(part.path):
            size = data if code == "r" else size
            yield _line([round(offset + t, 6), code, data])
        offset += part.duration


def _events(path: Path) -> Iterator[tuple[float, str, str]]:
    """A part's events, read again (its header skipped; what cannot be read ends it)."""
    try:
        numbered = files.lines(path, files.CAST_MAX)
        next(numbered, None)
        for _, line in numbered:
            event = cast_event(decode(line))
            if event is not None:
                yield event
    except (OSError, files.Damaged):
        return  # changed since it was scanned: what was sent is what there was


def _line(item: Any) -> bytes:
    return (json.dumps(item, ensure_ascii=False) + "\n").encode()
