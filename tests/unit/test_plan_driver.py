"""The plan driver feeding the run loop, and a resumed loop, with a fake agent and supervisor."""

from __future__ import annotations

from collections.abc import Sequence

from ptysup.events import EventLog
from ptysup.exitcodes import Outcome
from ptysup.plan.schema import Plan, Step
from ptysup.run.loop import AFRESH, RESUMED_NOTE, LoopConfig, RunLoop, Spent, resumed_note
from ptysup.run.plandriver import PlanDriver
from ptysup.run.verify import VerifyResult
from tests.helpers import EventList
from tests.unit.test_loop import FakeAgent, FakeSupervisor

PLAN = Plan(
    (
        Step("a", "do a", (("check-a",),), max_iter=3),
        Step("b", "do b", (("check-b",),), clear=True),
    ),
    goal="the goal",
)


class FakeVerifier:
    """Passes each command once its name is in `passing`."""

    def __init__(self, commands: Sequence[tuple[str, ...]], passing: set[str]) -> None:
        self.commands = list(commands)
        self._passing = passing

    def run(self, deadline: float | None = None) -> list[VerifyResult]:
        return [VerifyResult(c, 0 if c[0] in self._passing else 1, "", 0.0) for c in self.commands]


def _loop(
    answers: list[str], passing: set[str], cfg: LoopConfig, **driver: object
) -> tuple[RunLoop, FakeAgent, FakeSupervisor, EventList]:
    agent, sup, rec = FakeAgent(), FakeSupervisor(answers), EventList()
    log = EventLog([rec])
    steps = PlanDriver(PLAN, log, lambda cmds: FakeVerifier(cmds, passing), **driver)  # type: ignore[arg-type]
    return RunLoop(cfg, agent, sup, log, steps=steps), agent, sup, rec


def test_steps_run_in_order_each_behind_its_own_gate() -> None:
    passing = {"check-a"}
    loop, agent, sup, rec = _loop(
        ["[COMPLETE] a", "[COMPLETE] b?", "[COMPLETE] b"], passing, LoopConfig("the goal")
    )
    real_decide = sup.decide

    def decide(  # type: ignore[no-untyped-def]
        prompt: str, iteration: int, timeout: float | None = None, system: str | None = None
    ):
        if iteration == 3:
            passing.add("check-b")  # the agent fixed it after the failed gate
        return real_decide(prompt, iteration, timeout, system)

    sup.decide = decide  # type: ignore[method-assign]
    result = loop.run()
    assert (result.outcome, result.iterations) == (Outcome.COMPLETE, 3)
    assert agent.typed[:3] == [
        "the goal\n\nStep 1/2 (a): do a",
        "/clear",
        "the goal\n\nStep 2/2 (b): do b",
    ]
    assert agent.typed[3].startswith("Verification failed: `check-b` exited 1")
    ends = [e.fields for e in rec.events if e.event == "step_end"]
    assert ends == [
        {"id": "a", "outcome": "complete", "iterations": 1},
        {"id": "b", "outcome": "complete", "iterations": 2},
    ]
    assert "- step 1/2 a: current" in sup.prompts[0] and "- step 2/2 b: pending" in sup.prompts[0]
    assert "Its last verification: `check-b` exited 1" in sup.prompts[2]


def test_a_step_that_uses_up_its_max_iter_ends_the_run_on_budget() -> None:
    loop, agent, _, _ = _loop(["[CONTINUE] more"] * 5, set(), LoopConfig("g"))
    result = loop.run()
    assert (result.outcome, result.iterations) == (Outcome.BUDGET, 3)
    assert result.reason == "step 'a' used its 3 iteration(s)"
    assert agent.typed[-1] == "/clear"


def test_a_resumed_run_asks_the_supervisor_first_within_the_budget_left() -> None:
    cfg = LoopConfig("g", max_iter=6, resumed=True, spent=Spent(4, 100.0, 1.5))
    loop, agent, sup, rec = _loop(
        ["[CONTINUE] finish b", "[COMPLETE] b"], {"check-a", "check-b"}, cfg,
        done=("a",), started=True, used=2,
    )  # fmt: skip
    result = loop.run()
    assert (result.outcome, result.iterations) == (Outcome.COMPLETE, 6)
    assert result.cost_usd == 2.0  # 1.5 before + 0.25 per decision
    assert agent.typed == ["finish b"]  # no step text typed again
    assert RESUMED_NOTE in sup.prompts[0] and "Iteration 5/6" in sup.prompts[0]
    assert "Current step (b)" in sup.prompts[0] and RESUMED_NOTE not in sup.prompts[1]
    assert next(e.fields["kind"] for e in rec.events if e.event == "turn_end") == "resumed"
    assert [e.fields for e in rec.events if e.event == "step_end"] == [
        {"id": "b", "outcome": "complete", "iterations": 4}
    ]


