"""The person at the keyboard: who owns the input, the escape key's commands, and what the
run loop makes of them (with the fake agent and supervisor of test_loop)."""

from __future__ import annotations

import threading

import pytest

from ptysup.agents.claude.profile import ClaudeProfile
from ptysup.agents.events import (
    HookEvent,
    PersonCommand,
    PersonStopped,
    TimeUp,
    TurnEnd,
    TurnEndKind,
)
from ptysup.agents.generic.profile import GenericProfile
from ptysup.agents.person import Person, PersonKeys
from ptysup.agents.session import AgentSession, InjectResult
from ptysup.events import EventLog
from ptysup.exitcodes import Outcome
from ptysup.run.loop import LoopConfig, RunLoop
from ptysup.supervisor.decide import Decided, DecisionCancelled, Supervisor, SupervisorFailed
from ptysup.supervisor.parse import parse
from ptysup.supervisor.runner import Answer, SupervisorError
from ptysup.terminal.inject import Typist
from ptysup.terminal.keys import EscapeKeys, KeyCommand
from ptysup.terminal.screen import ScreenSnapshot
from ptysup.terminal.status import StatusLine, StatusSink
from tests.helpers import EventList, Tick
from tests.unit.test_loop import FakeAgent, FakeSupervisor


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_text_in_the_box_is_the_persons_only_if_they_typed_after_ptysup() -> None:
    clock = Clock()
    person = Person(present=True, clock=clock)
    assert not person.owns_input()
    clock.t = 1
    person.keys(b"h")
    assert person.owns_input()
    clock.t = 2
    person.ptysup_types("an instruction")
    assert not person.owns_input()
    # Without a keyboard (CI) nothing in the box is ever the person's.
    ci = Person(present=False, clock=clock)
    ci.keys(b"x")
    assert not ci.owns_input()


def test_prompts_ptysup_typed_are_not_the_persons_and_theirs_take_over() -> None:
    person = Person(present=True)
    taken: list[int] = []
    person.on_takeover.append(lambda: taken.append(person.prompts))
    person.ptysup_types(" /run\tthe tests ")
    assert not person.submitted("/run    the tests")  # Claude Code's normalised copy
    assert person.prompts == 0 and not taken
    assert person.submitted("something else")
    assert person.prompts == 1 and taken == [1]
    # ptysup's text is matched once: the same words again are the person's.
    assert person.submitted("/run the tests")
    assert person.prompts == 2


def test_toggle_pauses_then_resumes_and_stop_and_pause_take_over() -> None:
    person = Person(present=True)
    taken: list[bool] = []
    person.on_takeover.append(lambda: taken.append(person.paused))
    assert person.command(KeyCommand.RESUME) is None  # nothing to resume
    assert person.command(KeyCommand.TOGGLE) is KeyCommand.PAUSE and person.paused
    assert person.command(KeyCommand.PAUSE) is None
    assert person.command(KeyCommand.TOGGLE) is KeyCommand.RESUME and not person.paused
    assert person.command(KeyCommand.STOP) is KeyCommand.STOP
    assert taken == [True, False]  # the pause and the stop; never the resume


def test_person_keys_forward_typing_and_post_commands() -> None:
    person = Person(present=True)
    posted: list[PersonCommand] = []
    menus: list[bool] = []
    rec = EventList()
    keys = PersonKeys(EscapeKeys(b"\x1d"), person, posted.append, EventLog([rec]), menus.append)
    assert keys.feed(b"hi\x1d") == b"hi"
    assert menus == [True]
    assert keys.feed(b"p") == b""
    assert menus == [True, False] and person.paused
    assert [p.command for p in posted] == [KeyCommand.PAUSE]
    assert [e.fields for e in rec.events] == [{"command": "pause"}]
    assert keys.feed(b"\x1d\x1d") == b"\x1d"  # the key itself, sent on
    assert len(posted) == 1


