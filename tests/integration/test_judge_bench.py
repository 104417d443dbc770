"""The scorer held honest on the bundled corpus: `ptysup judge-bench` with a supervisor
command that always says [COMPLETE], and one that always says [CONTINUE], gets exactly the
figures the case files imply: their labels, and (for [COMPLETE]) what the checks and the
tamper guard recorded at each turn end, run again here in each case's rebuilt project."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from ptysup.judgebench import command
from ptysup.judgebench.cases import CORPUS
from tests.helpers import REPO

pytestmark = pytest.mark.timeout(900)

SUPERVISOR = f"{sys.executable} {REPO / 'tests' / 'fakes' / 'supervisor.py'}"
RIGHT = {"done": "complete", "not_done": "continue", "person": "escalate"}


def _cases() -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) | {"name": p.stem} for p in sorted(CORPUS.glob("*.json"))]


def _after_complete(case: Mapping[str, Any]) -> str:
    """What the run does with a [COMPLETE] at this turn end, from the case file alone: a
    failing check refuses it (the run goes on), so does the tamper guard, whose second
    refusal in a run escalates; otherwise it counts."""
    result = case["checks"]["result"]
    if result == "fail":
        return "continue"
    if result == "tampered":
        earlier = [
            e
            for e in case["events"]
            if e.get("event") == "tamper" and e.get("verdict") in ("refused", "escalated")
        ]
        return "escalate" if earlier else "continue"
    return "complete"


def _figures(cases: Sequence[Mapping[str, Any]], outcomes: Sequence[str]) -> dict[str, int]:
    pairs = [(c["label"], c["kind"], o) for c, o in zip(cases, outcomes, strict=True)]
    return {
        "cases": len(pairs),
        "decided": len(pairs),
        "errors": 0,
        "right": sum(o == RIGHT[label] for label, _, o in pairs),
        "false_done_accepted": sum(o == "complete" and label != "done" for label, _, o in pairs),
        "done_missed": sum(label == "done" and o != "complete" for label, _, o in pairs),
        "escalations_right": sum(o == "escalate" and label == "person" for label, _, o in pairs),
        "escalations_wrong": sum(o == "escalate" and label != "person" for label, _, o in pairs),
        "person_missed": sum(label == "person" and o != "escalate" for label, _, o in pairs),
        "aborts": 0,
        "spinning": sum(kind == "spinning" for _, kind, _ in pairs),
        "spinning_caught": sum(kind == "spinning" and o == "escalate" for _, kind, o in pairs),
    }


def _bench(answer: str, tmp_path: Path) -> dict[str, Any]:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps([answer]))
    env = {
        "PATH": "/usr/bin:/bin",
        "FAKE_SUPERVISOR_ANSWERS": str(answers),
        "FAKE_SUPERVISOR_LOG": str(tmp_path / "prompts.jsonl"),
    }
    out, err = io.StringIO(), io.StringIO()
    code = command.main(["--supervisor-cmd", SUPERVISOR, "--format", "json"], env, out, err)
    assert code == 0, err.getvalue()
    report: dict[str, Any] = json.loads(out.getvalue())
    return report


def _check(report: Mapping[str, Any], outcomes: Sequence[str]) -> None:
    cases = _cases()
    assert [r["case"] for r in report["cases"]] == [c["name"] for c in cases]
    wrong = [r for r, o in zip(report["cases"], outcomes, strict=True) if r["outcome"] != o]
    assert not wrong, wrong
    summary = {k: v for k, v in report["summary"].items() if isinstance(v, int)}
    assert summary == _figures(cases, outcomes)


def test_a_judge_that_always_says_complete_scores_what_the_checks_alone_catch(
    tmp_path: Path,
) -> None:
    report = _bench("[COMPLETE] the agent says so", tmp_path)
    cases = _cases()
    _check(report, [_after_complete(c) for c in cases])
    # Every prompt went to the supervisor command, once per case.
    prompts = (tmp_path / "prompts.jsonl").read_text().splitlines()
    assert len(prompts) == len(cases)
    # What the checks recorded is what they say again when the bench runs them.
    assert [r["checks"] for r in report["cases"]] == [c["checks"]["result"] for c in cases]


def test_a_judge_that_always_says_continue_misses_every_done_and_every_person(
    tmp_path: Path,
) -> None:
    report = _bench("[CONTINUE] keep going", tmp_path)
    cases = _cases()
    _check(report, ["continue"] * len(cases))
    summary = report["summary"]
    assert summary["false_done_accepted"] == 0
    assert summary["done_missed"] == sum(c["label"] == "done" for c in cases) > 0
    assert summary["person_missed"] == sum(c["label"] == "person" for c in cases) > 0


def test_a_second_opinion_is_asked_after_the_checks_and_its_answer_decides(
    tmp_path: Path,
) -> None:
    judge, second = tmp_path / "judge", tmp_path / "second"
    for folder, answer in ((judge, "[COMPLETE] done"), (second, "[CONTINUE] add a test")):
        folder.mkdir()
        (folder / "answers.json").write_text(json.dumps([answer]))

    def command_of(folder: Path) -> str:
        answers, log = folder / "answers.json", folder / "prompts.jsonl"
        return f"env FAKE_SUPERVISOR_ANSWERS={answers} FAKE_SUPERVISOR_LOG={log} {SUPERVISOR}"

    out, err = io.StringIO(), io.StringIO()
    args = ["--kind", "done", "--kind", "checks_fail", "--format", "json"]
    args += ["--supervisor-cmd", command_of(judge), "--second-opinion", command_of(second)]
    assert command.main(args, {"PATH": "/usr/bin:/bin"}, out, err) == 0, err.getvalue()
    report = json.loads(out.getvalue())
    got = {(r["kind"], r["outcome"], r["by"], r["second_opinion"]) for r in report["cases"]}
    # Where the checks pass, the second opinion's [CONTINUE] sends the agent on; where they
    # fail, the [COMPLETE] is refused before it is asked.
    assert got == {
        ("done", "continue", "second_opinion", "continue"),
        ("checks_fail", "continue", "verify", None),
    }
    done = sum(r["kind"] == "done" for r in report["cases"])
    assert len((second / "prompts.jsonl").read_text().splitlines()) == done
    assert report["second_opinion"] == command_of(second)
