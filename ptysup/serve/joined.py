"""A run's recording for replay, whole: a resumed run records each part to a file of its
own (events.cast, events.part2.cast, ...), and the page's player takes one asciicast v2.

The parts are joined as they happened, one after another: the first part's header, then
each part's events with its times shifted to start where the part before ended. A part
that cannot be read (removed, or never started) is left out, as `ptysup replay` does.
"""

from __future__ import annotations

import errno
import json
from collections.abc import Sequence
from pathlib import Path

from ptysup.serve.stream import CastTail, cast_duration


def cast(paths: Sequence[Path]) -> bytes:
    """The recordings at `paths`, in order, as one asciicast v2 file; OSError if none can
    be read. A later part drawn at another size starts with a resize to it."""
    if len(paths) == 1:  # a run never resumed: its file as it is
        return paths[0].read_bytes()
    lines: list[str] = []
    size = ""
    offset = 0.0
    for path in paths:
        tail = CastTail(path)  # skips a line still being written (the live last part)
        events = tail.events()
        while tail.more():
            events += tail.events()
        if tail.header is None:
            continue
        part_size = f"{tail.header.get('width', 80)}x{tail.header.get('height', 24)}"
        if not lines:
            lines.append(json.dumps(tail.header))
        elif part_size != size:
            lines.append(json.dumps([round(offset, 6), "r", part_size]))
        size = part_size
        for t, code, data in events:
            size = str(data) if code == "r" else size
            lines.append(json.dumps([round(offset + float(t), 6), code, data]))
        offset += float(events[-1][0]) if events else 0.0
    if not lines:
        raise FileNotFoundError(errno.ENOENT, "no part of it exists")
    return "".join(line + "\n" for line in lines).encode()


def duration(paths: Sequence[Path]) -> float | None:
    """The length of cast(paths): its parts' lengths added up (None if none has an event)."""
    lengths = [d for d in map(cast_duration, paths) if d is not None]
    return sum(lengths) if lengths else None
