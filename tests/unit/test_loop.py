"""The decision loop with a fake agent and a fake supervisor."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

import pytest

from ptysup.agents.events import AgentExited, CostUp, Interrupted, TimeUp, TurnEnd, TurnEndKind
from ptysup.agents.person import Person
from ptysup.agents.questions import Ask
from ptysup.agents.session import Activity, InjectResult
from ptysup.agents.waits import WaitPolicy
from ptysup.events import EventLog
from ptysup.exitcodes import Outcome, RunResult
from ptysup.redact import Redactor
from ptysup.run.loop import Judging, LoopConfig, RunLoop, Spent
from ptysup.run.tamper import Finding
from ptysup.run.tamper import Verdict as TamperVerdict
from ptysup.run.verify import VerifyResult
from ptysup.supervisor.decide import Decided, Supervisor, SupervisorFailed
from ptysup.supervisor.parse import parse
from ptysup.supervisor.runner import Answer
from ptysup.terminal.screen import ScreenSnapshot
from tests.helpers import EventList, Tick


class FakeAgent:
    def __init__(self, exit_after_turns: int | None = None) -> None:
        self.activity = Activity()
        self.typed: list[str] = []
        self.turns = 0
        self.exit_after_turns = exit_after_turns
        self.shut_down = False
        self.turn_ends: list[TurnEnd | Ask] = []
        self.paused: list[float] = []
        self.command_takes = True  # whether a slash command is seen to take effect
        self.person = Person(present=True)
        self.working = False  # a turn is in progress when a hard stop comes
        self.holds: list[TurnEnd | None] = []  # what hold() answers, in order (else: the turn)
        self.person_turns = 0  # turns a person started after an escalation
        self.cost_usd = 0.0
        self.cost_cap: float | None = None
        self.spend_per_turn = 0.0  # the agent's own cost of each turn
        self.late_spend_per_turn = 0.0  # ... reported only a moment after the turn ends
        self.unreported = 0.0  # spent, not yet reported: settle_cost() reports it

    def wait_ready(self) -> None:
        pass

    def submit(self, text: str, deadline: float | None = None) -> InjectResult:
        self.typed.append(text)
        return InjectResult(text, True, 1)

    def wait_turn_end(self, deadline: float | None = None) -> TurnEnd | Ask:
        if self.exit_after_turns is not None and self.turns >= self.exit_after_turns:
            raise AgentExited(None)
        self.turns += 1
        self.cost_usd += self.spend_per_turn
        self.unreported += self.late_spend_per_turn
        if self.cost_cap is not None and self.cost_usd >= self.cost_cap:
            raise CostUp()
        if self.turn_ends:
            return self.turn_ends.pop(0)
        self.activity.last_message = f"turn {self.turns} done"
        return TurnEnd(TurnEndKind.STOP, self.activity.last_message)

    def pause(self, seconds: float) -> None:
        self.paused.append(seconds)

    def settle_cost(self, deadline: float | None = None) -> None:
        self.cost_usd += self.unreported
        self.unreported = 0.0

    def hold(self, turn: TurnEnd, deadline: float | None = None) -> TurnEnd | None:
        if self.holds:
            return self.holds.pop(0)
        return turn

    def wait_turn_start(self, deadline: float | None = None) -> None:
        self.person_turns += 1

    def interrupt(self, deadline: float | None = None) -> bool | None:
        if not self.working:
            return None
        self.typed.append("<Esc>")
        self.working = False
        return True

    def clear(self, deadline: float | None = None, final: bool = True) -> InjectResult | None:
        self.typed.append("/clear")
        return InjectResult("/clear", self.command_takes, 1)

    def shutdown(self, deadline: float | None = None) -> bool:
        self.shut_down = True
        return True

    def snapshot(self) -> ScreenSnapshot:
        return ScreenSnapshot(("❯ ",), "✳ Claude", (0, 2))


class FakeSupervisor:
    """Answers in order; "FAIL" fails the decision, an exception is raised as it is."""

    def __init__(self, answers: Iterable[str | BaseException], cost_usd: float = 0.25) -> None:
        self._answers = iter(answers)
        self._cost = cost_usd
        self.prompts: list[str] = []
        self.systems: list[str | None] = []
        self.prepared: list[str | None] = []

    def prepare(self, system: str | None = None) -> None:
        self.prepared.append(system)

    def decide(
        self, prompt: str, iteration: int, timeout: float | None = None, system: str | None = None
    ) -> Decided:
        self.prompts.append(prompt)
        self.systems.append(system)
        answer = next(self._answers)
        if isinstance(answer, BaseException):
            raise answer
        if answer == "FAIL":
            raise SupervisorFailed("all attempts failed")
        return Decided(parse(answer), Answer(answer, 0.01, cost_usd=self._cost), 1)


def _run(  # type: ignore[no-untyped-def]
    answers: list[str],
    max_iter: int = 50,
    agent: FakeAgent | None = None,
    **kw,
):
    agent = agent or FakeAgent()
    sup = FakeSupervisor(answers)
    rec = EventList()
    cfg = LoopConfig(
        "the task",
        max_iter,
        max_cost=kw.pop("max_cost", None),
        max_time=kw.pop("max_time", None),
        questions=kw.pop("questions", "supervisor"),
        person_present=kw.pop("person_present", False),
        split_prompt=kw.pop("split_prompt", False),
        max_repeats=kw.pop("max_repeats", 3),
        wind_down=kw.pop("wind_down", None),
        spent=kw.pop("spent", Spent()),
    )
    result = RunLoop(cfg, agent, sup, EventLog([rec]), **kw).run()
    return result, agent, sup, rec


def test_continue_types_the_instruction_then_complete_ends_the_agent() -> None:
    result, agent, sup, rec = _run(["[CONTINUE] next step", "[COMPLETE] done"])
    assert result.outcome is Outcome.COMPLETE
    assert result.exit_code == 0
    assert result.iterations == 2
    assert agent.typed == ["the task", "next step"]
    assert agent.shut_down
    assert "Iteration 1/50" in sup.prompts[0] and "Iteration 2/50" in sup.prompts[1]
    decisions = [e.fields for e in rec.events if e.event == "decision"]
    assert [d["action"] for d in decisions] == ["continue", "complete"]
    assert rec.names()[:2] == ["agent_ready", "inject"]


def test_abort_types_clear_and_exits_1() -> None:
    result, agent, _, _ = _run(["[ABORT] wrong direction"])
    assert result.outcome is Outcome.ABORT
    assert result.exit_code == 1
    assert result.reason == "wrong direction"
    assert agent.typed[-1] == "/clear"
    assert agent.shut_down


def test_a_clear_that_did_not_take_is_logged_unconfirmed() -> None:
    agent = FakeAgent()
    agent.command_takes = False  # e.g. a dialog was open, so /clear was never typed
    result, _, _, rec = _run(["[ABORT] wrong direction"], agent=agent)
    assert result.outcome is Outcome.ABORT
    clear = [e.fields for e in rec.events if e.event == "inject"][-1]
    assert (clear["text"], clear["confirmed"]) == ("/clear", False)


def test_budget_is_a_hard_stop_after_exactly_n_decisions() -> None:
    result, agent, sup, rec = _run(["[CONTINUE] more"] * 10, max_iter=3)
    assert result.outcome is Outcome.BUDGET
    assert result.exit_code == 3
    assert len(sup.prompts) == 3
    assert agent.typed == ["the task", "more", "more", "/clear"]
    assert any(e.event == "warning" and "budget" in e.fields["message"] for e in rec.events)


def test_complete_on_the_last_iteration_is_still_complete() -> None:
    result, *_ = _run(["[CONTINUE] more", "[COMPLETE] ok"], max_iter=2)
    assert result.outcome is Outcome.COMPLETE


def test_supervisor_failure_exits_5_and_ends_the_agent() -> None:
    result, agent, _, _ = _run(["[CONTINUE] more", "FAIL"])
    assert result.outcome is Outcome.SUPERVISOR_FAILED
    assert result.exit_code == 5
    assert agent.shut_down
    assert result.iterations == 1  # the failed decision was never made: it counts none


def test_a_signal_during_a_decision_counts_no_iteration() -> None:
    sup = FakeSupervisor(["[CONTINUE] more", Interrupted(15)])
    result = RunLoop(LoopConfig("t", 5), FakeAgent(), sup, EventLog()).run()
    assert (result.outcome, result.iterations) == (Outcome.SIGNAL, 1)


def test_a_signal_while_the_agent_is_ended_after_a_failure_is_the_runs_outcome() -> None:
    # SIGTERM while the supervisor decides: the decision fails ("cancelled"), and ending the
    # agent then meets the signal. The run ends as the signal, with no traceback.
    class Signalled(FakeAgent):
        def shutdown(self, deadline: float | None = None) -> bool:
            raise Interrupted(15)

    result, *_ = _run(["FAIL"], agent=Signalled())
    assert (result.outcome, result.exit_code, result.signum) == (Outcome.SIGNAL, 143, 15)


def test_agent_exit_mid_run_exits_4() -> None:
    result, *_ = _run(["[CONTINUE] more"] * 5, agent=FakeAgent(exit_after_turns=2))
    assert result.outcome is Outcome.AGENT_EXITED
    assert result.exit_code == 4
    assert result.iterations == 2


@pytest.mark.parametrize("answer", ["just do more", "Run the tests.\nThen fix them."])
def test_unmarked_answer_is_typed_as_the_instruction(answer: str) -> None:
    result, agent, _, rec = _run([answer, "[COMPLETE]"])
    assert agent.typed[1] == answer
    assert result.outcome is Outcome.COMPLETE
    assert next(e.fields["action"] for e in rec.events if e.event == "decision") == "continue"


class FakeVerifier:
    def __init__(self, outcomes: list[int]) -> None:
        self.commands: list[tuple[str, ...]] = [("make", "test")]
        self._outcomes = outcomes
        self.runs = 0

    def run(self, deadline: float | None = None) -> list[VerifyResult]:
        code = self._outcomes[min(self.runs, len(self._outcomes) - 1)]
        self.runs += 1
        return [VerifyResult(("make", "test"), code, "FAILED test_x\n" if code else "ok", 0.1)]


def test_complete_is_accepted_only_when_verification_passes() -> None:
    verifier = FakeVerifier([1, 0])
    result, agent, sup, rec = _run(["[COMPLETE] done", "[COMPLETE] really"], verifier=verifier)
    assert result.outcome is Outcome.COMPLETE and result.iterations == 2
    assert verifier.runs == 2
    assert agent.typed[1].startswith("Verification failed: `make test` exited 1")
    assert "FAILED test_x" in agent.typed[1]
    assert "Last verification" in sup.prompts[1] and "exited 1" in sup.prompts[1]
    verdicts = [e.fields["passed"] for e in rec.events if e.event == "verify"]
    assert verdicts == [False, True]


class TamperedGuard:
    """A tamper guard that finds the test file changed, and failing with the original."""

    def __init__(self) -> None:
        self.checks = 0

    def check(self, commands: object, deadline: float | None = None) -> Finding:
        self.checks += 1
        failed = VerifyResult(("make", "test"), 1, "AssertionError", 0.1)
        return Finding(("tests/test_x.py",), TamperVerdict.FAILED, failed)


def test_a_tampered_complete_is_refused_then_escalated_without_a_person() -> None:
    guard = TamperedGuard()
    result, agent, sup, rec = _run(
        ["[COMPLETE] done", "[COMPLETE] done"],
        verifier=FakeVerifier([0]),
        judging=Judging(guard=guard),
    )
    assert (result.outcome, result.iterations) == (Outcome.ESCALATED, 2)
    assert "tests/test_x.py" in result.reason and result.reason.startswith("tampering")
    assert agent.typed[1].startswith("Not done: you changed files that define when the task")
    injects = [e.fields["kind"] for e in rec.events if e.event == "inject"]
    assert injects == ["task", "tamper"]
    escalation = next(e.fields for e in rec.events if e.event == "escalation")
    assert escalation["at"] == "tamper"
    assert "/clear" not in agent.typed and agent.shut_down
    assert "ptysup refused iteration 1's [COMPLETE]" in sup.prompts[1]


def test_a_tampered_complete_at_a_question_answers_with_the_refusal() -> None:
    from tests.unit.test_questions import SINGLE, asking

    agent = FakeAgent()
    ask, _ = asking(SINGLE)
    agent.turn_ends = [ask]
    result, agent, _, rec = _run(
        ["[COMPLETE] done", "[ABORT] stop"],
        agent=agent,
        verifier=FakeVerifier([0]),
        judging=Judging(guard=TamperedGuard()),
    )
    answers = [e.fields for e in rec.events if e.event == "answer"]
    assert answers[0]["by"] == "tamper"
    assert next(iter(answers[0]["answers"].values())).startswith("Not done: you changed")
    assert result.outcome is Outcome.ABORT


def test_failed_verification_on_the_last_iteration_is_budget() -> None:
    result, agent, *_ = _run(["[COMPLETE] done"], max_iter=1, verifier=FakeVerifier([2]))
    assert result.outcome is Outcome.BUDGET
    assert agent.typed[-1] == "/clear"


def test_cost_budget_stops_like_the_iteration_budget() -> None:
    result, agent, sup, rec = _run(["[CONTINUE] more"] * 5, max_cost=0.5)
    assert result.outcome is Outcome.COST and result.exit_code == 3
    assert len(sup.prompts) == 2  # 0.25 + 0.25 reaches 0.5
    assert result.cost_usd == 0.5
    assert agent.typed[-1] == "/clear"
    assert [e.fields["total_cost_usd"] for e in rec.events if e.event == "decision"] == [0.25, 0.5]


def test_the_cost_budget_counts_the_agent_and_the_supervisor() -> None:
    agent = FakeAgent()
    agent.spend_per_turn = 0.1
    result, agent, sup, rec = _run(["[CONTINUE] more"] * 5, max_cost=0.65, agent=agent)
    # turn 1: 0.1 + 0.25; turn 2: 0.2 + 0.5 = 0.7 reaches 0.65 at the decision
    assert result.outcome is Outcome.COST and len(sup.prompts) == 2
    assert (result.agent_cost_usd, result.supervisor_cost_usd, result.cost_usd) == (0.2, 0.5, 0.7)
    decision = [e.fields for e in rec.events if e.event == "decision"][-1]
    assert (decision["agent_cost_usd"], decision["supervisor_cost_usd"]) == (0.2, 0.5)
    assert decision["total_cost_usd"] == 0.7
    assert "agent $0.2000, supervisor $0.5000" in result.reason


def test_a_turns_spend_reported_after_its_end_stops_the_run_before_a_decision() -> None:
    # Claude Code reports a turn's last request a moment after the turn ends: the loop
    # waits for that report, so no decision is paid for on a figure that misses it.
    agent = FakeAgent()
    agent.late_spend_per_turn = 0.3
    result, agent, sup, rec = _run(["[CONTINUE] more"] * 5, max_cost=0.3, agent=agent)
    assert result.outcome is Outcome.COST and result.exit_code == 3
    assert sup.prompts == [] and not [e for e in rec.events if e.event == "decision"]
    assert (result.agent_cost_usd, result.supervisor_cost_usd) == (0.3, 0.0)
    assert agent.typed[-1] == "/clear"


def test_without_a_cost_budget_nothing_waits_for_the_spend_report() -> None:
    agent = FakeAgent()
    agent.late_spend_per_turn = 0.3
    result, agent, sup, _ = _run(["[CONTINUE] more", "[COMPLETE] done"], agent=agent)
    assert result.outcome is Outcome.COMPLETE and len(sup.prompts) == 2
    assert agent.unreported == 0.6  # the loop never waited: a decision as soon as it can


def test_the_agent_spending_the_rest_of_the_budget_ends_its_turn() -> None:
    agent = FakeAgent()
    agent.spend_per_turn = 0.3
    result, agent, sup, _ = _run(["[CONTINUE] more"] * 5, max_cost=0.8, agent=agent)
    # After decision 1 (0.3 + 0.25) the agent may spend 0.55 more: its second turn's
    # 0.3 brings it to 0.6, past that cap, so the turn ends the run before a decision.
    assert result.outcome is Outcome.COST and len(sup.prompts) == 1
    assert agent.cost_cap == 0.55 and agent.typed[-1] == "/clear"


def test_a_split_prompt_sends_the_task_as_the_system_prompt_and_prepares_a_spare() -> None:
    result, _, sup, _ = _run(["[CONTINUE] more", "[COMPLETE] ok"], split_prompt=True)
    assert result.outcome is Outcome.COMPLETE
    system = sup.systems[0]
    assert system is not None and "## Task\nthe task" in system
    assert sup.systems == [system, system] and sup.prepared == [system]
    assert all("## Task" not in p and "Iteration" in p for p in sup.prompts)


def test_an_unsplit_prompt_holds_the_task() -> None:
    _, _, sup, _ = _run(["[COMPLETE] ok"])
    assert sup.systems == [None] and "the task" in sup.prompts[0]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_time_budget_ends_a_turn_that_runs_past_it() -> None:
    clock = Clock()

    class SlowAgent(FakeAgent):
        def wait_turn_end(self, deadline: float | None = None) -> TurnEnd | Ask:
            assert deadline == 1000.0 + 60
            clock.now = deadline
            raise TimeUp()

    result, agent, sup, _ = _run(["[CONTINUE] x"], agent=SlowAgent(), max_time=60, clock=clock)
    assert result.outcome is Outcome.TIME and result.exit_code == 3
    assert not sup.prompts
    assert agent.typed[-1] == "/clear"


def test_api_error_turn_waits_and_continues_without_an_iteration() -> None:
    agent = FakeAgent()
    agent.turn_ends = [TurnEnd(TurnEndKind.API_ERROR, "rate_limit: limit reached, resets in 2m")]
    result, agent, sup, rec = _run(
        ["[COMPLETE] ok"], agent=agent, waits=WaitPolicy(max_waits=3, base_s=5)
    )
    assert result.outcome is Outcome.COMPLETE and result.iterations == 1
    assert agent.paused == [120]
    assert agent.typed == ["the task", "continue"]
    assert len(sup.prompts) == 1
    assert [e.fields["seconds"] for e in rec.events if e.event == "wait"] == [120]


def test_api_error_without_waits_exits_6() -> None:
    agent = FakeAgent()
    agent.turn_ends = [TurnEnd(TurnEndKind.API_ERROR, "API Error: 529")]
    result, agent, sup, _ = _run(["[COMPLETE] ok"], agent=agent, waits=WaitPolicy(enabled=False))
    assert result.outcome is Outcome.API_ERROR and result.exit_code == 6
    assert not sup.prompts and agent.shut_down


def test_supervisor_logs_a_warning_for_an_answer_without_a_marker() -> None:
    class Runner:
        cancelled = threading.Event()

        def run(
            self, prompt: str, timeout: float | None = None, system: str | None = None
        ) -> Answer:
            return Answer("please run the tests", 0.1)

        def end_current(self) -> None:
            pass

        def prepare(self, system: str | None = None) -> None:
            pass

    rec = EventList()
    decided = Supervisor(Runner(), EventLog([rec])).decide("prompt", 3)
    assert (decided.decision.action.value, decided.decision.content) == (
        "continue",
        "please run the tests",
    )
    warnings = [e.fields for e in rec.events if e.event == "warning"]
    assert warnings == [
        {"iteration": 3, "message": ("supervisor answer has no marker; treating it as [CONTINUE]")}
    ]


def test_a_question_while_supervision_is_paused_is_left_to_the_person() -> None:
    from tests.unit.test_questions import SINGLE, asking

    agent = FakeAgent()
    agent.person.paused = True  # the person took over with the escape key
    ask, reply = asking(SINGLE)
    agent.turn_ends = [ask]
    agent.exit_after_turns = 1
    result, _, sup, rec = _run(["[CONTINUE] x"], agent=agent)
    assert not sup.prompts and reply.sent == [""]  # the picker is the person's
    assert [e.fields["to"] for e in rec.events if e.event == "question"] == ["person"]
    assert result.outcome is Outcome.AGENT_EXITED


def test_the_split_prompt_offers_every_marker() -> None:
    from ptysup.supervisor.prompt import SPLIT_TEMPLATE

    assert "[ESCALATE]" in SPLIT_TEMPLATE.splitlines()[-1]


def test_a_resumed_runs_agent_ready_counts_this_parts_start_not_the_whole_run() -> None:
    rec = EventList()
    cfg = LoopConfig("the task", 5, spent=Spent(iterations=1, elapsed_s=500.0))
    sup = FakeSupervisor(["[COMPLETE] done"])
    RunLoop(cfg, FakeAgent(), sup, EventLog([rec]), Tick(0.01)).run()
    [ready] = [e.fields for e in rec.events if e.event == "agent_ready"]
    assert 0 < ready["elapsed_s"] < 1
    end = [e.fields for e in rec.events if e.event == "decision"][-1]
    assert end["elapsed_s"] > 500  # the run's own clock still counts every part


def test_a_decisions_cost_is_logged_without_float_noise() -> None:
    rec = EventList()
    sup = FakeSupervisor(["[COMPLETE] done"], cost_usd=0.0035700000000000003)
    RunLoop(LoopConfig("t", 5), FakeAgent(), sup, EventLog([rec])).run()
    [decision] = [e.fields for e in rec.events if e.event == "decision"]
    assert decision["cost_usd"] == 0.00357 and repr(decision["cost_usd"]) == "0.00357"


KEY = "sk-ant-api03-" + "Rt5Yu7Io9Pa2Sd4Fg6Hj8Kl0Zx" * 3  # made up, 91 characters


class ScreenAgent(FakeAgent):
    """An agent whose screen holds a key broken over three 40-column rows, the first just
    above the last 60 rows, and whose turn stalls with the key 500 characters from the
    end of what it shows."""

    def snapshot(self) -> ScreenSnapshot:
        rows = [f"● {KEY[:38]}", f"  {KEY[38:76]}", f"  {KEY[76:]}", *("─" * 40,) * 57, "❯ "]
        return ScreenSnapshot(tuple(rows), "✳ Claude", (60, 2))

    def wait_turn_end(self, deadline: float | None = None) -> TurnEnd | Ask:
        self.turns += 1
        return TurnEnd(TurnEndKind.STALLED, f"it printed {KEY}" + "." * 450)


def test_a_key_the_excerpts_cut_never_reaches_the_prompt_or_the_log() -> None:
    _, _, sup, rec = _run(["[COMPLETE] done"], agent=ScreenAgent(), redact=Redactor())
    [prompt] = sup.prompts
    assert KEY[38:76] not in prompt and "[REDACTED:anthropic-key]" in prompt, prompt
    fragments = {KEY[i : i + 8] for i in range(13, len(KEY) - 7)}
    [turn_end] = [e for e in rec.events if e.event == "turn_end"]
    assert not [f for f in fragments if f in turn_end.fields["detail"]], turn_end.fields


class SameAgent(FakeAgent):
    """An agent that gives the answers in `answers` in turn, the last one forever."""

    def __init__(self, *answers: str) -> None:
        super().__init__()
        self.answers = list(answers) or ["I cannot find the file"]

    def wait_turn_end(self, deadline: float | None = None) -> TurnEnd | Ask:
        turn = super().wait_turn_end(deadline)
        if isinstance(turn, TurnEnd) and turn.kind is TurnEndKind.STOP:
            said = self.answers[min(self.turns, len(self.answers)) - 1]
            self.activity.last_message = said
            return TurnEnd(TurnEndKind.STOP, said)
        return turn


TRY_AGAIN = "[CONTINUE] Please try again to find config.yaml"


def test_the_same_instruction_getting_the_same_answer_escalates_with_exit_7() -> None:
    result, agent, sup, rec = _run([TRY_AGAIN] * 30, agent=SameAgent())
    assert result.outcome is Outcome.ESCALATED and result.exit_code == 7
    # task → answer, then the same instruction got the same answer at turns 2, 3 and 4:
    # three decisions, and the fourth turn escalates without one.
    assert result.iterations == 3 and len(sup.prompts) == 3
    assert "spinning: the same instruction got the same answer 3 times" in result.reason
    assert "Please try again to find config.yaml" in result.reason
    assert "I cannot find the file" in result.reason
    assert "/clear" not in agent.typed and agent.shut_down
    repeats = [e.fields for e in rec.events if e.event == "repeat"]
    assert [r["count"] for r in repeats] == [2, 3]
    assert repeats[0]["what"] == ["instruction", "answer", "decision"]
    assert repeats[0]["max_repeats"] == 3
    (escalation,) = [e.fields for e in rec.events if e.event == "escalation"]
    assert (escalation["at"], escalation["waiting"]) == ("repeat", False)


def test_the_supervisor_is_told_from_the_second_identical_round() -> None:
    _, _, sup, _ = _run([TRY_AGAIN] * 30, agent=SameAgent())
    assert not any("Repeating:" in p for p in sup.prompts[:2])
    assert "Repeating: the same instruction got the same answer 2 times in a row" in sup.prompts[2]
    assert '"Please try again to find config.yaml"' in sup.prompts[2]
    assert "One more identical round ends the run" in sup.prompts[2]


def test_a_supervisor_that_changes_course_after_the_note_is_not_stopped() -> None:
    answers = [TRY_AGAIN, TRY_AGAIN, "[CONTINUE] Look in ./conf instead", "[COMPLETE] found"]
    result, *_ = _run(answers, agent=SameAgent())
    assert result.outcome is Outcome.COMPLETE and result.iterations == 4


@pytest.mark.parametrize(
    "answer",
    [
        "Looked in folder {n}, not there",
        "Step {n} of 9 done in 3s",  # the step counts, the duration does not
        "⠋ Working\nFixed {n} of 40 tests",
    ],
)
def test_a_different_answer_each_time_is_slow_progress_never_spinning(answer: str) -> None:
    agent = SameAgent(*(answer.format(n=n) for n in range(1, 8)))
    result, _, sup, rec = _run([TRY_AGAIN] * 6, max_iter=6, agent=agent)
    assert result.outcome is Outcome.BUDGET and result.iterations == 6
    assert not [e for e in rec.events if e.event == "repeat"]
    assert not any("Repeating:" in p for p in sup.prompts)


def test_files_changing_with_the_same_answer_is_progress() -> None:
    changes = iter(range(100))
    result, _, _, rec = _run(
        [TRY_AGAIN] * 6, max_iter=6, agent=SameAgent(), fingerprint=lambda: str(next(changes))
    )
    assert result.outcome is Outcome.BUDGET and result.iterations == 6
    assert not [e for e in rec.events if e.event == "repeat"]


def test_unchanged_files_are_said_to_be_unchanged() -> None:
    result, *_ = _run([TRY_AGAIN] * 6, agent=SameAgent(), fingerprint=lambda: "same")
    assert result.outcome is Outcome.ESCALATED
    assert "the files (git status and diff)" in result.reason


def test_max_repeats_0_turns_the_detector_off() -> None:
    result, _, _, rec = _run([TRY_AGAIN] * 6, max_iter=6, agent=SameAgent(), max_repeats=0)
    assert result.outcome is Outcome.BUDGET and result.iterations == 6
    assert not [e for e in rec.events if e.event == "repeat"]


def test_in_a_terminal_a_spinning_run_waits_for_the_person() -> None:
    agent = SameAgent()
    result, agent, sup, rec = _run(
        [TRY_AGAIN] * 3 + ["[COMPLETE] done"], agent=agent, person_present=True
    )
    assert agent.person_turns == 1  # the loop waited for the person's turn to start
    (escalation,) = [e.fields for e in rec.events if e.event == "escalation"]
    assert (escalation["at"], escalation["waiting"]) == ("repeat", True)
    # The person's turn is a new start: its end is decided on, and the run completes.
    assert result.outcome is Outcome.COMPLETE and len(sup.prompts) == 4


def test_complete_against_the_same_failing_verify_escalates() -> None:
    verifier = FakeVerifier([1])
    result, _, _, rec = _run(["[COMPLETE] done"] * 10, agent=SameAgent(), verifier=verifier)
    assert result.outcome is Outcome.ESCALATED and result.exit_code == 7
    assert "the failing --verify" in result.reason and "make test" in result.reason
    repeats = [e.fields for e in rec.events if e.event == "repeat"]
    assert repeats[-1]["what"] == ["instruction", "answer", "verify", "decision"]
    assert "the decision before it ([COMPLETE])" in result.reason


def test_the_same_api_error_again_and_again_escalates_instead_of_waiting() -> None:
    agent = FakeAgent()
    error = 'API Error: 529 {"type":"overloaded_error","request_id":"req_%d"}'
    agent.turn_ends = [TurnEnd(TurnEndKind.API_ERROR, error % i) for i in range(10)]
    result, agent, sup, rec = _run(
        ["[COMPLETE] ok"], agent=agent, waits=WaitPolicy(max_waits=9, base_s=5)
    )
    assert result.outcome is Outcome.ESCALATED and not sup.prompts
    assert "the agent hit the same API error 3 times in a row" in result.reason
    # The task, then two `continue`s that got the same error; the third is not waited out.
    assert agent.typed == ["the task", "continue", "continue", "continue"]
    assert len(agent.paused) == 3
    assert next(e.fields["what"] for e in rec.events if e.event == "repeat")[1] == "api_error"


def test_a_secret_in_a_repeated_answer_is_redacted_before_it_is_cut() -> None:
    # The excerpt of an answer is cut at 160 characters: right inside this key.
    said = "a" * 150 + " SECRET123456789 is the key"
    _, _, sup, rec = _run(
        [TRY_AGAIN] * 5, agent=SameAgent(said), redact=Redactor.with_extra([r"SECRET\d{9}"])
    )
    repeats = [e.fields for e in rec.events if e.event == "repeat"]
    assert repeats and all("SECRET1" not in r["answer"] for r in repeats)
    escalation = next(e.fields for e in rec.events if e.event == "escalation")
    assert "SECRET1" not in escalation["reason"] and "SECRET1" not in sup.prompts[-1]


def test_the_time_before_the_loop_counts_against_the_run_not_the_agents_start() -> None:
    rec = EventList()
    cfg = LoopConfig("the task", 5, max_time=100.0, head_start_s=40.0)
    RunLoop(
        cfg, FakeAgent(), FakeSupervisor(["[COMPLETE] done"]), EventLog([rec]), Tick(0.01)
    ).run()
    [ready] = [e.fields for e in rec.events if e.event == "agent_ready"]
    assert 0 < ready["elapsed_s"] < 1  # the checks' baseline is not the agent's start
    [decision] = [e.fields for e in rec.events if e.event == "decision"]
    assert 40 < decision["elapsed_s"] < 41


def _resumed(
    decided: str, verifier: Any = None, person_present: bool = False
) -> tuple[RunResult, FakeAgent, FakeSupervisor, EventList]:
    """A resumed run whose earlier part logged DECIDED and was killed before its end."""
    rec, agent = EventList(), FakeAgent()
    sup = FakeSupervisor(["[CONTINUE] asked again", "[COMPLETE] asked again"])
    cfg = LoopConfig(
        "the task",
        5,
        person_present=person_present,
        spent=Spent(iterations=2),
        resumed=True,
        decided=parse(decided),
    )
    result = RunLoop(cfg, agent, sup, EventLog([rec]), verifier=verifier).run()
    return result, agent, sup, rec


@pytest.mark.parametrize(
    ("decided", "outcome", "typed"),
    [
        ("[COMPLETE] done", Outcome.COMPLETE, []),
        ("[ABORT] hopeless", Outcome.ABORT, ["/clear"]),
        ("[ESCALATE] a person must choose", Outcome.ESCALATED, []),
    ],
)
def test_a_resumed_run_carries_out_the_decision_it_never_finished(
    decided: str, outcome: Outcome, typed: list[str]
) -> None:
    result, agent, sup, rec = _resumed(decided)
    assert (result.outcome, result.reason, result.iterations) == (
        outcome,
        decided.split("] ")[1],
        2,
    )
    assert sup.prompts == [] and agent.typed == typed and agent.shut_down
    (carried,) = [e.fields for e in rec.events if e.event == "decision_resumed"]
    assert carried == {
        "iteration": 2,
        "action": parse(decided).action.value,
        "content": result.reason,
    }
    assert "turn_end" not in rec.names()


def test_a_resumed_complete_is_verified_again_and_a_failure_goes_to_the_agent() -> None:
    verifier = FakeVerifier([1, 0])
    result, agent, sup, _ = _resumed("[COMPLETE] done", verifier)
    assert agent.typed[0].startswith("Verification failed: `make test` exited 1")
    assert len(sup.prompts) == 2 and result.outcome is Outcome.COMPLETE  # asked anew after
    assert result.reason == "asked again"


def test_a_resumed_escalation_with_a_person_waits_for_their_turn() -> None:
    result, agent, sup, rec = _resumed("[ESCALATE] a person must choose", person_present=True)
    assert agent.person_turns == 1 and "the task" not in agent.typed
    assert [e.fields["waiting"] for e in rec.events if e.event == "escalation"] == [True]
    assert result.outcome is Outcome.COMPLETE and len(sup.prompts) == 2


def test_a_resumed_run_past_its_time_budget_ends_at_once() -> None:
    rec = EventList()
    cfg = LoopConfig("the task", 5, max_time=60.0, spent=Spent(1, 61.0), resumed=True)
    sup = FakeSupervisor(["[COMPLETE] never asked"])
    result = RunLoop(cfg, FakeAgent(), sup, EventLog([rec])).run()
    assert result.outcome is Outcome.TIME and sup.prompts == []


WIND = "(ptysup: this run is near the end of its budget"


def _winds(rec: EventList) -> list[dict[str, Any]]:
    return [e.fields for e in rec.events if e.event == "wind_down"]


def test_the_agent_is_told_once_to_wind_down_with_an_instruction_then_the_budget_stops() -> None:
    result, agent, sup, rec = _run(["[CONTINUE] more"] * 10, max_iter=10, wind_down=0.85)
    assert result.outcome is Outcome.BUDGET
    told = [t for t in agent.typed if WIND in t]
    assert len(told) == 1 and agent.typed.index(told[0]) == 8  # decision 8's instruction
    assert told[0].startswith("more\n\n" + WIND) and "2 turns (this one included)" in told[0]
    assert "committed" in told[0] and "what remains" in told[0]
    (event,) = _winds(rec)
    assert (event["iteration"], event["budget"], event["kind"]) == (8, "iterations", "instruction")
    assert (event["fraction"], event["turns_left"]) == (0.85, 2)
    # The supervisor knows from the decision that winds down on, and after it.
    assert ["Last stretch" in p for p in sup.prompts] == [False] * 7 + [True] * 3
    assert "has been told to wind down" in sup.prompts[8]


def test_without_wind_down_nothing_is_added() -> None:
    _, agent, sup, rec = _run(["[CONTINUE] more"] * 10, max_iter=10)
    assert not _winds(rec) and not any(WIND in t for t in agent.typed)
    assert not any("Last stretch" in p for p in sup.prompts)


def test_the_time_budget_winds_down_at_its_share() -> None:
    clock = Clock()

    class Minutes(FakeAgent):  # each turn takes a minute
        def wait_turn_end(self, deadline: float | None = None) -> TurnEnd | Ask:
            clock.now += 60
            if deadline is not None and clock.now >= deadline:
                raise TimeUp()
            return super().wait_turn_end(deadline)

    result, agent, _, rec = _run(
        ["[CONTINUE] more"] * 20, agent=Minutes(), max_time=600, clock=clock, wind_down=0.85
    )
    assert result.outcome is Outcome.TIME
    (event,) = _winds(rec)
    assert event["budget"] == "time" and event["iteration"] == 9  # 9 minutes of 10
    assert event["time_left_s"] == 60.0
    assert sum(WIND in t for t in agent.typed) == 1


def test_the_cost_budget_winds_down_at_its_share() -> None:
    # 0.25 a decision: 1.75 of 2.00 at the 7th, the 8th spends the rest.
    result, agent, _, rec = _run(["[CONTINUE] more"] * 20, max_cost=2.0, wind_down=0.85)
    assert result.outcome is Outcome.COST
    (event,) = _winds(rec)
    assert (event["budget"], event["iteration"], event["cost_left_usd"]) == ("cost", 7, 0.25)
    assert WIND in agent.typed[7]


def test_a_failed_check_carries_the_wind_down_as_an_instruction_does() -> None:
    agent = FakeAgent()
    result, agent, _, rec = _run(
        ["[CONTINUE] a", "[COMPLETE] done", "[CONTINUE] b"],
        max_iter=3,
        agent=agent,
        verifier=FakeVerifier([1, 1, 1]),
        wind_down=0.85,
    )
    assert result.outcome is Outcome.BUDGET
    (event,) = _winds(rec)
    assert (event["iteration"], event["kind"]) == (2, "verify")
    assert WIND in agent.typed[2]


def test_a_resumed_run_that_wound_down_does_not_tell_the_agent_again() -> None:
    spent = Spent(iterations=8, wound_down=True)
    result, agent, sup, rec = _run(
        ["[CONTINUE] more"] * 5, max_iter=10, spent=spent, wind_down=0.85
    )
    assert result.outcome is Outcome.BUDGET
    assert not _winds(rec) and not any(WIND in t for t in agent.typed)
    assert all("has been told to wind down" in p for p in sup.prompts)


def test_a_budget_raised_past_the_point_lifts_the_wind_down_and_it_comes_again() -> None:
    # Told at 9 of 10; resumed with --max-iter 100: out of the last stretch, then in again.
    spent = Spent(iterations=9, wound_down=True)
    result, _, sup, rec = _run(["[CONTINUE] more"] * 100, max_iter=100, spent=spent, wind_down=0.85)
    assert result.outcome is Outcome.BUDGET
    lifted = [e.fields for e in rec.events if e.event == "wind_down_lifted"]
    assert lifted == [{"iteration": 10, "max_iter": 100, "max_time_s": None, "max_cost_usd": None}]
    assert "The budgets were raised after the agent was told to wind down" in sup.prompts[0]
    assert "budgets were raised" not in sup.prompts[1]
    (event,) = _winds(rec)
    assert event["iteration"] == 84
