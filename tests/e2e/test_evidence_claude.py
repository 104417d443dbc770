"""A "done" you can trust, with the real Claude Code against the fake model: a supervisor
that says [COMPLETE] to anything cannot end a run whose agent gutted the test; a check
that passes before any change is said; the supervisor remembers the run and sees what
changed in the files."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from ptysup.testing.fakemodel import RequestKind
from tests.e2e.calc import (
    ASSERTION,
    CHECK,
    FILES,
    FIXED,
    MORE_TEST,
    REFUSED,
    TAMPERED,
    committed,
    fix,
    private_tmp,
    scratch_copies,
    tamper,
)
from tests.e2e.conftest import Rig, Screen

pytestmark = pytest.mark.e2e

TASK = "fix calc.py so that the tests pass"
YES_MAN = [{"reply": "[COMPLETE] the tests pass"}]  # a supervisor that agrees to anything


def _evidence(prompt: str) -> str:
    """The evidence block of a supervisor prompt."""
    found = re.search(r"<ptysup_evidence>\n(.*?)\n</ptysup_evidence>", prompt, re.S)
    assert found, prompt
    return found.group(1)


def test_a_gutted_test_never_ends_the_run_complete_and_the_second_time_escalates(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig(
        {
            "agent": [
                {"match": REFUSED, "reply": "The tests pass, so I am done."},
                {"steps": tamper()},
            ],
            "supervisor": YES_MAN,
        }
    )
    committed(r.project)
    tmp = private_tmp(r.env, tmp_path / "tmp")
    run = r.run(TASK, "--verify", CHECK)
    assert run.code == 7, run.stdout + run.stderr
    end = run.events[-1]
    assert (end["outcome"], end["iterations"]) == ("escalated", 2)
    assert end["reason"].startswith("tampering: the agent changed protected files again")
    assert "tests/test_calc.py" in end["reason"]
    # The check passed in the person's tree both times; against the original test it failed.
    assert [v["passed"] for v in run.named("verify")] == [True, True]
    tampers = run.named("tamper")
    assert [(t["verdict"], t["files"]) for t in tampers] == [
        ("refused", ["tests/test_calc.py"]),
        ("escalated", ["tests/test_calc.py"]),
    ]
    assert tampers[0]["exit_code"] == 1 and "AssertionError" in tampers[0]["output_tail"]
    # The agent was told which file and what fails against the original.
    told = [h for h in r.human_texts() if h.startswith(REFUSED)]
    assert len(told) == 1 and "tests/test_calc.py" in told[0] and "exited 1" in told[0]
    assert [i["kind"] for i in run.named("inject")] == ["task", "tamper"]
    (escalation,) = run.named("escalation")
    assert (escalation["at"], escalation["waiting"]) == ("tamper", False)
    # The CI log names the file; the person's tree was never touched, no copy is left.
    assert "tests/test_calc.py" in run.stdout and "tamper" in run.stdout
    assert TAMPERED in (r.project / "tests/test_calc.py").read_text()
    assert scratch_copies(tmp) == []
    # At the start: the check failed before any change, and the test file is protected.
    (baseline,) = run.named("verify_baseline")
    assert [b["passed"] for b in baseline["results"]] == [False]
    (protect,) = run.named("protect")
    assert protect["files"] == ["tests/__init__.py", "tests/test_calc.py"]
    # The supervisor's second prompt says the [COMPLETE] was refused and why.
    prompts = [q.human_text for q in r.model.requests_of(RequestKind.SUPERVISOR)]
    assert "[COMPLETE] refused: protected files changed (tests/test_calc.py)" in prompts[1]
    assert "PROTECTED" in _evidence(prompts[1])


def test_a_real_fix_ends_the_run_complete(rig: Callable[..., Rig], tmp_path: Path) -> None:
    r = rig({"agent": [{"steps": fix()}], "supervisor": YES_MAN})
    committed(r.project)
    tmp = private_tmp(r.env, tmp_path / "tmp")
    run = r.run(TASK, "--verify", CHECK)
    assert run.code == 0, run.stdout + run.stderr
    assert FIXED in (r.project / "calc.py").read_text()
    assert not run.named("tamper") and scratch_copies(tmp) == []
    assert [v["passed"] for v in run.named("verify")] == [True]
    # No warning that the check cannot tell: it failed before the fix.
    assert "cannot tell done from not done" not in run.stderr


def test_tampering_refused_then_a_real_fix_completes(rig: Callable[..., Rig]) -> None:
    restore = [
        {"tool": "Read", "input": {"file_path": "{workdir}/tests/test_calc.py"}},
        {
            "tool": "Edit",
            "input": {
                "file_path": "{workdir}/tests/test_calc.py",
                "old_string": TAMPERED,
                "new_string": ASSERTION,
            },
        },
        *fix(),
    ]
    r = rig(
        {
            "agent": [{"match": REFUSED, "steps": restore}, {"steps": tamper()}],
            "supervisor": YES_MAN,
        }
    )
    committed(r.project)
    run = r.run(TASK, "--verify", CHECK)
    assert run.code == 0, run.stdout + run.stderr
    assert [t["verdict"] for t in run.named("tamper")] == ["refused"]
    assert (r.project / "tests/test_calc.py").read_text() == FILES["tests/test_calc.py"]


def test_a_new_test_file_is_no_tampering(rig: Callable[..., Rig]) -> None:
    r = rig({"agent": [{"steps": [MORE_TEST, *fix()]}], "supervisor": YES_MAN})
    committed(r.project)
    run = r.run(TASK, "--verify", CHECK)
    assert run.code == 0, run.stdout + run.stderr
    assert not run.named("tamper")


def test_a_check_that_passes_before_any_change_is_said_on_stderr_and_to_the_supervisor(
    rig: Callable[..., Rig],
) -> None:
    r = rig({"agent": [{"reply": "Nothing needed doing."}], "supervisor": YES_MAN})
    committed(r.project, {**FILES, "calc.py": FILES["calc.py"].replace("a - b", "a + b")})
    run = r.run(TASK, "--verify", CHECK)
    assert run.code == 0, run.stdout + run.stderr
    warnings = [ln for ln in run.stderr.splitlines() if "cannot tell done from not done" in ln]
    assert len(warnings) == 1 and warnings[0].startswith("ptysup: warning: "), run.stderr
    assert "--verify" in warnings[0]
    (baseline,) = run.named("verify_baseline")
    assert baseline["all_passed"] is True and baseline["cannot_tell"] == ["--verify"]
    assert baseline["results"][0]["command"] == CHECK.split()
    (prompt,) = [q.human_text for q in r.model.requests_of(RequestKind.SUPERVISOR)]
    evidence = _evidence(prompt)
    assert "before the agent changed anything these checks already passed (--verify)" in evidence
    assert f"`{CHECK}`: before any change passed; not run since" in evidence


def test_no_verify_baseline_skips_it(rig: Callable[..., Rig]) -> None:
    r = rig({"agent": [{"reply": "Nothing needed doing."}], "supervisor": YES_MAN})
    committed(r.project, {**FILES, "calc.py": FILES["calc.py"].replace("a - b", "a + b")})
    run = r.run(TASK, "--verify", CHECK, "--no-verify-baseline")
    assert run.code == 0, run.stdout + run.stderr
    assert "cannot tell" not in run.stderr
    (baseline,) = run.named("verify_baseline")
    assert baseline["skipped"] is True and baseline["results"] == []


def test_the_third_decision_still_knows_the_first_instruction_and_what_changed(
    rig: Callable[..., Rig],
) -> None:
    first = "Look around first, then write notes.txt with what you saw"
    notes = {"tool": "Write", "input": {"file_path": "{workdir}/notes.txt", "content": "x\n"}}
    r = rig(
        {
            "agent": [
                {"match": "notes.txt", "steps": [notes, {"text": "Wrote notes.txt."}]},
                {"reply": "I looked around."},
            ],
            "supervisor": [
                {"times": 1, "reply": f"[CONTINUE] {first}"},
                {"times": 1, "reply": "[CONTINUE] Now say what is in notes.txt"},
                {"reply": "[COMPLETE] done"},
            ],
        }
    )
    committed(r.project)
    run = r.run("look at the project")
    assert run.code == 0, run.stdout + run.stderr
    prompts = [q.human_text for q in r.model.requests_of(RequestKind.SUPERVISOR)]
    assert len(prompts) == 3
    third = _evidence(prompts[2])
    assert f'- #1 CONTINUE "{first}"' in third
    assert '- #2 CONTINUE "Now say what is in notes.txt"' in third
    # notes.txt came in the second turn: new since the start, not since the last decision.
    assert "Files changed since the last decision: none." in third
    assert "Files changed since the start: 1 file (+1 -0)" in third
    assert "  A notes.txt (+1) [new, untracked]" in third
    second = _evidence(prompts[1])
    assert "Files changed since the last decision: 1 file (+1 -0)" in second
    assert "Files changed since the start: none." in _evidence(prompts[0])
    # Within the bound, and well under it.
    assert all(len(p.encode()) < 20_000 for p in prompts)


def test_without_git_the_supervisor_is_told_once_and_the_run_goes_on(
    rig: Callable[..., Rig],
) -> None:
    r = rig({"agent": [{"reply": "Done."}], "supervisor": YES_MAN})
    run = r.run("look at the project")
    assert run.code == 0, run.stdout + run.stderr
    (protect,) = run.named("protect")
    assert (protect["git"], protect["count"]) == (False, 0)
    assert protect["reason"].startswith("not a git work tree: the supervisor is not shown")
    assert run.stdout.count(" protect          not a git work tree: ") == 1  # the CI log
    assert not run.named("warning")
    (prompt,) = [q.human_text for q in r.model.requests_of(RequestKind.SUPERVISOR)]
    assert "What changed in the files: not known (not a git work tree)." in _evidence(prompt)


def test_in_a_terminal_the_warning_stands_above_the_agent_and_the_run_goes_on(
    screen: Callable[..., Screen],
) -> None:
    scenario = {"agent": [{"reply": "Nothing needed doing."}], "supervisor": YES_MAN}
    s = screen(scenario, "look at the project", "--verify", "true")
    assert s.finish().startswith("exit=0"), s.rig.log.read_text()
    shown = s.tmux.capture(history=True)
    warning = "ptysup: warning: the checks already pass before any change (--verify)"
    assert shown.count(warning) == 1, shown
    # It was said before the agent drew anything: Claude Code's box comes after it.
    assert shown.index(warning) < shown.index("Nothing needed doing.")


def test_the_time_budget_counts_the_baseline(rig: Callable[..., Rig]) -> None:
    r = rig({"agent": [{"reply": "Done."}], "supervisor": YES_MAN})
    run = r.run("t", "--max-time", "3s", "--verify", "sleep 600")
    assert run.code == 3, run.stdout + run.stderr
    end = run.events[-1]
    assert end["outcome"] == "time" and end["elapsed_s"] < 60
    assert "the checks' baseline" in end["reason"]
    assert not run.named("agent_start") and not r.model.requests
