"""The model APIs the fake model speaks: one module per wire, each agent's own format.

A wire reads a request into a `Reading` (who asks, which turn, which step of it) for the
scenario player, and renders the chosen step as that API's reply. Adding an agent that
speaks a new API is a module here and a row in WIRES.
"""

from __future__ import annotations

from ptysup.testing.wires.anthropic import AnthropicWire
from ptysup.testing.wires.base import Reading, Reply, Wire
from ptysup.testing.wires.chat import ChatWire
from ptysup.testing.wires.gemini import GeminiWire
from ptysup.testing.wires.responses import ResponsesWire

WIRES: tuple[Wire, ...] = (AnthropicWire(), GeminiWire(), ResponsesWire(), ChatWire())


def find(path: str) -> Wire | None:
    """The wire a POST to `path` (without its query) speaks, if any."""
    return next((w for w in WIRES if w.matches(path)), None)


__all__ = ["WIRES", "Reading", "Reply", "Wire", "find"]
