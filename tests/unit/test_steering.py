"""The run's side of steering: a sent message typed as the person's, a held question
answered, budgets moved for the loop, a stop as the escape key's, a dialog approved only
as shown; and the loop waiting --escalate-wait for an answer from elsewhere."""

from __future__ import annotations

import io
import threading
from pathlib import Path
from typing import Any

import pytest

from ptysup import notify
from ptysup.agents.events import PersonCommand, PersonStopped, TimeUp, TurnEnd, TurnEndKind
from ptysup.agents.person import Person
from ptysup.agents.questions import Ask
from ptysup.attach.steerproto import Refused, request
from ptysup.cli.resume import prepare
from ptysup.events import Event, EventLog
from ptysup.exitcodes import Outcome
from ptysup.run import steering
from ptysup.run.limits import Limits, Used
from ptysup.run.loop import LoopConfig, RunLoop
from ptysup.run.report import GithubSink
from ptysup.run.steering import Hands, Steering
from ptysup.run.waiting import DIALOG, ESCALATION, QUESTION, WaitBoard, Waiting
from ptysup.store.listing import describe
from ptysup.store.rundir import RunDir
from ptysup.terminal.inject import Typist
from ptysup.terminal.keys import KeyCommand
from ptysup.terminal.status import StatusLine, StatusSink
from tests.helpers import EventList
from tests.unit.test_loop import Clock, FakeAgent, FakeSupervisor
from tests.unit.test_questions import SINGLE, asking
from tests.unit.test_resume import START, TYPED, _given, _stored


class Rig:
    def __init__(self, approve_key: bytes | None = b"\r") -> None:
        self.written: list[bytes] = []
        self.posted: list[PersonCommand] = []
        self.person = Person(present=False)
        self.person.enter_submits = True  # an agent without hooks: Enter is a message
        self.limits = Limits(10, 3600.0, None)
        self.board = WaitBoard()
        self.rec = EventList()
        self.used = Used(4, 600.0, 1.5)

        def keys(data: bytes) -> None:
            self.person.keys(data)
            self.written.append(data)

        hands = Hands(
            person=self.person,
            typist=Typist(keys, pause=lambda s: None, bracketed=lambda: True),
            leaders=("/", "!"),
            guard=" ",
            paste_only=False,
            post=self.posted.append,
            now=lambda: 5.0,
            used=lambda: self.used,
            approve_key=approve_key,
            dismiss_key=b"\x1b",
        )
        self.steering = Steering("run-1", hands, self.limits, self.board, EventLog([self.rec]))

    def handle(self, action: str, **fields: Any) -> str:
        return self.steering.handle(request(action, "shell pid 7", **fields))

    def fields(self, name: str) -> list[dict[str, Any]]:
        return [e.fields for e in self.rec.events if e.event == name]


def test_a_sent_text_is_pasted_and_entered_as_the_persons_message() -> None:
    rig = Rig()
    assert rig.handle("send", text="use the blue one") == (
        "run run-1: typed your message into the agent"
    )
    assert rig.written == [b"\x1b[200~use the blue one\x1b[201~", b"\r"]
    assert rig.person.prompts == 1  # the run counts it as the person's
    assert rig.fields("person_action") == [
        {"action": "send", "source": "shell pid 7", "text": "use the blue one"}
    ]


def test_a_sent_command_is_a_message_never_a_command() -> None:
    rig = Rig()
    rig.handle("send", text="!rm -rf build")
    assert rig.written[0] == b"\x1b[200~ !rm -rf build\x1b[201~"


def test_a_sent_text_answers_a_question_held_open() -> None:
    rig = Rig()
    ask, reply = asking(SINGLE)
    rig.board.post(Waiting(QUESTION, "Which storage?", ("SQLite", "Redis")), ask)
    assert "answered the agent's question" in rig.handle("send", text="redis")
    assert reply.output()["updatedInput"]["answers"] == {"Which storage?": "Redis"}
    assert rig.written == []  # nothing typed
    assert rig.fields("answer") == [
        {"by": "person", "answers": {"Which storage?": "Redis"}, "delivered": True}
    ]


def test_budgets_move_for_the_loop_and_are_logged() -> None:
    rig = Rig()
    line = rig.handle("budget", changes={"max_iter": "+5", "max_cost": "3"})
    assert line == (
        "run run-1: budgets now 15 iterations (4 used), 1h (10m used), $3.00 ($1.50 used)"
    )
    assert (rig.limits.max_iter, rig.limits.max_cost) == (15, 3.0)
    assert rig.fields("budget") == [
        {"max_iter": 15, "max_time": 3600.0, "max_cost": 3.0, "source": "shell pid 7"}
    ]
    assert rig.fields("person_action")[0]["changes"] == {"max_iter": "+5", "max_cost": "3"}


