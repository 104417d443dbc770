"""An agent's questions: read them, turn the supervisor's reply into the agent's answers.

Each agent's profile turns its question hook into an `Ask` with the `AnswerFormat` its
agent reads. The pinned Claude Code (2.1.197), for its AskUserQuestion tool, takes the
answers from a PreToolUse hook's output (`updatedInput.answers`, keyed by question text)
and gives them to the model as the tool's result: no picker is shown. A hook that prints
nothing leaves the picker to the person; `permissionDecision: deny` rejects the call with
a reason the model reads.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ptysup.agents.events import HookEvent

ASK_TOOL = "AskUserQuestion"


class AnswerFormat(Protocol):
    """What a waiting question hook prints for its agent."""

    def answer(self, tool_input: Mapping[str, Any], answers: Mapping[str, str]) -> str:
        """The hook's output that gives the agent these answers (question → answer)."""
        ...

    def deny(self, reason: str) -> str:
        """The hook's output that refuses the question; the model reads `reason`."""
        ...


class ClaudeAnswers:
    """Claude Code's PreToolUse output: `updatedInput.answers`, or a denial."""

    def answer(self, tool_input: Mapping[str, Any], answers: Mapping[str, str]) -> str:
        updated = {**tool_input, "answers": dict(answers)}
        return _pre_tool_use({"permissionDecision": "allow", "updatedInput": updated})

    def deny(self, reason: str) -> str:
        return _pre_tool_use({"permissionDecision": "deny", "permissionDecisionReason": reason})


def _pre_tool_use(decision: dict[str, Any]) -> str:
    out = {"hookSpecificOutput": {"hookEventName": "PreToolUse", **decision}}
    return json.dumps(out, ensure_ascii=False)


CLAUDE_ANSWERS = ClaudeAnswers()


@dataclass(frozen=True)
class Option:
    """One choice of a question."""

    label: str
    description: str = ""


@dataclass(frozen=True)
class Question:
    """One question as the agent asked it."""

    text: str
    header: str = ""
    options: tuple[Option, ...] = ()
    multi_select: bool = False

    def to_json(self) -> dict[str, Any]:
        """The question for the event log."""
        return {
            "question": self.text,
            "header": self.header,
            "multi_select": self.multi_select,
            "options": [o.label for o in self.options],
        }


@dataclass
class Ask:
    """The agent asks: its questions, the tool input as sent, and the hook to answer."""

    questions: tuple[Question, ...]
    tool_input: Mapping[str, Any]
    event: HookEvent
    fmt: AnswerFormat = CLAUDE_ANSWERS  # what the agent reads from the hook
    decided: bool = False  # ptysup answered or refused it (else the person's picker did)

    @property
    def tool_use_id(self) -> str:
        """Which tool call this is (the PostToolUse hook of the same call carries it)."""
        return str(self.event.payload.get("tool_use_id", ""))

    def answer(self, answers: Mapping[str, str]) -> bool:
        """Give the agent these answers (question text → label(s) or free text)."""
        return self._send(self.fmt.answer(self.tool_input, answers))

    def deny(self, reason: str) -> bool:
        """Reject the question; the model reads `reason`."""
        return self._send(self.fmt.deny(reason))

    def leave_to_person(self) -> bool:
        """Reply nothing: Claude Code shows its picker to the person."""
        return self.event.reply is not None and self.event.reply.send("")

    def _send(self, text: str) -> bool:
        if self.event.reply is None:
            return False
        sent = self.event.reply.send(text)
        self.decided = self.decided or sent
        return sent


def ask_from(
    event: HookEvent, tool: str = ASK_TOOL, fmt: AnswerFormat = CLAUDE_ANSWERS
) -> Ask | None:
    """The question in a waiting PreToolUse hook for the question tool `tool`, else None
    (the tool's input holds `questions`, as Claude Code's, Codex's and Gemini's do)."""
    p = event.payload
    if event.reply is None or event.name != "PreToolUse" or p.get("tool_name") != tool:
        return None
    tool_input = p.get("tool_input")
    if not isinstance(tool_input, dict):
        return None
    return Ask(parse_questions(tool_input.get("questions")), tool_input, event, fmt)


def person_answers(payload: Mapping[str, Any]) -> dict[str, str] | None:
    """The answers in an AskUserQuestion PostToolUse payload (what the picker returned)."""
    response = payload.get("tool_response")
    answers = response.get("answers") if isinstance(response, dict) else None
    return {str(k): str(v) for k, v in answers.items()} if isinstance(answers, dict) else None


def parse_questions(raw: object) -> tuple[Question, ...]:
    """The questions of the tool's input; anything malformed is skipped."""
    if not isinstance(raw, list):
        return ()
    found = []
    for q in raw:
        if not isinstance(q, dict) or not isinstance(q.get("question"), str):
            continue
        options = tuple(
            Option(str(o.get("label", "")), str(o.get("description", "")))
            for o in q.get("options") or ()
            if isinstance(o, dict) and o.get("label")
        )
        found.append(
            Question(q["question"], str(q.get("header", "")), options, bool(q.get("multiSelect")))
        )
    return tuple(found)


def answers_for(questions: Sequence[Question], reply: str) -> dict[str, str]:
    """The supervisor's reply as the answer to every question.

    A reply that is an option's label (any case) selects it; for a multi-select question,
    labels separated by commas select each (joined with ", " as Claude Code does).
    Anything else is the free-text answer, as a person could type it under "Other".
    With several questions, a reply of one line per question answers each in turn.
    """
    text = reply.strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(questions) > 1 and len(lines) == len(questions):
        return {q.text: _one(q, line) for q, line in zip(questions, lines, strict=True)}
    return {q.text: _one(q, text) for q in questions}


def _one(question: Question, reply: str) -> str:
    labels = {o.label.casefold(): o.label for o in question.options}
    if reply.casefold() in labels:
        return labels[reply.casefold()]
    if question.multi_select:
        parts = [p.strip().casefold() for p in reply.split(",") if p.strip()]
        if parts and all(p in labels for p in parts):
            return ", ".join(labels[p] for p in parts)
    return reply


def describe(questions: Sequence[Question]) -> str:
    """The questions as the supervisor reads them: header, options, descriptions."""
    blocks = []
    for i, q in enumerate(questions, 1):
        kind = "several may be chosen (comma-separated)" if q.multi_select else "choose one"
        head = f"Question {i}" + (f" [{q.header}]" if q.header else "")
        lines = [f"{head}: {q.text}", f"({kind}, or answer in your own words)"]
        lines += [f"- {o.label}" + (f": {o.description}" * bool(o.description)) for o in q.options]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) or "(the agent asked without a question text)"
