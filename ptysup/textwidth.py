"""The columns text takes in a terminal, counted as Claude Code and ptysup's screen count.

Wide characters take two; marks and format characters none, nor does a character after a
joiner (👨‍👩‍👧 is one two-column character); an emoji selector (U+FE0F) makes a one-column
character two wide (⚠️); a skin tone joins its emoji (👍🏽) and two regional indicators
are one flag (🇺🇸).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator

_ZERO_WIDTH = frozenset({"Mn", "Me", "Cf"})
_JOINER = "\u200d"
_EMOJI_SELECTOR = "\ufe0f"


def _widths(text: str) -> Iterator[int]:
    """The columns each character of TEXT adds."""
    last, joined, flag = 0, False, False
    for c in text:
        half = "\U0001f1e6" <= c <= "\U0001f1ff"  # a regional indicator: two are a flag
        if joined or (half and flag) or "\U0001f3fb" <= c <= "\U0001f3ff":  # 🇺🇸, 👍🏽
            width, joined, flag = 0, False, False
        elif c == _EMOJI_SELECTOR:
            width, last = (1 if last == 1 else 0), 2
        elif unicodedata.category(c) in _ZERO_WIDTH:
            width, joined = 0, c == _JOINER
        else:
            width = last = 2 if half or unicodedata.east_asian_width(c) in "WF" else 1
            flag = half
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