def test_a_budget_below_what_is_used_changes_nothing() -> None:
    rig = Rig()
    with pytest.raises(Refused, match=r"--max-cost: \$1.00 is below what is used \(\$1.50\)"):
        rig.handle("budget", changes={"max_iter": "+5", "max_cost": "1"})
    assert rig.limits.max_iter == 10  # all or nothing
    assert not rig.fields("budget") and not rig.fields("person_action")


def test_stop_is_the_escape_keys_stop() -> None:
    rig = Rig()
    assert "stopping" in rig.handle("stop")
    assert [p.command for p in rig.posted] == [KeyCommand.STOP]
    assert rig.fields("person_command") == [{"command": "stop"}]


def test_only_the_dialog_as_shown_is_approved() -> None:
    rig = Rig()
    with pytest.raises(Refused, match="no dialog is open"):
        rig.handle("approve", dialog="Do you want to create x.py?")
    rig.board.dialog("Do you want to create y.py?\n❯ 1. Yes")
    with pytest.raises(Refused, match="the dialog changed"):
        rig.handle("approve", dialog="Do you want to create x.py?\n❯ 1. Yes")
    assert rig.written == [] and not rig.fields("person_action")
    assert rig.handle("approve", dialog="Do you want to create y.py?\n❯ 1. Yes") == (
        "run run-1: approved the dialog"
    )
    assert rig.written == [b"\r"]
    no_key = Rig(approve_key=None)
    no_key.board.dialog("Allow?")
    with pytest.raises(Refused, match="approved at its terminal"):
        no_key.handle("approve", dialog="Allow?")


def loop(
    agent: FakeAgent, answers: list[str], clock: Clock, **kw: Any
) -> tuple[RunLoop, EventList]:
    rec = EventList()
    cfg = LoopConfig("the task", kw.pop("max_iter", 50), person_present=False, **kw)
    return RunLoop(cfg, agent, FakeSupervisor(answers), EventLog([rec]), clock), rec


class Waits(FakeAgent):
    """wait_turn_start, as a person elsewhere answers, or time runs out."""

    def __init__(self, clock: Clock, answered: bool) -> None:
        super().__init__()
        self.person = Person(present=False)
        self.clock = clock
        self.answered = answered
        self.seen: list[Waiting | None] = []
        self.deadlines: list[float | None] = []
        self.board: WaitBoard | None = None

    def wait_turn_start(self, deadline: float | None = None) -> None:
        assert self.board is not None
        self.seen.append(self.board.now)
        self.deadlines.append(deadline)
        if self.answered:
            return
        assert deadline is not None
        self.clock.now = deadline
        raise TimeUp()


def test_a_headless_escalation_waits_for_an_answer_then_goes_on() -> None:
    clock = Clock()
    agent = Waits(clock, answered=True)
    run, rec = loop(
        agent,
        ["[ESCALATE] pick the storage", "[COMPLETE] done"],
        clock,
        escalate_wait=600,
        answer_with='ptysup send run-1 "your answer"',
    )
    agent.board = run.board
    result = run.run()
    assert result.outcome is Outcome.COMPLETE
    assert agent.deadlines == [1000.0 + 600]
    assert agent.seen[0] is not None and agent.seen[0].kind == ESCALATION
    assert agent.seen[0].text == "pick the storage"
    assert run.board.now is None  # waits on nobody once answered
    escalation = next(e.fields for e in rec.events if e.event == "escalation")
    assert escalation["waiting"] is True and escalation["wait_s"] == 600
    assert escalation["answer_with"] == 'ptysup send run-1 "your answer"'


def test_a_headless_escalation_nobody_answers_ends_with_exit_7() -> None:
    clock = Clock()
    agent = Waits(clock, answered=False)
    run, rec = loop(agent, ["[ESCALATE] pick the storage"], clock, escalate_wait=30)
    agent.board = run.board
    result = run.run()
    assert result.outcome is Outcome.ESCALATED and result.exit_code == 7
    assert result.reason == "pick the storage"
    assert agent.shut_down
    warned = [e.fields["message"] for e in rec.events if e.event == "warning"]
    assert "nobody answered within --escalate-wait (30s)" in warned


