"""What every wire (one model API's format) gives the fake model: a request read into what
the scenario player needs, and a scripted step rendered as that API's reply."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ptysup.testing.conversation import RequestKind
from ptysup.testing.scenario import Step


@dataclass(frozen=True)
class Reading:
    """One request as the player sees it, whatever its wire."""

    kind: RequestKind
    human_text: str  # the latest message the person (or ptysup) typed
    step_index: int = 0  # assistant replies already given in this turn (tool round trips)
    turn: int = 0  # which human message this is: with the text, it keys the turn
    session_id: str = ""
    # A side request that wants JSON: the string fields it requires (the title request).
    json_fields: tuple[str, ...] = ()
    wire: str = ""  # the wire's name: set by the fake model, for the `wire` condition


@dataclass(frozen=True)
class Reply:
    """An HTTP reply: status, body and its type, extra headers."""

    status: int
    data: bytes
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)


class Wire(Protocol):
    """One model API, as far as the agent that speaks it reads it."""

    name: str

    def matches(self, path: str) -> bool:
        """Whether a POST to `path` (without its query) is this wire's."""
        ...

    def read(
        self, path: str, body: Mapping[str, Any], headers: Mapping[str, str], marker: str
    ) -> Reading:
        """The request read: who asks (a supervisor's prompt holds `marker`), and where in
        a turn it is."""
        ...

    def reply(self, step: Step, path: str, body: Mapping[str, Any], reading: Reading) -> Reply:
        """The scripted `step` (text, a tool call) as this API's reply to the request."""
        ...

    def error(self, status: int, message: str | None = None) -> Reply:
        """This API's error reply for an HTTP status."""
        ...
