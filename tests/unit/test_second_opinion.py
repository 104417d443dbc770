"""A second opinion before "done": which command `auto` picks, what it is asked, and what
the run does with its answer (the loop with a fake agent and fake supervisors)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ptysup.config import RunConfig
from ptysup.events import EventLog
from ptysup.exitcodes import Outcome, RunResult
from ptysup.run.decision import Asked, DecisionPath, Moment, PromptSettings, TurnView
from ptysup.run.loop import Judging, LoopConfig, RunLoop
from ptysup.run.second import SecondJudge, choose
from ptysup.run.verify import Verify
from ptysup.supervisor.decide import Decided, DecisionCancelled, SupervisorFailed
from ptysup.supervisor.judge import other_judge, vendor
from ptysup.supervisor.prompt import SUPERVISOR_MARKER
from tests.helpers import EventList
from tests.unit.test_loop import FakeAgent, FakeSupervisor, FakeVerifier


def _installed(tmp_path: Path, *programs: str) -> str:
    """A PATH of one folder holding these programs (empty scripts that could run)."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for name in programs:
        path = folder / name
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
    return str(folder)


def test_the_vendor_is_the_programs_name() -> None:
    assert vendor(["/opt/bin/claude", "-p"]) == "claude"
    assert vendor(["codex", "exec"]) == "codex"
    assert vendor(["python3", "judge.py"]) is None
    assert other_judge({"claude", "codex"}, lambda p: True) == ("gemini", "-p", "")
    assert other_judge({"claude"}, lambda p: p in ("qwen", "opencode")) == ("qwen", "-p", "")
    assert other_judge({"claude"}, lambda p: False) is None


@pytest.mark.parametrize(
    ("agent", "judge", "installed", "picked"),
    [
        ("claude", "claude -p", ("claude", "codex", "gemini"), ("codex", "exec")),
        ("codex", "claude -p", ("claude", "codex", "gemini"), ("gemini", "-p", "")),
        ("gemini --approval-mode auto_edit", "gemini -p ''", ("gemini",), None),
        ("aider --model x", "claude -p", ("claude", "opencode"), ("opencode", "run")),
        ("opencode", "codex exec", ("codex", "opencode", "qwen"), ("qwen", "-p", "")),
    ],
)
def test_auto_picks_an_installed_cli_of_another_vendor_than_the_agents_and_the_judges(
    tmp_path: Path,
    agent: str,
    judge: str,
    installed: tuple[str, ...],
    picked: tuple[str, ...] | None,
) -> None:
    import shlex

    config = RunConfig(
        "t",
        agent_cmd=tuple(shlex.split(agent)),
        supervisor_cmd=tuple(shlex.split(judge)),
        second_opinion=("auto",),
    )
    choice = choose(config, _installed(tmp_path, *installed))
    assert choice.auto and choice.argv == picked
    if picked is None:
        refusal = choice.refusal()
        assert refusal.startswith(
            "--second-opinion auto: no supervisor CLI of another vendor than the agent's "
            "(gemini) and the judge's (gemini) is installed: install one of claude, codex, "
            "qwen, opencode"
        )
    else:
        assert choice.said().startswith(f"second opinion: {shlex.join(picked)} (auto: ")


def test_a_named_second_opinion_is_taken_as_it_is() -> None:
    config = RunConfig("t", second_opinion=("codex", "exec", "-m", "o3"))
    assert choose(config, "/nonexistent").argv == ("codex", "exec", "-m", "o3")
    assert choose(RunConfig("t"), "/nonexistent").argv is None


class Judge(FakeSupervisor):
    """A FakeSupervisor that remembers each decision's system prompt and timeout."""

    def __init__(self, *answers: str | BaseException) -> None:
        super().__init__(answers, cost_usd=0.5)
        self.timeouts: list[float | None] = []

    def decide(
        self, prompt: str, iteration: int, timeout: float | None = None, system: str | None = None
    ) -> Decided:
        self.timeouts.append(timeout)
        return super().decide(prompt, iteration, timeout, system)


def _asked(split: bool, second: SecondJudge) -> Asked:
    path = DecisionPath(
        Judge("[COMPLETE] done"),
        EventLog(),
        PromptSettings("fix calc.py", split=split),
        second=second,
    )
    return path.ask(TurnView("stop", last_message="Fixed."), Moment(1, 9, 1.0))


@pytest.mark.parametrize(
    ("judge_split", "second_cmd", "gets_system"),
    [(True, "claude -p", True), (True, "codex exec", False), (False, "claude -p", False)],
)
def test_the_second_opinion_is_asked_the_judges_prompt_whole_unless_it_takes_a_system_prompt(
    judge_split: bool, second_cmd: str, gets_system: bool
) -> None:
    other = Judge("[COMPLETE] agreed")
    second = SecondJudge(second_cmd.split(), other, clock=lambda: 100.0)
    asked = _asked(judge_split, second)
    second.review(asked, deadline=160.0)
    (prompt,), (system,) = other.prompts, other.systems
    assert prompt.startswith(SUPERVISOR_MARKER)
    assert "I fixed" not in prompt and "Fixed." in prompt
    if gets_system:  # as the judge had it: the instructions and task in the system prompt
        assert (prompt, system) == (asked.prompt, asked.system)
        assert "## Task\nfix calc.py" not in prompt
    else:  # the whole prompt: instructions and the task in it
        assert system is None and "## Task\nfix calc.py" in prompt
        assert "[COMPLETE] <summary>" in prompt
    assert other.timeouts == [60.0]  # what is left of the time budget


