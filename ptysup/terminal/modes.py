"""The terminal modes the agent switched on, so ptysup can switch them off when it leaves.

A full-screen program killed (or crashing) leaves the person's terminal in the alternate
screen, with the cursor hidden, mouse reporting and keypad mode on. The tracker sees every
chunk of the agent's output (the screen model may skip some under a flood) and costs a few
`bytes.find`s per chunk when no mode sequence is in it. It also tells the typist whether the
agent asked for bracketed paste (mode 2004).
"""

from __future__ import annotations

import functools
import re
import threading

from ptysup.terminal.probes import starts

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
    2026: False,  # synchronized output (Codex draws every frame inside one)
}
_ALTERNATE = (1049, 1047, 47)  # left first: the rest applies to the main screen
_ERASING = (*_ALTERNATE, 3)  # screen switches and DECCOLM (80/132 columns): feed() says so
# DECSET/DECRST, keypad, kitty keyboard push/pop, xterm's modifyOtherKeys (CSI > 4 ; n m).
_MODE = re.compile(
    rb"\x1b\[\?([0-9;]+)([hl])|\x1b([=>])|\x1b\[([<>])([0-9;]*)u|\x1b\[>4(?:;([0-9]*))?m"
)
_TAIL = 24  # bytes kept from a chunk's end: a sequence split across chunks is seen whole
# What _MODE starts with, found by their last byte: `?`, `<`, `>` and `=` are rare in
# terminal output, while ESC and `ESC [` are everywhere in ANSI-heavy output (see probes).
_PROBES = (
    (b"?", (b"\x1b[?",)),
    (b"<", (b"\x1b[<",)),
    (b">", (b"\x1b[>", b"\x1b>")),
    (b"=", (b"\x1b=",)),
)


BRACKETED_PASTE = 2004


@functools.lru_cache(maxsize=256)
def _private_modes(numbers: bytes, on: bool) -> tuple[tuple[tuple[int, bool], ...], bool]:
    """The tracked modes a `CSI ? numbers h/l` sets, and whether it switches screens (or
    the column mode, which clears the screen and its margins too). An agent repeats a few
    (the cursor's visibility, synchronized output) in every frame: each is parsed once."""
    given = [int(n) for n in numbers.split(b";") if n.isdigit() and len(n) <= 5]
    modes = [n for n in given if n in _DEFAULTS]
    return tuple((n, on) for n in modes), any(n in _ERASING for n in given)


class ModeTracker:
    """Which modes the agent's output left switched away from a fresh terminal's."""

    def __init__(self) -> None:
        self._modes = dict(_DEFAULTS)
        self._keypad = False  # DECKPAM (ESC =) / DECKPNM (ESC >)
        self._kitty = 0  # kitty keyboard flags pushed (CSI > n u) and not popped (CSI < n u)
        self._other_keys = False  # modifyOtherKeys on (Codex sets it with the kitty push)
        self._tail = b""
        self._lock = threading.Lock()  # fed by the relay thread, read by the run loop's

    def feed(self, data: bytes) -> bool:
        """Note the mode changes in a chunk of the agent's output (any size, in order), and
        say whether it switched to or from the alternate screen (which the status line
        must then draw again: the other screen has a row of its own).

        This runs in the relay's thread for every byte the agent prints, so it looks only
        where a mode change can start (see probes; plain text stops at one memchr for
        ESC) and matches there. Scanning ANSI-heavy output with the regex itself cost the
        relay a third of its throughput, a search for each prefix a fifth (scripts/bench.py);
        a scanning thread of its own was slower still (it holds the GIL the relay needs
        after every read).
        """
        chunk = self._tail + data if self._tail else data
        last = 0
        switched = False
        if b"\x1b" in chunk:
            found = starts(chunk, _PROBES)
            if found:
                with self._lock:
                    for i in found:
                        m = _MODE.match(chunk, i)
                        if m is not None:
                            last = max(last, m.end())
                            switched |= self._apply(m)
        esc = chunk.rfind(b"\x1b", max(last, len(chunk) - _TAIL))
        self._tail = chunk[esc:] if esc >= 0 else b""
        return switched

    def _apply(self, m: re.Match[bytes]) -> bool:
        """Apply one mode sequence; whether it switched screens."""
        if m[1] is not None:
            changes, switched = _private_modes(m[1], m[2] == b"h")
            for number, on in changes:
                self._modes[number] = on
            return switched
        if m[3] is not None:
            self._keypad = m[3] == b"="
        elif m[4] is None:  # modifyOtherKeys: CSI > 4 m and CSI > 4 ; 0 m are off
            self._other_keys = int(m[6] or 0) > 0
        elif m[4] == b">":
            self._kitty += 1
        else:
            self._kitty = max(0, self._kitty - int(m[5] or 1))
        return False

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
            if self._other_keys:
                out.append(b"\x1b[>4;0m")
        return b"".join(out) + b"\x1b7\x1b[r\x1b8\x1b[0m"
