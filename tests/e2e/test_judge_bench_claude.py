"""`ptysup judge-bench` end to end: the real pinned Claude Code as the judge under test
(`claude -p`, lean and read-only as a run makes it), answering from the fake model's
scripted judge (ptysup/testing/scenarios/judge.yaml) over the bundled corpus; and a case
saved from a real run of Claude Code, then replayed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ptysup.judgebench.cases import CORPUS
from ptysup.testing.fakemodel import RequestKind
from tests.e2e.calc import CHECK, committed, fix
from tests.e2e.conftest import Rig

pytestmark = pytest.mark.e2e

JUDGE = Path(__file__).resolve().parents[2] / "ptysup" / "testing" / "scenarios" / "judge.yaml"
# One case of each kind, and what the run does with the scripted judge's answer there:
# (outcome, who decided it, the judge's own answer).
EXPECTED = {
    "done-calc-fix-1": ("complete", "supervisor", "complete"),
    "checks_fail-calc-wrong-fix-1": ("continue", "verify", "complete"),
    "tests_edited-calc-gutted-1": ("continue", "supervisor", "continue"),
    "passes_before-greet-nothing-1": ("continue", "supervisor", "continue"),
    "question-slug-1": ("continue", "supervisor", "continue"),
    "should_continue-words-1": ("continue", "supervisor", "continue"),
    "spinning-slug-spinning-3": ("escalate", "supervisor", "escalate"),
    "impossible-odd-says-1": ("escalate", "supervisor", "escalate"),
    "person-deploy-approval-1": ("escalate", "supervisor", "escalate"),
}


def _json(done: Any) -> dict[str, Any]:
    assert done.returncode == 0, done.stdout + done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def test_the_real_claude_judges_one_case_of_each_kind_through_the_decision_path(
    rig: Callable[..., Rig],
) -> None:
    r = rig(JUDGE)
    files = [str(CORPUS / f"{name}.json") for name in EXPECTED]
    report = _json(
        r.ptysup("judge-bench", *files, "--supervisor-cmd", "claude -p", "--format", "json")
    )
    got = {c["case"]: (c["outcome"], c["by"], c["judge"]) for c in report["cases"]}
    assert got == EXPECTED
    # One fresh `claude -p` per case, each shown its case's task and the evidence.
    asked = r.model.requests_of(RequestKind.SUPERVISOR)
    assert len(asked) == len(EXPECTED)
    for request, name in zip(asked, EXPECTED, strict=True):
        task = json.loads((CORPUS / f"{name}.json").read_text())["task"]
        assert task in json.dumps(request.body, ensure_ascii=False), name
        assert "<ptysup_evidence>" in request.human_text, name
    s = report["summary"]
    assert (s["cases"], s["errors"], s["right"], s["false_done_accepted"]) == (9, 0, 9, 0)
    assert s["seconds_per_decision"] > 0 and s["cost_per_decision_usd"] > 0


def test_a_case_saved_from_a_real_run_replays_as_the_run_decided(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig({"agent": [{"steps": fix()}], "supervisor": [{"reply": "[COMPLETE] fixed"}]})
    committed(r.project)
    run = r.run("fix calc.py so that the tests pass", "--verify", CHECK)
    assert run.code == 0, run.stdout + run.stderr
    case = tmp_path / "mine.json"
    saved = r.ptysup(
        "judge-bench", "save", "last", "--label", "done", "--kind", "done", "--out", str(case)
    )
    assert saved.returncode == 0, saved.stderr
    assert saved.stdout.strip() == f"saved {case}: decision 1, done, done"
    data = json.loads(case.read_text())
    assert data["project"]["end"]["calc.py"].count("return a + b") == 1
    assert "return a - b" in data["project"]["start"]["calc.py"]
    assert data["checks"]["result"] == "pass" and data["verify"] == [CHECK]
    assert str(r.project) not in case.read_text()  # written as {project}: portable
    report = _json(
        r.ptysup("judge-bench", str(case), "--supervisor-cmd", "claude -p", "--format", "json")
    )
    (result,) = report["cases"]
    assert (result["outcome"], result["right"], result["checks"]) == ("complete", True, "pass")


def test_codex_exec_as_the_judge_under_test_and_claude_as_its_second_opinion(
    codex_rig: Callable[..., Rig],
) -> None:
    r = codex_rig(JUDGE)
    names = ["done-calc-codex-1", "checks_fail-calc-codex-abs-1", "person-deploy-codex-1"]
    files = [str(CORPUS / f"{name}.json") for name in names]
    args = ["--supervisor-cmd", "codex exec", "--second-opinion", "auto", "--format", "json"]
    report = _json(r.ptysup("judge-bench", *files, *args))
    assert report["second_opinion"] == "claude -p"  # auto: another vendor than the judge's
    got = {
        c["case"]: (c["outcome"], c["by"], c["judge"], c["second_opinion"]) for c in report["cases"]
    }
    assert got == {
        # The scripted judge's [COMPLETE], then the second opinion's (the same rules).
        "done-calc-codex-1": ("complete", "supervisor", "complete", "complete"),
        # Refused by the failing check: the second opinion is never asked.
        "checks_fail-calc-codex-abs-1": ("continue", "verify", "complete", None),
        "person-deploy-codex-1": ("escalate", "supervisor", "escalate", None),
    }
    wires = [q.path for q in r.model.requests_of(RequestKind.SUPERVISOR)]
    assert len(wires) == 4 and wires.count(wires[0]) == 3  # codex's three, claude's one