class PersonSpeaks(FakeSupervisor):
    """A supervisor whose first decision the person overtakes with a message."""

    def __init__(self, agent: FakeAgent, answers: list[str], cancel: bool) -> None:
        super().__init__(answers)
        self._agent = agent
        self._cancel = cancel

    def decide(
        self, prompt: str, iteration: int, timeout: float | None = None, system: str | None = None
    ) -> Decided:
        if len(self.prompts) == 0:
            self.prompts.append(prompt)
            self._agent.person.submitted("my own message")
            if self._cancel:
                raise DecisionCancelled()
            return Decided(parse("[CONTINUE] stale"), Answer("[CONTINUE] stale", 1, 0.5), 1)
        return super().decide(prompt, iteration, timeout, system)


def _loop(agent: FakeAgent, sup: FakeSupervisor, **kw: object) -> tuple[RunLoop, EventList]:
    rec = EventList()
    cfg = LoopConfig("the task", 50, **kw)  # type: ignore[arg-type]
    return RunLoop(cfg, agent, sup, EventLog([rec])), rec


def test_a_decision_the_persons_message_overtook_is_cancelled_and_not_counted() -> None:
    for cancel in (True, False):  # ended in time, or its answer came back anyway
        agent = FakeAgent()
        sup = PersonSpeaks(agent, ["[COMPLETE] fine"], cancel)
        loop, rec = _loop(agent, sup)
        result = loop.run()
        assert result.outcome is Outcome.COMPLETE and result.iterations == 1
        assert agent.typed == ["the task"]  # the stale instruction was never typed
        assert agent.turns == 2  # the person's turn was waited for
        cancelled = [e.fields for e in rec.events if e.event == "decision_cancelled"]
        assert cancelled == [{"iteration": 1, "reason": "overtaken by the person's message"}]
        decisions = [e.fields for e in rec.events if e.event == "decision"]
        assert [(d["iteration"], d["action"]) for d in decisions] == [(1, "complete")]
        # An answer that came back anyway was paid for.
        assert loop.cost_usd == (0.25 if cancel else 0.75)


def test_a_turn_the_person_started_while_holding_is_waited_for() -> None:
    agent = FakeAgent()
    agent.holds = [None]  # the person submitted their text instead of clearing it
    loop, _ = _loop(agent, FakeSupervisor(["[COMPLETE] fine"]))
    result = loop.run()
    assert result.outcome is Outcome.COMPLETE and result.iterations == 1
    assert agent.turns == 2


def test_stop_key_ends_the_agent_gracefully_with_outcome_stopped() -> None:
    agent = FakeAgent()
    agent.working = True

    def stop(turn: TurnEnd, deadline: float | None = None) -> TurnEnd | None:
        raise PersonStopped()

    agent.hold = stop  # type: ignore[method-assign]
    loop, rec = _loop(agent, FakeSupervisor([]))
    result = loop.run()
    assert (result.outcome, result.exit_code) == (Outcome.STOPPED, 8)
    assert agent.typed == ["the task", "<Esc>"] and agent.shut_down  # interrupted, no /clear
    assert "interrupt" in rec.names()


def test_hard_stop_interrupts_a_working_turn_then_clears_once_then_ends() -> None:
    agent = FakeAgent()
    agent.working = True

    def time_up(deadline: float | None = None) -> TurnEnd:
        raise TimeUp()

    agent.wait_turn_end = time_up  # type: ignore[method-assign]
    loop, rec = _loop(agent, FakeSupervisor([]), max_time=5.0)
    result = loop.run()
    assert result.outcome is Outcome.TIME
    assert agent.typed == ["the task", "<Esc>", "/clear"] and agent.shut_down
    names = rec.names()
    assert names.index("interrupt") < names.index("inject", 2)


def test_a_generic_agent_has_no_clear_and_no_interrupt() -> None:
    written: list[bytes] = []
    session = AgentSession(
        GenericProfile(),
        Typist(written.append, pause=lambda s: None),
        lambda: ScreenSnapshot(("$ ",), "", (0, 2)),
        EventLog(),
        clock=Tick(0.1),
    )
    assert session.clear() is None
    assert session.interrupt() is None
    assert written == []
    # And the loop logs no /clear for it.
    agent = FakeAgent()
    agent.clear = session.clear  # type: ignore[method-assign]
    loop, rec = _loop(agent, FakeSupervisor(["[ABORT] no"]))
    assert loop.run().outcome is Outcome.ABORT
    assert not [e for e in rec.events if e.event == "inject" and e.fields["kind"] == "command"]