def test_without_escalate_wait_a_headless_escalation_ends_at_once() -> None:
    clock = Clock()
    agent = Waits(clock, answered=True)
    run, _ = loop(agent, ["[ESCALATE] pick the storage"], clock)
    agent.board = run.board
    assert run.run().outcome is Outcome.ESCALATED
    assert agent.deadlines == []


def test_the_time_budget_ends_the_wait_before_escalate_wait_does() -> None:
    clock = Clock()
    agent = Waits(clock, answered=False)
    run, _ = loop(agent, ["[ESCALATE] pick"], clock, escalate_wait=600, max_time=60)
    agent.board = run.board
    assert run.run().outcome is Outcome.TIME
    assert agent.deadlines == [1000.0 + 60]


class Asked(Waits):
    """The agent asks; a person elsewhere answers after a few checks (or never)."""

    def pause(self, seconds: float) -> None:
        assert self.board is not None
        self.seen.append(self.board.now)
        self.clock.now += seconds
        if self.answered and len(self.seen) == 3:
            taken = self.board.take_question()
            assert taken is not None and taken.answer({"Which storage?": "Redis"})


def test_a_question_escalated_without_a_terminal_is_held_open_for_an_answer() -> None:
    clock = Clock()
    ask, reply = asking(SINGLE)
    agent = Asked(clock, answered=True)
    agent.turn_ends = [ask]
    run, _ = loop(
        agent, ["[ESCALATE] only a person knows", "[COMPLETE] ok"], clock, escalate_wait=60
    )
    agent.board = run.board
    assert run.run().outcome is Outcome.COMPLETE
    held = agent.seen[0]
    assert held is not None and held.kind == QUESTION
    assert held.options == ("SQLite", "Redis")
    assert len(reply.sent) == 1  # the person's answer, not a refusal nor an empty reply
    assert reply.output()["updatedInput"]["answers"] == {"Which storage?": "Redis"}
    assert run.board.now is None


def test_a_question_nobody_answers_is_refused_and_the_run_ends_with_exit_7() -> None:
    clock = Clock()
    ask, reply = asking(SINGLE)
    agent = Asked(clock, answered=False)
    agent.turn_ends = [ask]
    run, _ = loop(agent, ["[ESCALATE] only a person knows"], clock, escalate_wait=60)
    agent.board = run.board
    assert run.run().outcome is Outcome.ESCALATED
    assert clock.now >= 1060.0
    assert reply.output()["permissionDecision"] == "deny"
    assert "Nobody answered" in reply.output()["permissionDecisionReason"]


class RaisedMidTurn(FakeAgent):
    """A person raises a budget while the agent's turn runs past the old limit."""

    def __init__(self, clock: Clock) -> None:
        super().__init__()
        self.clock = clock
        self.limits: Limits | None = None
        self.deadlines: list[float | None] = []

    def wait_turn_end(self, deadline: float | None = None) -> TurnEnd | Ask:
        self.deadlines.append(deadline)
        assert self.limits is not None and deadline is not None
        if len(self.deadlines) == 1:
            self.limits.change(
                [request("budget", "t", changes={"max_time": "+10m"}).changes[0]], Used(0, 0, 0)
            )
            self.clock.now = deadline  # the old limit passes: the wait gives up...
            raise TimeUp()
        return TurnEnd(TurnEndKind.STOP, "done")  # ...and is taken up to the new one


def test_a_time_budget_raised_mid_turn_moves_the_deadline_the_turn_waits_for() -> None:
    clock = Clock()
    agent = RaisedMidTurn(clock)
    run, _ = loop(agent, ["[COMPLETE] ok"], clock, max_time=60)
    agent.limits = run.limits
    assert run.run().outcome is Outcome.COMPLETE
    assert agent.deadlines == [1060.0, 1660.0]


def test_an_iteration_budget_raised_before_it_is_used_up_lets_the_run_go_on() -> None:
    clock = Clock()
    agent = FakeAgent()
    run, _ = loop(agent, ["[CONTINUE] more", "[COMPLETE] ok"], clock, max_iter=1)
    run.limits.change([request("budget", "t", changes={"max_iter": "+1"}).changes[0]], run.used())
    result = run.run()
    assert result.outcome is Outcome.COMPLETE and result.iterations == 2


def test_the_board_shows_a_dialog_over_what_the_loop_waits_on() -> None:
    board = WaitBoard()
    seen: list[Waiting | None] = []
    board.on_change.append(seen.append)
    board.post(Waiting(ESCALATION, "pick"))
    board.dialog("Allow?")
    board.dialog("Allow?")  # unchanged: said once
    board.dialog(None)
    assert [w.kind if w else None for w in seen] == [ESCALATION, DIALOG, ESCALATION]


