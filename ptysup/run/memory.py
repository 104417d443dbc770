"""The run so far, as the supervisor is reminded of it: each decision (its iteration, action
and text, cut) and what came of it (the checks, a repeat, ptysup's refusal, the person's own
messages). Every decision is a fresh supervisor process that sees one screen; this is its
memory of the rounds before.

An event-log sink: it learns from the events the run writes anyway (redacted already), so
a resumed run's memory is its earlier events read again (`replay`).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ptysup.events import Learner, shown

MAX_DECISIONS = 8  # the last decisions recalled (the issue asks for at least 5)
MAX_TEXT = 200  # characters of a decision's text recalled
MAX_OUTCOME = 160  # characters of one thing that came of it
MAX_OUTCOMES = 5  # things that came of one decision, then how many more
MAX_BYTES = 6_000  # the whole section; the oldest decisions go first


@dataclass
class _Said:
    """What came of one decision: the last few things, and how many came before them."""

    last: list[str] = field(default_factory=list)
    earlier: int = 0

    def add(self, text: str) -> None:
        self.last.append(text)
        if len(self.last) > MAX_OUTCOMES:
            self.last.pop(0)
            self.earlier += 1

    def text(self) -> str:
        more = [f"{self.earlier} thing(s) before"] if self.earlier else []
        return "; ".join([*more, *self.last])


@dataclass
class _Record:
    iteration: int
    action: str
    text: str
    said: _Said = field(default_factory=_Said)

    def line(self) -> str:
        head = f"- #{self.iteration} {self.action.upper()}"
        if self.text:
            head += f' "{shown(self.text, MAX_TEXT)}"'
        return head + (f" → {self.said.text()}" if self.said.last else "")


def _command(argv: Any) -> str:
    words = [str(a) for a in argv] if isinstance(argv, list) else [str(argv or "?")]
    return shown(shlex.join(words), MAX_OUTCOME)


def _verify(f: Mapping[str, Any]) -> str:
    cmd = f"`{_command(f.get('command'))}`"
    if f.get("passed"):
        return f"check {cmd} passed"
    code = f.get("exit_code")
    how = "did not finish" if code is None else f"exited {code}"
    return f"check {cmd} {how} (ptysup typed the failure back to the agent)"


def _tamper(f: Mapping[str, Any]) -> str:
    files = ", ".join(str(p) for p in f.get("files") or ())
    verdict = f.get("verdict")
    if verdict == "unchecked":
        return f"protected files changed ({shown(files, MAX_OUTCOME)}): could not be checked"
    if verdict == "passed":
        return f"protected files changed ({shown(files, MAX_OUTCOME)}), the originals still pass"
    done = "the run escalated" if verdict == "escalated" else "[COMPLETE] refused"
    return f"{done}: protected files changed ({shown(files, MAX_OUTCOME)}), the originals fail"


def _outcome(name: str, f: Mapping[str, Any]) -> str | None:
    """What an event says about the last decision, in a few words; None: nothing."""
    if name == "verify":
        return _verify(f)
    if name == "tamper":
        return _tamper(f)
    if name == "second_opinion":
        said = f"[{str(f.get('action') or '?').upper()}] {f.get('content') or ''}".strip()
        return (
            f'the second opinion ({shown(f.get("command"), 60)}) said: "{shown(said, MAX_OUTCOME)}"'
        )
    if name == "repeat":
        return f"the same round again ({shown(f.get('count'))}x in a row)"
    if name == "person_prompt":
        text = f.get("text")
        if not text:
            return "the person sent the agent a message"
        return f'the person said: "{shown(text, MAX_OUTCOME)}"'
    if name == "escalation":
        return f"escalated to a person: {shown(f.get('reason', ''), MAX_OUTCOME)}"
    if name == "step_end" and f.get("outcome") == "complete":
        return f"step {shown(f.get('id'))} done"
    if name == "step_start":
        return f"step {shown(f.get('id'))} began"
    if name == "turn_end" and f.get("kind") not in ("stop", "screen", "quiet", None):
        return f"the agent's turn ended: {shown(f.get('kind'))}"
    return None


class RunMemory(Learner):
    """The decisions so far and what came of each (an event-log sink)."""

    def __init__(self, max_decisions: int = MAX_DECISIONS, max_bytes: int = MAX_BYTES) -> None:
        self._max = max_decisions
        self._max_bytes = max_bytes
        self._records: list[_Record] = []
        self._before = _Said()  # what came before the first decision
        self._dropped = 0  # decisions no longer kept

    def learn(self, name: str, f: Mapping[str, Any]) -> None:
        """Take one event in."""
        if name == "decision":
            iteration = f.get("iteration")
            self._records.append(
                _Record(
                    iteration if isinstance(iteration, int) else len(self._records) + 1,
                    str(f.get("action") or "?"),
                    str(f.get("content") or ""),
                )
            )
            if len(self._records) > self._max:
                self._records.pop(0)
                self._dropped += 1
            return
        said = _outcome(name, f)
        if said is None:
            return
        (self._records[-1].said if self._records else self._before).add(said)

    def render(self) -> list[str]:
        """The section's lines (within the byte bound); empty before anything happened."""
        if not self._records and not self._before.last:
            return []
        lines = [f"- before the first decision: {self._before.text()}"] * bool(self._before.last)
        records = [r.line() for r in self._records]
        dropped = self._dropped
        while records and _size([*lines, *records]) > self._max_bytes:
            records.pop(0)
            dropped += 1
        head = ["The run so far (each decision, then what came of it):"]
        if dropped:
            head.append(f"({dropped} earlier decision(s) not shown)")
        return head + lines + records


def _size(lines: list[str]) -> int:
    return sum(len(line.encode()) + 1 for line in lines)
