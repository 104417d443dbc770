"""The supervisor's answer → a Decision. Only the supervisor's stdout is ever parsed."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass


class Action(str, enum.Enum):
    """What the supervisor decided."""

    COMPLETE = "complete"
    ABORT = "abort"
    CONTINUE = "continue"


@dataclass(frozen=True)
class Decision:
    """One supervisor decision; `marker` is False when the answer had none."""

    action: Action
    content: str
    marker: bool = True


# Decoration a model puts around a marker: fences, emphasis, quotes, list bullets.
_DECOR = r"[\s*_`>#\-]*"
_MARKER = re.compile(
    r"\A(?:```[\w-]*\s*)?" + _DECOR + r"\[\s*(COMPLETE|ABORT|CONTINUE)\s*\]" + _DECOR + r":?",
    re.IGNORECASE,
)
_FENCE_END = re.compile(r"\s*```\s*\Z")


def parse(answer: str) -> Decision:
    """Read the marker at the start of `answer`; no marker means continue with all of it.

    Tolerates leading whitespace, markdown emphasis and fences, and any letter case. The
    fallback for an answer without a marker is the seed's decision: the whole answer is
    the next instruction (the caller logs a warning).
    """
    text = answer.strip()
    m = _MARKER.match(text)
    if m is None:
        return Decision(Action.CONTINUE, _FENCE_END.sub("", text).strip(), marker=False)
    content = text[m.end() :]
    if text.startswith("```"):
        content = _FENCE_END.sub("", content)
    return Decision(Action(m.group(1).lower()), _strip_emphasis(content.strip()))


def _strip_emphasis(content: str) -> str:
    """Drop emphasis left dangling after the marker (`**[CONTINUE]** text**`)."""
    return content.strip("*_").strip()
