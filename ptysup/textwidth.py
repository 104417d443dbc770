"""The columns text takes in a terminal, counted as Claude Code and ptysup's screen count.

Wide characters take two; marks and format characters none, nor does a character after a
joiner (👨‍👩‍👧 is one two-column character); an emoji selector (U+FE0F) makes a one-column
character two wide (⚠️).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator

_ZERO_WIDTH = frozenset({"Mn", "Me", "Cf"})
_JOINER = "\u200d"
_EMOJI_SELECTOR = "\ufe0f"


def _widths(text: str) -> Iterator[int]:
    """The columns each character of TEXT adds."""
    last, joined = 0, False
    for c in text:
        if joined:
            width, joined = 0, False
        elif c == _EMOJI_SELECTOR:
            width, last = (1 if last == 1 else 0), 2
        elif unicodedata.category(c) in _ZERO_WIDTH:
            width, joined = 0, c == _JOINER
        else:
            width = last = 2 if unicodedata.east_asian_width(c) in "WF" else 1
        yield width


def columns(text: str) -> int:
    """The columns TEXT takes."""
    return len(text) if text.isascii() else sum(_widths(text))


def fit(text: str, limit: int) -> str:
    """TEXT cut to at most LIMIT columns, with `…` where it was cut."""
    if columns(text) <= limit:
        return text
    used, end = 0, 0
    for i, width in enumerate(_widths(text)):
        if used + width > limit - 1:  # the `…` takes the last column
            break
        used, end = used + width, i + 1
    return text[:end] + "…"
