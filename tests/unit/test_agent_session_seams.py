"""AgentSession where features meet: a plan's mid-run /clear and the stop key, and the
agent's cost in a reopened conversation."""

from __future__ import annotations

import pytest

from ptysup.agents.claude import ClaudeProfile
from ptysup.agents.events import HookEvent, PersonCommand, PersonStopped
from ptysup.agents.hooks import STATUS_LINE
from ptysup.agents.session import AgentSession, Timings
from ptysup.events import EventLog
from ptysup.terminal.inject import Typist
from ptysup.terminal.keys import KeyCommand
from ptysup.terminal.screen import ScreenSnapshot
from tests.helpers import Tick

RULE = "─" * 40
READY = ScreenSnapshot((RULE, "❯ ", RULE), "✳ Claude Code", (1, 2))


def _session(written: list[bytes] | None = None) -> AgentSession:
    sink = written if written is not None else []
    return AgentSession(
        ClaudeProfile(),
        Typist(sink.append, pause=lambda s: None),
        lambda: READY,
        EventLog(),
        Timings(confirm=0.2, landed=0.2),
        clock=Tick(0.01),
    )


@pytest.mark.parametrize("final", [False, True])
def test_only_a_final_clear_turns_the_stop_key_off(final: bool) -> None:
    written: list[bytes] = []
    session = _session(written)
    cleared = session.clear(final=final)
    assert cleared is not None and cleared.text == "/clear" and b"/clear" in written
    session.post(PersonCommand(KeyCommand.STOP, 0.0))
    if final:  # the run is ending anyway: the key changes nothing more
        session.pause(0.5)
    else:  # a plan's step cleared the context: the person can still stop the run
        with pytest.raises(PersonStopped):
            session.pause(0.5)


def _cost(total: float) -> HookEvent:
    return HookEvent(STATUS_LINE, {"cost": {"total_cost_usd": total}}, 0.0)


def test_the_agent_s_cost_is_the_highest_figure_it_reported() -> None:
    session = _session()
    for total in (0.0, 0.02, 0.05, 0.04):
        session.post(_cost(total))
    session.pause(0.5)
    assert session.cost_usd == 0.05


def test_a_reopened_conversation_counts_only_what_this_part_spends() -> None:
    # Claude Code restores the spend it saved at its last graceful exit on --resume, and
    # shows it before its first prompt; the earlier part counted that already.
    session = _session()
    session.reopened = True
    session.post(_cost(0.30))
    session.post(HookEvent("UserPromptSubmit", {"prompt": "go on"}, 0.0))
    session.post(_cost(0.32))
    session.pause(0.5)
    assert session.cost_usd == pytest.approx(0.02)


def test_a_reopened_conversation_first_seen_after_a_prompt_counts_from_zero() -> None:
    session = _session()
    session.reopened = True
    session.post(HookEvent("UserPromptSubmit", {"prompt": "go on"}, 0.0))
    session.post(_cost(0.01))
    session.pause(0.5)
    assert session.cost_usd == 0.01
