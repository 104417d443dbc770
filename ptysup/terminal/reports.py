"""What a terminal writes on stdin by itself: reports, not the person's keys.

Answers to the agent's queries (device attributes `ESC [ ? 1 ; 2 c`, the terminal's name
`ESC P > | tmux 3.3a ESC \\`, the cursor's place, a mode's state, the kitty keyboard
flags, colours) and what it says unasked (focus in/out with mode 1004, a theme change
with mode 2031). Claude Code asks again every time it is continued after Ctrl-Z (seen in
tmux: a `ESC P > | ...` and two `ESC [ ? 1 ; 2 c` a tenth of a second after the resume).
None of these has the form of a key: keys with modifiers (`ESC [ 1 ; 5 A`, the kitty
protocol's `ESC [ 93 ; 5 u`) never start with `?` or `>`, and end in other letters.
"""

from __future__ import annotations

import re

_ONE = (
    rb"\x1b\[(?:I|O|[?>]?[\d;]*[cRnt]|\??\d+;\d+\$y|\?\d*u)"  # CSI: focus, DA, CPR, DSR, DECRPM
    rb"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: colours
    rb"|\x1bP[^\x1b]*\x1b\\"  # DCS: the terminal's name and version, termcap answers
)
REPORT = re.compile(_ONE)
REPORTS = re.compile(rb"(?:" + _ONE + rb")+")
# The start of a report a read cut short (a slow link). Not a lone ESC: that is the Esc key,
# which must reach the agent at once.
_BEGUN = re.compile(rb"\x1b(?:\[[?>]?[\d;]*\$?|\][^\x07\x1b]*\x1b?|P[^\x1b]*\x1b?)")
_LONGEST_BEGUN = 256  # bytes: the longest answer kept whole across reads (a colour, a name)


def report_end(data: bytes, at: int) -> int | None:
    """Where the report starting at `data[at]` ends, or None if none starts there."""
    m = REPORT.match(data, at)
    return m.end() if m is not None else None


def begun(data: bytes, at: int) -> bool:
    """Whether `data[at:]` is the start of a report whose rest is still to be read."""
    return len(data) - at <= _LONGEST_BEGUN and _BEGUN.fullmatch(data, at) is not None
