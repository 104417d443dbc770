"""The supervisor's answer → a Decision. Only the supervisor's stdout is ever parsed."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from ptysup.terminal.inject import clean


class Action(str, enum.Enum):
    """What the supervisor decided."""

    COMPLETE = "complete"
    ABORT = "abort"
    CONTINUE = "continue"
    ESCALATE = "escalate"  # only a person can go on


@dataclass(frozen=True)
class Decision:
    """One supervisor decision; `marker` is False when the answer had none."""

    action: Action
    content: str
    marker: bool = True


# Decoration a model puts around a marker: fences, emphasis, quotes, list bullets.
# Each piece is matched on its own, at a known position, by a pattern that cannot
# backtrack into its neighbour: one combined pattern took quadratic time on an answer
# like "```" followed by a megabyte of spaces (the supervisor's stdout may be 1 MiB).
_DECOR = re.compile(r"[\s*_`>#\-]*")
_FENCE_START = re.compile(r"```[\w-]*")
_MARKER = re.compile(r"\[\s*(COMPLETE|ABORT|CONTINUE|ESCALATE)\s*\]", re.IGNORECASE)
_COLON = re.compile(r"[\s*_`>#\-]*:?")


def parse(answer: str) -> Decision:
    """Read the marker at the start of `answer`; no marker means continue with all of it.

    Tolerates leading whitespace, markdown emphasis and fences, and any letter case. The
    fallback for an answer without a marker is the seed's decision: the whole answer is
    the next instruction (the caller logs a warning). The content is cleaned of control
    characters and escape sequences: it is printed and typed, never run by a terminal.
    """
    text = clean(answer).strip()
    found = _marker(text)
    if found is None:
        return Decision(Action.CONTINUE, _drop_closing_fence(text).strip(), marker=False)
    action, end = found
    content = text[end:]
    if text.startswith("```"):
        content = _drop_closing_fence(content)
    return Decision(action, _strip_emphasis(content.strip()))


def _marker(text: str) -> tuple[Action, int] | None:
    """The marker's action and where it (with its decoration) ends; None without one."""
    m = _MARKER.match(text, _skip(_DECOR, text, _skip(_FENCE_START, text, 0)))
    if m is None:
        return None
    return Action(m.group(1).lower()), _skip(_COLON, text, m.end())


def _skip(pattern: re.Pattern[str], text: str, pos: int) -> int:
    """Where a match of `pattern` at `pos` ends (`pos` itself when there is none)."""
    m = pattern.match(text, pos)
    return m.end() if m else pos


def _drop_closing_fence(text: str) -> str:
    """`text` without a closing ``` (and the whitespace around it) at its end."""
    stripped = text.rstrip()
    return stripped[:-3].rstrip() if stripped.endswith("```") else text


def _strip_emphasis(content: str) -> str:
    """Drop emphasis left dangling after the marker (`**[CONTINUE]** text**`)."""
    return content.strip("*_").strip()
