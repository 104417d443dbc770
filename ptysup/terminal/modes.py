"""The terminal modes the agent switched on, so ptysup can switch them off when it leaves.

A full-screen program killed (or crashing) leaves the person's terminal in the alternate
screen, with the cursor hidden, mouse reporting and keypad mode on. The tracker sees every
chunk of the agent's output (the screen model may skip some under a flood) and costs a few
`bytes.find`s per chunk when no mode sequence is in it. It also tells the typist whether the
agent asked for bracketed paste (mode 2004).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator

# Private modes (DECSET/DECRST `CSI ? n h/l`) whose "on" must not outlive the agent, with
# the value a fresh terminal has: True means on.
_DEFAULTS = {
    1: False,  # application cursor keys
    7: True,  # autowrap
    25: True,  # cursor visible
    47: False,  # alternate screen
    1047: False,
    1049: False,
    1000: False,  # mouse reporting, in all its flavours and encodings
    1001: False,
    1002: False,
    1003: False,
    1005: False,
    1006: False,
    1015: False,
    1016: False,
    1004: False,  # focus events
    2004: False,  # bracketed paste
}
_ALTERNATE = (1049, 1047, 47)  # left first: the rest applies to the main screen
_MODE = re.compile(rb"\x1b\[\?([0-9;]+)([hl])|\x1b([=>])|\x1b\[([<>])([0-9;]*)u")
_TAIL = 24  # bytes kept from a chunk's end: a sequence split across chunks is seen whole
# What _MODE starts with, found by their last byte: `?`, `<`, `>` and `=` are rare in
# terminal output (a memchr each), while ESC and `ESC [` are everywhere in ANSI-heavy
# output, where a search for the whole prefixes costs five passes at a few hundred MB/s.
_PROBES = (
    (b"?", (b"\x1b[?",)),
    (b"<", (b"\x1b[<",)),
    (b">", (b"\x1b[>", b"\x1b>")),
    (b"=", (b"\x1b=",)),
)
_MANY = 64  # more of one probe byte than this in a chunk: search for the prefixes instead


def _find_all(data: bytes, prefix: bytes, start: int = 0) -> Iterator[int]:
    """Every position of `prefix` in `data`, from `start`."""
    i = data.find(prefix, start)
    while i >= 0:
        yield i
        i = data.find(prefix, i + 1)


def _starts(data: bytes) -> list[int]:
    """Where a mode sequence may start in `data` (each prefix of _MODE), in order."""
    starts: list[int] = []
    for byte, prefixes in _PROBES:
        i = data.find(byte)
        seen = 0
        while i >= 0:
            seen += 1
            if seen > _MANY:  # text full of this byte (a row of `=`): the slower way is faster
                for prefix in prefixes:
                    starts.extend(_find_all(data, prefix, max(0, i - len(prefix) + 1)))
                break
            for prefix in prefixes:
                at = i - len(prefix) + 1
                if at >= 0 and data.startswith(prefix, at):
                    starts.append(at)
            i = data.find(byte, i + 1)
    starts.sort()
    return starts


BRACKETED_PASTE = 2004


class ModeTracker:
    """Which modes the agent's output left switched away from a fresh terminal's."""

    def __init__(self) -> None:
        self._modes = dict(_DEFAULTS)
        self._keypad = False  # DECKPAM (ESC =) / DECKPNM (ESC >)
        self._kitty = 0  # kitty keyboard flags pushed (CSI > n u) and not popped (CSI < n u)
        self._tail = b""
        self._lock = threading.Lock()  # fed by the relay thread, read by the run loop's

    def feed(self, data: bytes) -> None:
        """Note the mode changes in a chunk of the agent's output (any size, in order).

        This runs in the relay's thread for every byte the agent prints, so it looks only
        where a mode change can start (see _starts; plain text stops at one memchr for
        ESC) and matches there. Scanning ANSI-heavy output with the regex itself cost the
        relay a third of its throughput, a search for each prefix a fifth (scripts/bench.py);
        a scanning thread of its own was slower still (it holds the GIL the relay needs
        after every read).
        """
        chunk = self._tail + data if self._tail else data
        last = 0
        if b"\x1b" in chunk:
            starts = _starts(chunk)
            if starts:
                with self._lock:
                    for i in starts:
                        m = _MODE.match(chunk, i)
                        if m is not None:
                            last = max(last, m.end())
                            self._apply(m)
        esc = chunk.rfind(b"\x1b", max(last, len(chunk) - _TAIL))
        self._tail = chunk[esc:] if esc >= 0 else b""

    def _apply(self, m: re.Match[bytes]) -> None:
        if m[1] is not None:
            on = m[2] == b"h"
            for number in m[1].split(b";"):
                if number.isdigit() and int(number) in self._modes:
                    self._modes[int(number)] = on
        elif m[3] is not None:
            self._keypad = m[3] == b"="
        elif m[4] == b">":
            self._kitty += 1
        else:
            self._kitty = max(0, self._kitty - int(m[5] or 1))

    def on(self, mode: int) -> bool:
        """Whether private mode `mode` is on now."""
        with self._lock:
            return self._modes.get(mode, False)

    def reset(self) -> bytes:
        """What switches every mode the agent left changed back to a fresh terminal's, and
        resets colours and the scroll region (with the cursor kept where it is)."""
        with self._lock:
            changed = [n for n, on in self._modes.items() if on != _DEFAULTS[n]]
            out = [b"\x1b[?%dl" % n for n in _ALTERNATE if n in changed]
            out += [
                b"\x1b[?%d%s" % (n, b"h" if _DEFAULTS[n] else b"l")
                for n in changed
                if n not in _ALTERNATE
            ]
            if self._keypad:
                out.append(b"\x1b>")
            if self._kitty:
                out.append(b"\x1b[<%du" % self._kitty)
        return b"".join(out) + b"\x1b7\x1b[r\x1b8\x1b[0m"
