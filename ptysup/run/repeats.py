"""Spinning: the same instruction getting the same answer, round after round.

A round is one instruction typed into the agent and what came of it: the agent's answer
at the turn end, the files it changed (a fingerprint of the repository, from an injected
function), the decision that led to the instruction and the --verify failures it reported.
Two rounds are the same when all of these are, after `normalise` has taken out what
changes by itself (spinners, timers, token counters, costs, request ids). Anything else
that differs (a word of the answer, one file) is progress, however slow: the streak
starts again.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ptysup.config import DEFAULT_MAX_REPEATS

EXCERPT = 160  # characters of the instruction or the answer quoted in notes and events

# A line that starts with a spinner glyph is the agent's status, not its answer
# ("✻ Worked for 12s", "⠋ Thinking…").
_STATUS_LINE = re.compile(r"^\s*[\u2800-\u28ff✻✽✶✳✢✺✹✸✷◐◓◑◒]")
_VOLATILE = (
    # A request or message id differs at every call, even for the same error.
    (re.compile(r"\b(?:req|msg|toolu)_[A-Za-z0-9]+"), "<id>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I), "<id>"),
    (re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?(?:\.\d+)?\b"), "<clock>"),
    (re.compile(r"[↑↓]?\s*\d+(?:[.,]\d+)?\s*[kKmM]?\s*tokens?\b"), "<tokens>"),
    (re.compile(r"\$\s?\d+(?:\.\d+)?"), "<cost>"),
    (re.compile(r"\.{2,}|…+"), "…"),  # progress dots, however many
    (
        re.compile(
            r"\b(?:\d+(?:\.\d+)?\s*(?:ms|s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?)\b\s*)+"
        ),
        "<time>",
    ),
)
_SPACES = re.compile(r"[ \t\u00a0]+")
_BLANKS = re.compile(r"\n{2,}")


def normalise(text: str) -> str:
    """`text` without what changes from one identical turn to the next: status lines
    (spinners), durations, clock times, token counts, costs, ids; spaces collapsed."""
    lines = [ln for ln in text.splitlines() if not _STATUS_LINE.match(ln)]
    out = "\n".join(lines)
    for pattern, stand_in in _VOLATILE:
        out = pattern.sub(stand_in, out)
    out = "\n".join(_SPACES.sub(" ", ln).strip() for ln in out.splitlines())
    return _BLANKS.sub("\n", out).strip()


def new_text(before: str, after: str) -> str:
    """The lines of the screen `after` that the screen `before` did not show (what the
    agent printed since; a scrolled screen's kept lines are not new)."""
    old, new = before.splitlines(), after.splitlines()
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    added = [
        line
        for tag, _, _, j1, j2 in matcher.get_opcodes()
        if tag in ("insert", "replace")
        for line in new[j1:j2]
    ]
    return "\n".join(added)


@dataclass(frozen=True)
class Round:
    """One instruction and what came of it, normalised."""

    instruction: str
    answer: str
    files: str | None = None  # the repository's fingerprint; None: not known
    decision: str | None = None  # the decision's action that typed the instruction
    verify: tuple[str, ...] = ()  # the --verify failures that typed it
    api_error: bool = False  # the turn ended in an API error (the answer is the error)

    @classmethod
    def of(
        cls,
        instruction: str,
        answer: str,
        files: str | None = None,
        decision: str | None = None,
        verify: Sequence[str] = (),
        api_error: bool = False,
    ) -> Round:
        """A round from raw text (normalised here)."""
        return cls(
            normalise(instruction),
            normalise(answer),
            files,
            decision,
            tuple(normalise(v) for v in verify),
            api_error,
        )


@dataclass(frozen=True)
class Repeat:
    """The same round `count` times in a row (2 or more)."""

    count: int
    round: Round

    def unchanged(self) -> tuple[str, ...]:
        """What did not change, in words a supervisor or a person reads."""
        r = self.round
        parts = [f"the instruction typed ({_quote(r.instruction)})"]
        what = "the API error" if r.api_error else "the agent's answer"
        parts.append(f"{what} ({_quote(r.answer) if r.answer else 'nothing'})")
        if r.files is not None:
            parts.append("the files (git status and diff)")
        if r.verify:
            parts.append(f"the failing --verify ({_quote(r.verify[0])})")
        if r.decision is not None:
            parts.append(f"the decision before it ([{r.decision.upper()}])")
        return tuple(parts)

    def what(self) -> list[str]:
        """What repeated, as the `repeat` event names it."""
        r = self.round
        names = ["instruction", "api_error" if r.api_error else "answer"]
        names += ["files"] * (r.files is not None) + ["verify"] * bool(r.verify)
        return names + ["decision"] * (r.decision is not None)

    def note(self, max_repeats: int) -> str:
        """Said to the supervisor in its next prompt, so that it changes course."""
        left = max_repeats - self.count
        then = (
            "One more identical round ends the run as an escalation to a person."
            if left <= 1
            else f"{left} more identical rounds end the run as an escalation to a person."
        )
        return (
            f"Repeating: the same instruction got the same answer {self.count} times in a "
            f"row. Nothing changed: {'; '.join(self.unchanged())}. {then} Change course: "
            "a different instruction, [ESCALATE] if only a person can help, or [ABORT]."
        )

    def reason(self) -> str:
        """Why the run escalates: what repeated."""
        r = self.round
        if r.api_error:
            head = f"the agent hit the same API error {self.count} times in a row"
        else:
            head = f"the same instruction got the same answer {self.count} times in a row"
        return f"spinning: {head}; unchanged: {'; '.join(self.unchanged())}"

    def fields(self) -> dict[str, Any]:
        """The `repeat` event's fields (without max_repeats)."""
        r = self.round
        return {
            "count": self.count,
            "what": self.what(),
            "instruction": r.instruction[:EXCERPT],
            "answer": r.answer[:EXCERPT],
        }


def _quote(text: str) -> str:
    line = " ".join(text.split())
    return f'"{line[:EXCERPT]}…"' if len(line) > EXCERPT else f'"{line}"'


class RepeatDetector:
    """Counts identical rounds in a row; `max_repeats` 0 is off (nothing repeats)."""

    def __init__(
        self,
        max_repeats: int = DEFAULT_MAX_REPEATS,
        fingerprint: Callable[[], str | None] = lambda: None,
    ) -> None:
        self.max_repeats = max_repeats
        self._fingerprint = fingerprint
        self._last: Round | None = None
        self._count = 0

    def observe(
        self,
        instruction: str,
        answer: str,
        decision: str | None = None,
        verify: Sequence[str] = (),
        api_error: bool = False,
    ) -> Repeat | None:
        """Record a round; the repeat when it is the same as the rounds before it."""
        if not self.max_repeats:
            return None
        files = self._fingerprint()
        current = Round.of(instruction, answer, files, decision, verify, api_error)
        self._count = self._count + 1 if current == self._last else 1
        self._last = current
        return Repeat(self._count, current) if self._count >= 2 else None

    def exhausted(self, repeat: Repeat) -> bool:
        """Whether `repeat` is one too many: the run stops."""
        return 0 < self.max_repeats <= repeat.count

    def reset(self) -> None:
        """Forget the rounds so far (a person took over: what follows is new)."""
        self._last, self._count = None, 0