def test_the_status_row_shows_a_moved_budget_and_who_steered() -> None:
    line = StatusLine(lambda b: None, 10, 120, clock=lambda: 0.0)
    log = EventLog([StatusSink(line, lambda: None, 5, clock=lambda: 0.0)])
    log.emit("person_action", action="budget", source="shell pid 7", changes={"max_iter": "+10"})
    assert line.text == "ptysup 0/5 · 0s · budget from shell pid 7"
    log.emit("budget", max_iter=15, max_time=None, max_cost=None, source="shell pid 7")
    assert line.text == "ptysup 0/15 · 0s · budgets moved by shell pid 7"


def test_a_resume_keeps_the_budgets_a_person_moved_unless_told_otherwise(tmp_path: Path) -> None:
    moved = {"event": "budget", "max_iter": 12, "max_time": 7200.0, "max_cost": None}
    used = {"event": "decision", "iteration": 5, "total_cost_usd": 0.5}
    _stored(tmp_path, START, TYPED, moved, used)
    config, _ = prepare("last", _given(tmp_path), frozenset(), None, {})
    assert (config.max_iter, config.max_time, config.max_cost) == (12, 7200.0, None)
    given = _given(tmp_path, max_iter=20)
    config, _ = prepare("last", given, frozenset({"max_iter"}), None, {})
    assert (config.max_iter, config.max_time) == (20, 7200.0)
    assert (
        describe(RunDir(tmp_path / ".ptysup" / "runs" / "20261123-000000-abcdef"))["max_iter"] == 12
    )


def test_a_message_sent_while_a_dialog_shows_rejects_it_first_never_approves() -> None:
    rig = Rig()
    rig.board.dialog("Do you want to create hello.txt?\n❯ 1. Yes")
    closed = threading.Timer(0.1, rig.board.dialog, args=(None,))  # the agent closes it
    closed.start()
    rig.handle("send", text="do not create it")
    closed.join()
    assert rig.written == [b"\x1b", b"\x1b[200~do not create it\x1b[201~", b"\r"]
    assert rig.fields("dialog_dismissed")[0]["screen"].startswith("Do you want to create")


def test_a_dialog_that_stays_open_gets_no_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(steering, "DIALOG_CLOSE_S", 0.1)
    rig = Rig()
    rig.board.dialog("Allow?")
    with pytest.raises(Refused, match="the agent's dialog did not close; nothing was typed"):
        rig.handle("send", text="hello")
    assert rig.written == [b"\x1b"]


def test_github_shows_a_waiting_escalation_as_a_warning_with_the_answer() -> None:
    out = io.StringIO()
    log = EventLog([GithubSink(out)])
    log.emit(
        "escalation", reason="pick", waiting=True, wait_s=1800, answer_with="ptysup send r 'x'"
    )
    log.emit("escalation", reason="pick", waiting=False)
    assert out.getvalue().splitlines() == [
        "::warning title=ptysup waiting 30m for a person::pick | answer: ptysup send r 'x'",
        "::error title=ptysup escalated to a person::pick",
    ]


def test_the_notification_of_a_waiting_escalation_says_how_to_answer() -> None:
    waiting = Event(
        "escalation", 0.0, {"reason": "pick", "wait_s": 1800, "answer_with": "ptysup send r 'x'"}
    )
    assert notify.message("escalation", waiting) == (
        "waiting for you: pick · answer within 30m: ptysup send r 'x'"
    )
    acted = Event("person_action", 0.0, {"action": "stop", "source": "shell pid 7 on /dev/pts/3"})
    assert notify.kind_of(acted) == "person_action"
    assert notify.message("person_action", acted) == (
        "a person steers the run: stop from shell pid 7 on /dev/pts/3"
    )


def test_a_stop_while_an_escalation_waits_ends_the_run_as_stopped() -> None:
    clock = Clock()

    class Stopped(Waits):
        def wait_turn_start(self, deadline: float | None = None) -> None:
            raise PersonStopped()  # `ptysup stop`, as the session hears it

    agent = Stopped(clock, answered=False)
    run, _ = loop(agent, ["[ESCALATE] pick"], clock, escalate_wait=600)
    agent.board = run.board
    result = run.run()
    assert result.outcome is Outcome.STOPPED and result.exit_code == 8
    assert run.board.now is None
