"""Winding down before the wall (--wind-down, on by default) with the real agents: the
agent is told once, with an instruction, to leave its work clean; the supervisor knows it
is the last stretch; the budget stop then finds the work committed and noted."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ptysup.testing.fakemodel import RequestKind
from tests.e2e.conftest import AGENT, Rig

pytestmark = pytest.mark.e2e

WIND = "(ptysup: this run is near the end of its budget"
STEPS = ("do step one", "do step two", "do step three", "do step four")
NOTES = "Remaining: the second half of the work.\n"
COMMIT = "git add NOTES.md work.txt && git -c user.name=a -c user.email=a@x commit -qm wip"


def _git(project: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=project, capture_output=True, text=True, check=True)
    return done.stdout


def _scenario(write: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    """The agent works until told to wind down; then it notes what remains and commits."""
    return {
        "agent": [
            {"match": WIND, "steps": [write, run, {"text": "Committed; NOTES.md says the rest."}]},
            {"reply": "Worked on it."},
        ],
        # Instructions that differ: no round is the same as the one before (spinning).
        "supervisor": [{"times": 1, "reply": f"[CONTINUE] {step}"} for step in STEPS],
    }


def _assert_wound_down_once_then_stopped(r: Rig, code: int, events: list[dict[str, Any]]) -> None:
    """Told once, with the third of four decisions; the fourth is the budget's stop."""
    assert code == 3
    assert events[-1]["event"] == "run_end" and events[-1]["outcome"] == "budget"
    # The agent's model saw the wind-down once, with the third decision's instruction.
    typed = [e["text"] for e in events if e["event"] == "inject" and e["kind"] == "instruction"]
    assert len(typed) == 3 and [WIND in t for t in typed] == [False, False, True]
    texts = r.human_texts()  # in order, each once (the same one twice in a row: once)
    told = [t for t in texts if WIND in t]
    assert len(told) == 1 and texts[-1] == told[0] == typed[2], texts
    assert told[0].startswith("do step three\n\n" + WIND)
    assert "1 turn (this one included) left" in told[0] and "committed" in told[0]
    (wind,) = [e for e in events if e["event"] == "wind_down"]
    assert (wind["iteration"], wind["budget"], wind["kind"]) == (3, "iterations", "instruction")
    assert (wind["fraction"], wind["turns_left"]) == (0.85, 1)
    # The supervisor knew it was the last stretch from the third decision on.
    prompts = [p.human_text for p in r.model.requests_of(RequestKind.SUPERVISOR)]
    assert len(prompts) == 4
    assert ["Last stretch" in p for p in prompts] == [False, False, True, True]
    assert "has been told to wind down" in prompts[3]


def test_claude_code_is_told_once_to_wind_down_and_the_budget_stop_finds_it_committed(
    rig: Callable[..., Rig],
) -> None:
    r = rig(
        _scenario(
            {"tool": "Write", "input": {"file_path": "{workdir}/NOTES.md", "content": NOTES}},
            {"tool": "Bash", "input": {"command": COMMIT, "description": "commit"}},
        )
    )
    _git(r.project, "init", "-q")
    (r.project / "work.txt").write_text("half done\n")
    del r.env["PTYSUP_WIND_DOWN"]  # the rigs turn it off; this test runs the default
    run = r.run("do the work", "--max-iter", "4", "--agent-cmd", f"{AGENT} --allowedTools Bash")
    _assert_wound_down_once_then_stopped(r, run.code, run.events)
    # The budget stop found the work in order: committed, with a note of what remains.
    assert _git(r.project, "show", "HEAD:NOTES.md") == NOTES
    assert _git(r.project, "status", "--porcelain") == ""
    assert "ptysup wind_down        #3 iterations budget past 85%" in run.stdout
    assert run.named("inject")[-1]["text"] == "/clear"  # the budget stop as ever


def test_codex_is_told_once_to_wind_down_and_the_budget_stop_finds_its_notes(
    codex_rig: Callable[..., Rig],
) -> None:
    write = {"tool": "exec_command", "input": {"cmd": f"printf '{NOTES.strip()}\\n' > NOTES.md"}}
    r = codex_rig(_scenario(write, {"tool": "exec_command", "input": {"cmd": COMMIT}}))
    _git(r.project, "init", "-q")
    (r.project / "work.txt").write_text("half done\n")
    del r.env["PTYSUP_WIND_DOWN"]  # the rigs turn it off; this test runs the default
    run = r.run("do the work", "--max-iter", "4")
    _assert_wound_down_once_then_stopped(r, run.code, run.events)
    # Codex's workspace-write sandbox keeps .git read-only, so its commit is refused (by
    # Codex, not ptysup): the note of what remains is there all the same.
    assert (r.project / "NOTES.md").read_text() == NOTES
