"""A run's files read back within bounds: one damaged file must never hang, crash or
exhaust a reader, and so take down `runs`, `replay`, `resume`, `attach` or `serve` for
every run in the folder.

A file is read only if it is a regular file: a FIFO blocks the open (or the read) for
ever, a link to /dev/zero never ends. It is read up to a size (MAX_JSON for run.json,
state.json and the markers, MAX_LOG for an event log): a bigger one is no file ptysup
wrote. JSON nested deeper than Python's parser goes is no JSON (it raised RecursionError,
which no reader caught). Each problem is an OSError whose strerror says what the file is
(`not a regular file (a FIFO)`), so `cannot read PATH: REASON` reads well.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

from ptysup.userfile import open_regular

# run.json holds the task (up to 1 MiB from a --task-file) and every option.
MAX_JSON = 16 << 20
# A week of a busy run logs tens of MB; a log past this is no log ptysup wrote.
MAX_LOG = 512 << 20


def read_bytes(path: Path, limit: int) -> bytes:
    """The bytes of the regular file at `path` (OSError if it is none, or past `limit`)."""
    fd = open_regular(path)
    try:
        if os.fstat(fd).st_size > limit:  # refused unread: its size says enough
            raise _too_big(path, limit)
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:  # it grew meanwhile
        raise _too_big(path, limit)
    return data


def _too_big(path: Path, limit: int) -> OSError:
    return OSError(errno.EFBIG, f"bigger than {limit >> 20} MiB", str(path))


def read_text(path: Path, limit: int) -> str:
    """The file's text (read_bytes; undecodable bytes replaced)."""
    return read_bytes(path, limit).decode("utf-8", errors="replace")


def loads(text: str | bytes) -> Any:
    """json.loads, with JSON nested too deep for Python a ValueError like any bad JSON."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def read_json(path: Path, limit: int = MAX_JSON) -> Any:
    """The JSON value in the file (OSError as read_bytes, ValueError if it is not JSON)."""
    return loads(read_bytes(path, limit))


def problem(exc: OSError | ValueError) -> str:
    """What is wrong with a file, in a few words, from the error reading it."""
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return f"not JSON ({' '.join(str(exc).split())[:80]})"
