"""A second opinion before "done", end to end: the real pinned Claude Code and Codex CLI as
agents, judges and second opinions, each over its own wire of the fake model (a rule's
`wire` tells the second opinion from the judge asked the same prompt)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from ptysup.testing.fakemodel import RequestKind
from ptysup.testing.scenario import Scenario
from tests.conftest import ClaudeEnvFactory, FakeModelFactory
from tests.e2e.calc import CHECK, MORE_TEST, committed, fix
from tests.e2e.conftest import AGENT, Rig, claude_and_codex_rigs

pytestmark = pytest.mark.e2e

TASK = "fix calc.py so that the tests pass"
MORE = "Also add a test for add(0, 0) in tests/test_more.py."
# A second opinion over Codex's wire that wants one more test, then agrees.
CODEX_WANTS_A_TEST = [
    {
        "wire": "responses",
        "when": {"file_missing": "tests/test_more.py"},
        "reply": f"[CONTINUE] {MORE}",
    },
    {"wire": "responses", "reply": "[COMPLETE] fixed, and add(0, 0) is tested"},
]


@pytest.fixture
def claude_rig(
    fake_model: FakeModelFactory,
    claude_env: ClaudeEnvFactory,
    codex_bin: Path,
    project_dir: Path,
    tmp_path: Path,
) -> Iterator[Callable[[Scenario | Path | Mapping[str, Any]], Rig]]:
    """Rigs whose agent and judge are Claude Code, with Codex CLI installed beside them
    (on PATH, in a private CODEX_HOME) for a second opinion."""
    yield from claude_and_codex_rigs(
        fake_model, claude_env, codex_bin, project_dir, tmp_path, AGENT
    )


def _supervisors(r: Rig) -> list[tuple[str, str]]:
    """(wire, human text) of each supervisor request, in order."""
    return [(q.path, q.human_text) for q in r.model.requests_of(RequestKind.SUPERVISOR)]


def test_codex_as_the_second_opinion_sends_the_agent_on_then_agrees(
    claude_rig: Callable[..., Rig],
) -> None:
    r = claude_rig(
        {
            "agent": [
                {"match": MORE, "steps": [MORE_TEST, {"text": "Added it."}]},
                {"steps": fix()},
            ],
            "supervisor": [*CODEX_WANTS_A_TEST, {"reply": "[COMPLETE] the tests pass"}],
        }
    )
    committed(r.project)
    run = r.run(TASK, "--verify", CHECK, "--second-opinion", "codex exec", timeout=180)
    assert run.code == 0, run.stdout + run.stderr
    assert (r.project / "tests" / "test_more.py").exists()
    end = run.events[-1]
    assert (end["outcome"], end["iterations"]) == ("complete", 2)
    said = run.named("second_opinion")
    assert [(s["iteration"], s["action"], s["verdict"]) for s in said] == [
        (1, "continue", "continue"),
        (2, "complete", "done"),
    ]
    assert said[0]["command"] == "codex exec" and said[0]["judge_action"] == "complete"
    assert said[0]["content"] == MORE
    # The judge over Claude Code's wire, then the second opinion over Codex's, each time
    # after the check passed; its [CONTINUE] was typed into the agent as an instruction.
    wires = [path for path, _ in _supervisors(r)]
    assert wires == ["/v1/messages?beta=true", "/v1/responses"] * 2, wires
    names = [e["event"] for e in run.events]
    assert names.index("verify") < names.index("second_opinion")
    assert [(i["kind"], i["text"]) for i in run.named("inject")] == [
        ("task", TASK),
        ("instruction", MORE),
    ]
    # Codex takes no system prompt: it got the instructions and the task in its prompt;
    # the Claude judge got them as its system prompt. The judge's next prompt recalls
    # what the second opinion said.
    (_, second), (_, judge_again) = _supervisors(r)[1], _supervisors(r)[2]
    assert f"## Task\n{TASK}" in second and "[CONTINUE] <instruction>" in second
    assert f"## Task\n{TASK}" not in judge_again
    assert 'the second opinion (codex exec) said: "[CONTINUE] Also add a test' in judge_again
    # The CI log says both opinions.
    assert "second_opinion   #1 codex exec: continue: Also add a test" in run.stdout
    # Both supervisors' calls count in the run's cost (Codex reports none: $0).
    assert said[1]["supervisor_cost_usd"] == end["supervisor_cost_usd"]


def test_auto_picks_codex_beside_claude_and_its_escalation_ends_the_run_with_both(
    claude_rig: Callable[..., Rig],
) -> None:
    r = claude_rig(
        {
            "agent": [{"steps": fix()}],
            "supervisor": [
                {"wire": "responses", "reply": "[ESCALATE] add() now ignores floats: ask a person"},
                {"reply": "[COMPLETE] the tests pass"},
            ],
        }
    )
    committed(r.project)
    run = r.run(TASK, "--verify", CHECK, "--second-opinion", "auto", timeout=180)
    assert run.code == 7, run.stdout + run.stderr
    assert (
        "ptysup: second opinion: codex exec (auto: another vendor than the agent's (claude) "
        "and the judge's (claude))\n"
    ) in run.stderr
    (picked,) = run.named("second_opinion_auto")
    assert (picked["command"], picked["agent"], picked["judge"]) == (
        ["codex", "exec"],
        "claude",
        "claude",
    )
    assert run.events[0]["second_opinion"] == ["auto"]
    end = run.events[-1]
    assert end["reason"] == (
        "the supervisor said [COMPLETE] (the tests pass); the second opinion (codex exec) "
        "said [ESCALATE] (add() now ignores floats: ask a person)"
    )
    (escalation,) = run.named("escalation")
    assert (escalation["at"], escalation["waiting"]) == ("second_opinion", False)
    assert [s["verdict"] for s in run.named("second_opinion")] == ["escalate"]


def test_codex_agent_and_judge_get_claude_as_the_second_opinion_by_auto(
    codex_rig: Callable[..., Rig],
) -> None:
    sed = "sed -i 's/return a - b/return a + b/' calc.py"
    more = "cp tests/test_calc.py tests/test_more.py"  # a test file of its own
    r = codex_rig(
        {
            "agent": [
                {
                    "match": MORE,
                    "steps": [
                        {"tool": "exec_command", "input": {"cmd": more}},
                        {"text": "Added it."},
                    ],
                },
                {"steps": [{"tool": "exec_command", "input": {"cmd": sed}}, {"text": "Fixed."}]},
            ],
            "supervisor": [
                {
                    "wire": "anthropic",
                    "when": {"file_missing": "tests/test_more.py"},
                    "reply": f"[CONTINUE] {MORE}",
                },
                {"wire": "anthropic", "reply": "[COMPLETE] agreed"},
                {"reply": "[COMPLETE] the tests pass"},
            ],
        }
    )
    committed(r.project)
    run = r.run(
        TASK,
        "--verify",
        CHECK,
        "--supervisor-cmd",
        "codex exec",
        "--second-opinion",
        "auto",
        timeout=240,
    )
    assert run.code == 0, run.stdout + run.stderr
    assert run.named("agent_start")[0]["profile"] == "codex"
    (picked,) = run.named("second_opinion_auto")
    assert (picked["command"], picked["agent"], picked["judge"]) == (
        ["claude", "-p"],
        "codex",
        "codex",
    )
    said = run.named("second_opinion")
    assert [(s["command"], s["action"]) for s in said] == [
        ("claude -p", "continue"),
        ("claude -p", "complete"),
    ]
    assert (r.project / "tests" / "test_more.py").exists()
    # The Claude second opinion got the whole prompt (a Codex judge has no system prompt
    # to share), over Claude Code's wire, made lean: read-only tools only.
    seconds = [q for q in r.model.requests_of(RequestKind.SUPERVISOR) if "messages" in q.path]
    assert len(seconds) == 2 and f"## Task\n{TASK}" in seconds[0].human_text
    tools = sorted(t["name"] for t in seconds[0].body.get("tools", []))
    assert tools == ["Glob", "Grep", "Read"], tools