def test_hold_waits_while_paused_and_the_time_budget_runs_on() -> None:
    clock = Tick(0.5)
    session = AgentSession(
        GenericProfile(),
        Typist(lambda b: None, pause=lambda s: None),
        lambda: ScreenSnapshot(("$ ",), "", (0, 2)),
        EventLog(),
        clock=clock,
    )
    session.person.paused = True
    turn = TurnEnd(TurnEndKind.QUIET)
    with pytest.raises(TimeUp):
        session.hold(turn, deadline=3.0)
    assert clock.t >= 3.0
    # Resumed, an idle agent is decided on at once; a busy one at its next turn end.
    session.post(PersonCommand(KeyCommand.RESUME, clock.t))
    session.last_output = clock.t + 100  # output just now, whatever the ticking clock says
    session.person.paused = True
    threading.Timer(0.2, lambda: setattr(session.person, "paused", False)).start()
    assert session.hold(turn) is None
    session.last_output = clock.t - 10
    assert session.hold(turn) is turn


def test_the_status_line_shows_the_hint_the_menu_and_who_has_the_agent() -> None:
    line = StatusLine(lambda b: None, 24, 200, clock=lambda: 0.0)
    sink = StatusSink(line, lambda: None, 50, clock=lambda: 0.0, escape_key="Ctrl-]")
    log = EventLog([sink])
    log.emit("agent_ready")
    assert line.text == "ptysup 0/50 · 0s · agent ready · Ctrl-] keys"
    sink.menu(True)
    assert line.text.startswith("ptysup keys: s stop the run · p pause/resume")
    sink.menu(False)
    log.emit("person_command", command="pause")
    assert "PAUSED: the agent is yours, no decisions · Ctrl-] p resumes" in line.text
    log.emit("person_prompt", text="mine")
    assert "PAUSED" in line.text  # still theirs until resumed
    log.emit("person_command", command="resume")
    assert "· supervising ·" in line.text
    log.emit("person_input", state="typing")
    assert "waiting: your text is in the input box" in line.text
    log.emit("decision_cancelled", iteration=1, reason="overtaken by the person's message")
    assert "decision cancelled: your message goes first" in line.text
    log.emit("person_command", command="stop")
    assert "stopping" in line.text


def test_an_instruction_the_persons_message_beat_is_not_typed() -> None:
    class Beaten(FakeAgent):
        def submit(self, text: str, deadline: float | None = None) -> InjectResult:
            if text == "next step":
                return InjectResult(text, False, 0, superseded=True)
            return super().submit(text, deadline)

    agent = Beaten()
    loop, rec = _loop(agent, FakeSupervisor(["[CONTINUE] next step", "[COMPLETE] fine"]))
    result = loop.run()
    assert result.outcome is Outcome.COMPLETE and result.iterations == 2
    assert agent.typed == ["the task"] and agent.turns == 2
    warnings = [e.fields["message"] for e in rec.events if e.event == "warning"]
    assert warnings == ["not typed, the person's message came first: instruction"]
    assert [e.fields["kind"] for e in rec.events if e.event == "inject"] == ["task"]


def test_terminal_reports_on_stdin_are_not_the_person_typing() -> None:
    person = Person(present=True)
    person.enter_submits = True
    reports = (b"\x1b[I", b"\x1b[O", b"\x1b[?6c", b"\x1b[12;40R", b"\x1b]11;rgb:0/0/0\x07")
    # tmux's name, in answer to Claude Code's `ESC [ > 0 q` at its start and after Ctrl-Z.
    for report in (*reports, b"\x1bP>|tmux 3.3a\x1b\\"):
        assert not person.keys(report)
        assert not person.owns_input(), report
    assert not person.keys(b"\x1b[A")  # an arrow key is typing, though no message
    assert person.owns_input()
    assert person.keys(b"ls\r") and person.prompts == 1


