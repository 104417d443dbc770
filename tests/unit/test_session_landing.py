"""A message is typed only as a paste the agent takes, and submitted only once it shows whole
in the agent's input box (issue 30: Gemini CLI read a message typed before it took pastes as
keys, `!` opened its shell mode, and Enter ran the rest as a shell command)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from ptysup.agents.events import HookEvent, ScreenState, ScreenUpdate
from ptysup.agents.gemini.profile import GeminiProfile
from ptysup.agents.landing import same_prompt, shows
from ptysup.agents.session import AgentSession, Timings
from ptysup.events import EventLog
from ptysup.terminal.inject import PASTE_END, PASTE_START, Typist
from ptysup.terminal.screen import ScreenSnapshot
from tests.helpers import EventList

RULE = "─" * 40
TASK = "Is the build ready? Great! touch PWNED.txt"


class FakeGemini:
    """Gemini CLI's input box as its keyboard changes it: a paste lands as text once it
    switched bracketed paste on; keys typed before it are read as its syntax (`!` on an
    empty box opens shell mode, as 0.61 did with every key of one read seeing the box
    empty); Enter submits, and its BeforeAgent hook reports the prompt."""

    def __init__(self, pastes: bool = True) -> None:
        self.session: AgentSession | None = None
        self.pastes = pastes
        self.box = ""
        self.shell = False
        self.enters: list[str] = []
        self.writes: list[bytes] = []
        self.landing: Callable[[str, int], str] = lambda text, n: text  # what paste n shows
        self.prompt: Callable[[str], str] = lambda text: text  # what the model gets

    def snapshot(self) -> ScreenSnapshot:
        box = f" ! {self.box}" if self.shell else f" > {self.box}"
        return ScreenSnapshot((RULE, box), "◇  Ready (project)", (1, 3))

    def write(self, data: bytes) -> None:
        assert self.session is not None
        self.writes.append(data)
        if data.startswith(PASTE_START):
            text = data[len(PASTE_START) : -len(PASTE_END)].decode()
            self.box = self.landing(text, len(self._pastes()))
        elif data == b"\r":
            self.enters.append(self.box)
            if self.box and not self.shell:
                prompt = {"prompt": self.prompt(self.box)}
                self.session.post(HookEvent("UserPromptSubmit", prompt, self.session.now()))
            self.box = ""
        elif data == b"\x03":
            self.box = ""
        else:
            self.shell, self.box = "!" in data.decode(), data.decode().rpartition("!")[2]
        self.session.post(ScreenUpdate(ScreenState.READY, self.session.now()))

    def _pastes(self) -> list[bytes]:
        return [w for w in self.writes if w.startswith(PASTE_START)]


def _session(agent: FakeGemini, **timings: float) -> tuple[AgentSession, EventList]:
    sink = EventList()
    session = AgentSession(
        GeminiProfile(),
        Typist(agent.write, pause=lambda s: None, bracketed=lambda: agent.pastes),
        agent.snapshot,
        EventLog([sink]),
        Timings(**{"landed": 0.3, "pasted": 0.3, "confirm": 0.3, "ready": 5.0, **timings}),
    )
    agent.session = session
    session.state = ScreenState.READY
    return session, sink


def _warnings(sink: EventList) -> list[str]:
    return [e.fields["message"] for e in sink.events if e.event == "warning"]


def test_ready_waits_for_the_agent_to_take_pastes() -> None:
    agent = FakeGemini(pastes=False)
    session, _ = _session(agent)

    def paste_on() -> None:
        agent.pastes = True
        session.post(ScreenUpdate(ScreenState.READY, session.now()))

    timer = threading.Timer(0.3, paste_on)
    timer.start()
    session.wait_ready()  # the box was on screen, but not the paste mode
    assert agent.pastes
    timer.join()


def test_an_agent_that_takes_no_paste_gets_no_keys() -> None:
    agent = FakeGemini(pastes=False)
    session, sink = _session(agent)
    result = session.submit(TASK)
    assert agent.writes == [] and not agent.shell
    assert (result.confirmed, result.landed) == (False, False)
    assert "the agent takes no paste now; nothing was typed" in _warnings(sink)


def test_keys_that_opened_the_shell_mode_are_never_submitted() -> None:
    # What happened on main: the message went in as keys and Enter ran `touch PWNED.txt`.
    agent = FakeGemini()
    session, sink = _session(agent)

    def as_keys(text: str, n: int) -> str:
        agent.write(text.encode())  # the paste read as keys
        return agent.box

    agent.landing = as_keys
    result = session.submit(TASK)
    assert agent.shell and agent.enters == []  # never submitted
    assert (result.confirmed, result.landed) == (False, False)
    assert _warnings(sink) == ["the message did not show whole in the agent's input box; not sent"]


def test_a_paste_that_lands_late_is_waited_for_and_never_pasted_twice() -> None:
    # A loaded machine: the box shows the paste seconds later. A second paste would have
    # landed beside it ("the taskthe task", seen under load).
    agent = FakeGemini()
    session, sink = _session(agent, pasted=5.0)
    agent.landing = lambda text, n: ""  # nothing shows at first

    def draw_late() -> None:
        agent.box = TASK
        assert agent.session is not None
        agent.session.post(ScreenUpdate(ScreenState.READY, agent.session.now()))

    timer = threading.Timer(1.0, draw_late)
    timer.start()
    result = session.submit(TASK)
    timer.join()
    assert len([w for w in agent.writes if w.startswith(PASTE_START)]) == 1
    assert agent.enters == [TASK]
    assert (result.confirmed, result.landed) == (True, True)
    assert not [e for e in sink.events if e.event == "warning"]


def test_a_paste_that_never_shows_is_not_sent_and_said() -> None:
    agent = FakeGemini()
    agent.landing = lambda text, n: ""
    session, sink = _session(agent)
    result = session.submit(TASK)
    assert agent.enters == [] and len(agent._pastes()) == 1
    assert (result.confirmed, result.landed) == (False, False)
    assert _warnings(sink) == ["the message did not show whole in the agent's input box; not sent"]


def test_text_that_is_not_the_message_is_cleared_never_sent() -> None:
    agent = FakeGemini()
    agent.landing = lambda text, n: text.rpartition("!")[2]  # the rest after a lost `!`
    session, sink = _session(agent)
    result = session.submit(TASK)
    assert agent.enters == []
    assert b"\x03" in agent.writes  # the box was emptied
    assert not result.landed
    texts = [e.fields.get("text") for e in sink.events if e.event == "warning"]
    assert texts == ["touch PWNED.txt"]


def test_a_prompt_the_agent_got_otherwise_is_not_logged_as_landed() -> None:
    agent = FakeGemini()
    agent.prompt = lambda text: text[:10]
    session, sink = _session(agent)
    result = session.submit(TASK)
    assert (result.confirmed, result.landed) == (True, False)
    assert "the agent got another message than ptysup typed" in _warnings(sink)


def test_a_slash_message_gets_gemini_clis_guard_which_it_does_not_trim() -> None:
    agent = FakeGemini()
    session, _ = _session(agent)
    result = session.submit("/quit now")
    assert agent.enters == ["\u2060/quit now"]
    assert result.text == "\u2060/quit now" and result.landed


@pytest.mark.parametrize(
    ("shown", "whole"),
    [
        (TASK, True),
        ("Is the build ready? Great!\n   touch PWNED.txt", True),  # wrapped in the box
        ("/quit now", False),
        ("", False),
        (None, False),
        ("touch PWNED.txt", False),
    ],
)
def test_shows_compares_what_the_box_draws(shown: str | None, whole: bool) -> None:
    assert shows(TASK, shown) is whole


def test_shows_takes_a_folded_paste_with_the_rest_around_it() -> None:
    folded = GeminiProfile.paste_placeholder
    long = "start " + "x" * 600 + " end"
    assert shows(long, "[Pasted Text: 612 chars]", folded)
    assert shows(long, "start [Pasted Text: 606 chars]", folded)
    assert not shows(long, "other [Pasted Text: 606 chars]", folded)
    assert not shows(long, "start x", folded)


def test_same_prompt_sees_past_trimming_and_the_guard() -> None:
    assert same_prompt("\u2060/quit now", "/quit now")
    assert same_prompt(" !ls\tx", "!ls x")
    assert not same_prompt(TASK, "touch PWNED.txt")
