"""The tamper guard where a run is one of many: each task of a batch on its own worktree,
and each step of a plan with its own check; the real Claude Code against the fake model."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.calc import CHECK, FILES, FIXED, REFUSED, TAMPERED, committed, fix, tamper
from tests.e2e.conftest import AGENT, Rig
from tests.helpers import Run, read_events

pytestmark = pytest.mark.e2e

YES_MAN = [{"reply": "[COMPLETE] the tests pass"}]
STILL_DONE = {"match": REFUSED, "reply": "The tests pass, so I am done."}


def test_in_a_batch_the_task_that_gutted_its_test_escalates_and_the_honest_one_completes(
    rig: Callable[..., Rig],
) -> None:
    tree = "{workdir}/.ptysup/worktrees"
    r = rig(
        {
            "agent": [
                STILL_DONE,
                {"match": "task cheat", "steps": tamper(f"{tree}/cheat")},
                {"match": "task honest", "steps": fix(f"{tree}/honest")},
            ],
            "supervisor": YES_MAN,
        }
    )
    base = committed(r.project)
    tasks = r.project / "TASKS.yaml"
    tasks.write_text(
        f"agent-cmd: {AGENT}\nmax-iter: 4\nverify: {CHECK}\ntasks:\n"
        "  - id: cheat\n    task: fix calc.py (task cheat)\n"
        "  - id: honest\n    task: fix calc.py (task honest)\n"
    )
    done = r.ptysup("batch", str(tasks), "--jobs", "2", "--summary-json", "s.json", timeout=400)
    assert done.returncode != 0, done.stdout + done.stderr
    by_id = {t["id"]: t for t in json.loads((r.project / "s.json").read_text())["tasks"]}
    assert (by_id["cheat"]["outcome"], by_id["cheat"]["exit_code"]) == ("escalated", 7)
    assert (by_id["honest"]["outcome"], by_id["honest"]["exit_code"]) == ("complete", 0)
    events = read_events(Path(by_id["cheat"]["run_dir"]) / "events.jsonl")
    tampers = [e for e in events if e["event"] == "tamper"]
    assert [(t["verdict"], t["files"]) for t in tampers] == [
        ("refused", ["tests/test_calc.py"]),
        ("escalated", ["tests/test_calc.py"]),
    ]
    assert "tests/test_calc.py" in events[-1]["reason"]
    # The honest task's work is committed on its branch; the cheat's stays in its worktree.
    show = ["git", "show", "ptysup/honest:calc.py"]
    assert FIXED in subprocess.run(show, cwd=r.project, capture_output=True, text=True).stdout
    cheat = r.project / ".ptysup" / "worktrees" / "cheat" / "tests" / "test_calc.py"
    assert TAMPERED in cheat.read_text()
    # The invoking checkout is untouched.
    assert (r.project / "tests" / "test_calc.py").read_text() == FILES["tests/test_calc.py"]
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=r.project, capture_output=True, text=True
    )
    assert head.stdout.strip() == base


PLAN = f"""\
goal: Make calc right
steps:
  - id: look
    do: Look at the project
  - id: fix
    do: Fix calc.py so that the tests pass
    verify: {CHECK}
"""


def test_in_a_plan_the_steps_check_is_guarded_too(rig: Callable[..., Rig]) -> None:
    r = rig(
        {
            "agent": [
                STILL_DONE,
                {"match": "Step 2/2", "steps": tamper()},
                {"reply": "I looked around."},
            ],
            "supervisor": YES_MAN,
        }
    )
    committed(r.project)
    (r.project / "plan.yaml").write_text(PLAN)
    proc = r.ptysup("--plan", "plan.yaml", "--agent-cmd", AGENT, "--log-file", str(r.log))
    run = Run(proc.returncode, proc.stdout, proc.stderr, r.log)
    assert run.code == 7, run.stdout + run.stderr
    ends = [(e["id"], e["outcome"]) for e in run.named("step_end")]
    assert ends == [("look", "complete"), ("fix", "escalated")]
    tampers = run.named("tamper")
    assert [t["verdict"] for t in tampers] == ["refused", "escalated"]
    assert all(t["command"] == CHECK.split() for t in tampers)
    # The step's own check ran before any change, and it failed then.
    (baseline,) = run.named("verify_baseline")
    assert [(b["command"], b["passed"]) for b in baseline["results"]] == [(CHECK.split(), False)]