class SlowRunner:
    """A supervisor runner whose run fails once end_current() is called (or at once)."""

    def __init__(self, fail_at_once: bool = False) -> None:
        self.cancelled = threading.Event()
        self.ended = threading.Event()
        self.runs = 0
        self._fail = fail_at_once

    def run(self, prompt: str, timeout: float | None = None, system: str | None = None) -> Answer:
        self.runs += 1
        if self._fail or self.ended.wait(10):
            raise SupervisorError("exit status -9: killed")
        return Answer("[COMPLETE] too slow", 10)

    def end_current(self) -> None:
        self.ended.set()

    def prepare(self, system: str | None = None) -> None:
        pass


def test_an_abandoned_decision_ends_its_supervisor_and_is_not_retried() -> None:
    runner = SlowRunner()
    supervisor = Supervisor(runner, EventLog(), backoff=(0.01, 0.01))
    threading.Timer(0.2, supervisor.abandon).start()
    with pytest.raises(DecisionCancelled):
        supervisor.decide("prompt", 1)
    assert runner.runs == 1
    # The next decision is not affected by the last one's abandon.
    # (The runner still fails at once: a failure like any other, so it is retried.)
    with pytest.raises(SupervisorFailed):
        supervisor.decide("prompt", 2)
    assert runner.runs == 1 + 3


def test_a_supervisor_failing_at_the_end_of_the_time_budget_is_not_retried() -> None:
    clock = Tick(1.0)
    runner = SlowRunner(fail_at_once=True)
    rec = EventList()
    supervisor = Supervisor(runner, EventLog([rec]), backoff=(30.0,), clock=clock)
    with pytest.raises(TimeUp):
        supervisor.decide("prompt", 1, timeout=2.0)
    assert runner.runs == 1
    assert "supervisor_error" not in rec.names()  # no retry scheduled past the budget


def test_resume_right_after_the_persons_prompt_waits_for_that_turn() -> None:
    # The UserPromptSubmit hook arrives before Claude Code repaints: the screen still reads
    # ready, yet a turn is in progress and must not be decided on.
    ready = ScreenSnapshot(("─" * 20, "❯ "), "✳ Claude Code", (1, 2))
    clock = Clock()
    session = AgentSession(
        ClaudeProfile(),
        Typist(lambda b: None, pause=lambda s: None),
        lambda: ready,
        EventLog(),
        clock=clock,
        person=Person(present=True, clock=clock),
    )
    turn = TurnEnd(TurnEndKind.STOP)

    def resume_soon() -> None:
        def resume() -> None:
            session.person.paused = False
            session.post(PersonCommand(KeyCommand.RESUME, clock.t))

        session.person.paused = True
        threading.Timer(0.1, resume).start()

    resume_soon()
    session.post(HookEvent("UserPromptSubmit", {"prompt": "mine"}, 0.0))
    session.last_output = clock.t  # the person's typing was just echoed
    assert session.hold(turn) is None
    assert session.in_turn
    # An Esc ends a turn without a Stop hook: a screen ready and quiet long enough is idle.
    clock.t = session.timings.screen_grace + 1
    resume_soon()
    assert session.hold(turn) is turn


def test_a_decision_ended_by_the_agent_s_exit_stays_ended() -> None:
    # The agent exited: the decision being made is dropped at once, and one the loop starts
    # just after (it had not seen the exit yet) never runs a supervisor.
    runner = SlowRunner()
    supervisor = Supervisor(runner, EventLog(), backoff=(0.01, 0.01))
    threading.Timer(0.2, supervisor.end, ["the agent's exit"]).start()
    with pytest.raises(DecisionCancelled, match="the agent's exit"):
        supervisor.decide("prompt", 1)
    with pytest.raises(DecisionCancelled, match="the agent's exit"):
        supervisor.decide("prompt", 2)
    assert runner.runs == 1
