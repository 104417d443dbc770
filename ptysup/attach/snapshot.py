"""The screen as bytes that draw it: what a viewer sees first when it attaches.

The screen model holds every cell with its attributes; this writes them out as a
terminal would need them to show the same screen (rows at absolute positions, colours,
the scroll region, the cursor where it is, visible or not), so the live bytes that
follow land where the agent meant them. Nothing here is sent to the agent.
"""

from __future__ import annotations

from typing import Any

from pyte import graphics
from pyte import modes as mo

_FG = {name: code for code, name in {**graphics.FG_ANSI, **graphics.FG_AIXTERM}.items()}
_BG = {name: code for code, name in {**graphics.BG_ANSI, **graphics.BG_AIXTERM}.items()}
_FLAGS = (("bold", 1), ("italics", 3), ("underscore", 4), ("blink", 5), ("reverse", 7))


def _colour(value: str, names: dict[str, int], extended: int) -> list[str]:
    if value == "default":
        return []
    if value in names:
        return [str(names[value])]
    try:  # pyte keeps 256-colour and true-colour values as hex
        rgb = bytes.fromhex(value)
    except ValueError:
        return []
    return [str(extended), "2", *map(str, rgb)] if len(rgb) == 3 else []


def sgr(char: Any) -> bytes:
    """The SGR sequence that sets `char`'s attributes from a reset."""
    params = ["0"]
    params += [str(code) for name, code in _FLAGS if getattr(char, name)]
    if char.strikethrough:
        params.append("9")
    params += _colour(char.fg, _FG, 38)
    params += _colour(char.bg, _BG, 48)
    return f"\x1b[{';'.join(params)}m".encode()


def render(screen: Any, alternate: bool = False) -> bytes:
    """Bytes that make a terminal of the same size show `screen` (a pyte Screen)."""
    out = [b"\x1b[0m"]
    if alternate:
        out.append(b"\x1b[?1049h")
    out.append(b"\x1b[r\x1b[H\x1b[2J")
    blank = screen.default_char
    for y in range(screen.lines):
        line = screen.buffer[y]
        cells = [line[x] for x in range(screen.columns)]
        while cells and cells[-1] == blank:
            cells.pop()
        if not cells:
            continue
        out.append(b"\x1b[%d;1H" % (y + 1))
        current = None
        for char in cells:
            if not char.data:  # the second half of a wide character
                continue
            attrs = char._replace(data=" ")
            if attrs != current:
                out.append(sgr(char))
                current = attrs
            out.append(char.data.encode("utf-8", "replace"))
    margins = screen.margins
    if margins is not None:
        out.append(b"\x1b[%d;%dr" % (margins.top + 1, margins.bottom + 1))
    cursor = screen.cursor
    out.append(sgr(cursor.attrs))
    out.append(b"\x1b[%d;%dH" % (cursor.y + 1, min(cursor.x, screen.columns - 1) + 1))
    out.append(b"\x1b[?25h" if mo.DECTCEM in screen.mode else b"\x1b[?25l")
    return b"".join(out)