def test_a_resumed_run_s_supervisor_is_told_what_the_agent_did_with_its_conversation() -> None:
    cfg = LoopConfig("g", max_iter=6, resumed=True, spent=Spent(4, 100.0), resumed_as=AFRESH)
    loop, _, sup, _ = _loop(
        ["[COMPLETE] b"], {"check-a", "check-b"}, cfg, done=("a",), started=True, used=2
    )
    loop.run()
    assert resumed_note(AFRESH) in sup.prompts[0]
    assert "started again and started afresh: it remembers nothing" in sup.prompts[0]
    assert RESUMED_NOTE not in sup.prompts[0]  # "reopened its earlier conversation"


def test_a_budget_used_up_by_a_finished_step_leaves_the_next_step_pending() -> None:
    agent, sup, rec = FakeAgent(), FakeSupervisor(["[COMPLETE] a"]), EventList()
    log = EventLog([rec])
    steps = PlanDriver(PLAN, log, lambda cmds: FakeVerifier(cmds, {"check-a"}))
    result = RunLoop(LoopConfig("g", max_iter=1), agent, sup, log, steps=steps).run()
    steps.end(result.outcome.value, result.iterations)
    assert (result.outcome, result.reason) == (Outcome.BUDGET, "iteration budget of 1 used up")
    assert [(e.event, e.fields["id"]) for e in rec.events if e.event.startswith("step_")] == [
        ("step_start", "a"),
        ("step_end", "a"),
    ]
    assert agent.typed == ["the goal\n\nStep 1/2 (a): do a", "/clear"]
    # A resume begins step b afresh: its text is typed, not assumed under way.
    again = PlanDriver(PLAN, log, lambda cmds: FakeVerifier(cmds, set()), done=("a",))
    opened = again.opening(1)
    assert opened is not None and opened.text.endswith("Step 2/2 (b): do b")


def test_a_run_killed_after_its_last_step_completes_on_the_supervisors_word() -> None:
    cfg = LoopConfig("g", resumed=True, spent=Spent(3, 10.0, 0.0))
    loop, agent, sup, _ = _loop(["[COMPLETE] all done"], set(), cfg, done=("a", "b"))
    result = loop.run()
    assert (result.outcome, result.iterations, agent.typed) == (Outcome.COMPLETE, 4, [])
    assert "- step 2/2 b: done" in sup.prompts[0]


def test_a_complete_given_to_a_question_ends_only_the_step() -> None:
    # The agent asks during step a; the supervisor's [COMPLETE] (its gate passing) ends
    # step a, refuses the question, and step b is typed once that turn has ended.
    from tests.unit.test_questions import SINGLE, asking

    loop, agent, _, rec = _loop(
        ["[COMPLETE] a is done", "[COMPLETE] b"], {"check-a", "check-b"}, LoopConfig("g")
    )
    ask, reply = asking(SINGLE)
    agent.turn_ends = [ask]
    result = loop.run()
    assert result.outcome is Outcome.COMPLETE
    assert reply.output()["permissionDecision"] == "deny"
    assert agent.typed == [
        "the goal\n\nStep 1/2 (a): do a",
        "/clear",
        "the goal\n\nStep 2/2 (b): do b",
    ]
    ends = [e.fields["id"] for e in rec.events if e.event == "step_end"]
    assert ends == ["a", "b"]


def test_a_say_on_resume_types_the_answer_then_the_pending_step() -> None:
    cfg = LoopConfig("g", max_iter=9, resumed=True, say="use the blue one", spent=Spent(1))
    loop, agent, _, rec = _loop(["[COMPLETE] b"], {"check-b"}, cfg, done=("a",))
    result = loop.run()
    assert result.outcome is Outcome.COMPLETE
    # The answer first; step b (with its /clear) at the end of the turn it started.
    assert agent.typed == ["use the blue one", "/clear", "the goal\n\nStep 2/2 (b): do b"]
    starts = [e.fields["id"] for e in rec.events if e.event == "step_start"]
    assert starts == ["b"]