def test_a_failing_second_opinion_names_itself() -> None:
    second = SecondJudge(["codex", "exec"], Judge(SupervisorFailed("all attempts failed")))
    with pytest.raises(SupervisorFailed, match=r"^the second opinion \(codex exec\) failed: "):
        second.review(_asked(False, second))


def _looped(
    answers: list[str],
    second_answers: list[str | BaseException],
    agent: FakeAgent | None = None,
    verifier: Verify | None = None,
    max_cost: float | None = None,
) -> tuple[RunResult, FakeAgent, FakeSupervisor, Judge, EventList]:
    agent = agent or FakeAgent()
    judge = FakeSupervisor(answers)
    other = Judge(*second_answers)
    rec = EventList()
    cfg = LoopConfig("the task", 50, max_cost=max_cost)
    judging = Judging(second=SecondJudge(["codex", "exec"], other))
    loop = RunLoop(cfg, agent, judge, EventLog([rec]), verifier=verifier, judging=judging)
    return loop.run(), agent, judge, other, rec


def test_its_continue_goes_to_the_agent_and_its_agreement_ends_the_run() -> None:
    result, agent, _, _, rec = _looped(
        ["[COMPLETE] done", "[COMPLETE] done now"],
        ["[CONTINUE] also handle negative numbers", "[COMPLETE] agreed"],
        verifier=FakeVerifier([0]),
    )
    assert (result.outcome, result.iterations) == (Outcome.COMPLETE, 2)
    assert agent.typed == ["the task", "also handle negative numbers"]
    assert result.reason == "done now"
    said = [e.fields for e in rec.events if e.event == "second_opinion"]
    assert [(s["action"], s["verdict"], s["judge_action"]) for s in said] == [
        ("continue", "continue", "complete"),
        ("complete", "done", "complete"),
    ]
    assert said[0]["command"] == "codex exec" and said[0]["iteration"] == 1
    assert said[0]["content"] == "also handle negative numbers"
    assert said[0]["judge_content"] == "done"
    # Asked after the checks passed, its event after theirs.
    names = [e.event for e in rec.events]
    assert names.index("verify") < names.index("second_opinion")
    # Both supervisors' costs count: 2 x 0.25 (judge) + 2 x 0.5 (second opinion).
    assert result.supervisor_cost_usd == 1.5
    assert said[1]["supervisor_cost_usd"] == 1.5


@pytest.mark.parametrize("answer", ["[ESCALATE] the spec is ambiguous", "[ABORT] wrong fix"])
def test_its_abort_or_escalate_escalates_the_run_with_both_opinions(answer: str) -> None:
    result, agent, _, _, rec = _looped(["[COMPLETE] the tests pass"], [answer])
    assert (result.outcome, result.exit_code) == (Outcome.ESCALATED, 7)
    assert result.reason.startswith(
        "the supervisor said [COMPLETE] (the tests pass); the second opinion (codex exec) "
        f"said [{answer[1:].split(']')[0]}]"
    )
    (escalation,) = [e.fields for e in rec.events if e.event == "escalation"]
    assert escalation["at"] == "second_opinion"
    assert "/clear" not in agent.typed and agent.shut_down


def test_it_is_not_asked_when_the_checks_fail_or_the_judge_goes_on() -> None:
    result, _, _, other, rec = _looped(
        ["[CONTINUE] more", "[COMPLETE] done", "[COMPLETE] done"],
        ["[COMPLETE] agreed"],
        verifier=FakeVerifier([1, 0]),
    )
    assert result.outcome is Outcome.COMPLETE
    assert len(other.prompts) == 1  # only after the third decision, whose check passed
    assert [e.fields["iteration"] for e in rec.events if e.event == "second_opinion"] == [3]


def test_its_cost_counts_against_max_cost() -> None:
    result, agent, *_ = _looped(
        ["[COMPLETE] done"] * 3, ["[CONTINUE] more tests"] * 3, max_cost=0.7
    )
    assert (result.outcome, result.exit_code) == (Outcome.COST, 3)
    assert result.iterations == 1 and result.cost_usd == 0.75
    assert agent.typed == ["the task", "/clear"]


def test_its_failure_ends_the_run_as_the_supervisors_would() -> None:
    result, *_ = _looped(["[COMPLETE] done"], [SupervisorFailed("exit status 1")])
    assert (result.outcome, result.exit_code) == (Outcome.SUPERVISOR_FAILED, 5)
    assert result.reason == "the second opinion (codex exec) failed: exit status 1"


def test_overtaken_by_the_agents_exit_it_is_cancelled_and_the_run_ends_agent_exited() -> None:
    result, _, _, _, rec = _looped(
        ["[COMPLETE] done"],
        [DecisionCancelled("the agent's exit")],
        agent=FakeAgent(exit_after_turns=1),
    )
    assert (result.outcome, result.iterations) == (Outcome.AGENT_EXITED, 1)
    (cancelled,) = [e.fields for e in rec.events if e.event == "decision_cancelled"]
    assert cancelled == {"iteration": 1, "reason": "overtaken by the agent's exit"}
    assert not [e for e in rec.events if e.event == "second_opinion"]
