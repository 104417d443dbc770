"""The attach socket's messages: a kind byte, a 4-byte big-endian length, the payload.

run → viewer
  H  hello, JSON: {"run_id", "rows", "cols"}: the agent's terminal size
  O  output bytes: first the current screen (see snapshot.py), then the agent's output
     exactly as the run's own terminal gets it
  E  end, JSON: {"outcome", "exit_code", "reason"}: the run is over
  X  a one-line text: why the run dropped this viewer (it fell too far behind)
  R  reply to a steering request, JSON: {"ok": bool, "message": str}; then the run closes
viewer → run
  C  connect, JSON: {"rw": bool}; must come first
  I  keys for the agent (only from a viewer that connected with rw)
  S  a steering request instead of C (see steerproto.py): the one message of its connection
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from typing import Any

HEADER = struct.Struct(">cI")
MAX_PAYLOAD = 16 * 1024 * 1024

HELLO, OUTPUT, END, DROPPED = b"H", b"O", b"E", b"X"
CONNECT, INPUT, STEER = b"C", b"I", b"S"
REPLY = b"R"


class WireError(Exception):
    """A message that breaks the format (the other side is not ptysup)."""


def frame(kind: bytes, payload: bytes) -> bytes:
    """One message."""
    return HEADER.pack(kind, len(payload)) + payload


def json_frame(kind: bytes, value: dict[str, Any]) -> bytes:
    """One message whose payload is JSON."""
    return frame(kind, json.dumps(value).encode())


class Reader:
    """Messages out of a byte stream that may cut them anywhere."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Every (kind, payload) that `data` completes."""
        self._buf += data
        while len(self._buf) >= HEADER.size:
            kind, size = HEADER.unpack_from(self._buf)
            if size > MAX_PAYLOAD:
                raise WireError(f"a message of {size} bytes")
            end = HEADER.size + size
            if len(self._buf) < end:
                return
            payload = bytes(self._buf[HEADER.size : end])
            del self._buf[:end]
            yield kind, payload
