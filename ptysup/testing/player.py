"""Playing a scenario: which scripted step answers a request, remembering turns and `times`."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ptysup.testing.conversation import RequestKind
from ptysup.testing.scenario import Rule, Scenario, Step, conditions_hold, step_for
from ptysup.testing.wire import TextBlock

if TYPE_CHECKING:
    from ptysup.testing.wires.base import Reading


@dataclass(frozen=True)
class Choice:
    """The step that answers one request, and where it comes from."""

    step: Step
    rule: str | None
    step_index: int


# (kind, session id, index of the human message, its text): stable across the tool_result
# round trips of one turn, different for a new prompt or a new `claude -p`.
_TurnKey = tuple[RequestKind, str, int, str]


class Player:
    """Chooses replies for one scenario; safe to call from several server threads."""

    def __init__(self, scenario: Scenario, workdir: Path) -> None:
        self.scenario = scenario
        self.workdir = workdir
        self._lock = threading.Lock()
        self._uses: dict[tuple[RequestKind, int], int] = {}
        self._turns: dict[_TurnKey, int] = {}

    def choose(self, reading: Reading) -> Choice:
        """The reply to a request, as its wire read it."""
        kind = reading.kind
        if kind is RequestKind.TITLE:
            step = title_step(reading.json_fields, self.scenario.title)
            return Choice(step=step, rule=None, step_index=0)
        rules = self.scenario.supervisor if kind is RequestKind.SUPERVISOR else self.scenario.agent
        text = reading.human_text
        index = reading.step_index
        key: _TurnKey = (kind, reading.session_id, reading.turn, text)
        with self._lock:
            chosen = self._turns.get(key) if index > 0 else None
            if chosen is None:
                chosen = self._match(kind, rules, text, index == 0, reading.wire)
                if chosen is not None:
                    self._turns[key] = chosen
        if chosen is None:
            return Choice(
                step=_note(f"fakemodel: no {kind.value} rule matched"), rule=None, step_index=index
            )
        rule = rules[chosen]
        if index >= len(rule.steps):
            step = _note(f"fakemodel: rule {rule.name} has no step {index}")
        else:
            step = step_for(rule.steps[index], self.workdir)
        return Choice(step=step, rule=rule.name, step_index=index)

    def _match(
        self, kind: RequestKind, rules: tuple[Rule, ...], text: str, count: bool, wire: str = ""
    ) -> int | None:
        for position, rule in enumerate(rules):
            used = self._uses.get((kind, position), 0)
            if rule.times is not None and count and used >= rule.times:
                continue
            timeout = self.scenario.command_timeout
            if conditions_hold(rule.conditions, text, self.workdir, timeout, wire):
                if count:
                    self._uses[(kind, position)] = used + 1
                return position
        return None


def _note(text: str) -> Step:
    return Step(blocks=(TextBlock(text),))


def title_step(json_fields: tuple[str, ...], title: str) -> Step:
    """A valid reply to a side request: the JSON with the string fields it asks for (each
    TITLE), else TITLE as text."""
    if json_fields:
        return _note(json.dumps({name: title for name in json_fields}))
    return _note(title)
