"""A real Claude Code run whose event log got a garbled line afterwards: `runs`, `replay`
and `resume` still work, and each says once what it skipped."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.e2e.conftest import AGENT, Rig
from tests.helpers import read_events

pytestmark = pytest.mark.e2e

BUDGET_THEN_DONE: dict[str, Any] = {
    "agent": [{"reply": "Okay, done that."}],
    "supervisor": [
        {"match": "has just been resumed", "reply": "[COMPLETE] it is done"},
        {"reply": "[CONTINUE] go on"},
    ],
}
GARBLED = '{"event": "decision", "ts": "soon", "iteration": "one", "action": 3}\n'


def test_runs_replay_and_resume_read_a_real_run_past_a_garbled_line(
    rig: Callable[..., Rig],
) -> None:
    r = rig(BUDGET_THEN_DONE)
    first = r.ptysup("say hello", "--agent-cmd", AGENT, "--max-iter", "1")
    assert first.returncode == 3, first.stdout + first.stderr  # the budget: resumable
    (log,) = (r.project / ".ptysup" / "runs").glob("*/events.jsonl")
    run_id = log.parent.name
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join([*lines[:2], GARBLED, *lines[2:]]))

    listed = r.ptysup("runs", "--json")
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)
    assert (row["state"], row["iterations"], row["unreadable_lines"]) == ("failed", 1, 1)
    table = r.ptysup("runs")
    assert f"1 unreadable line in run {run_id}'s event log skipped" in table.stdout

    replay = r.ptysup("replay", "last")
    assert replay.returncode == 0, replay.stderr
    assert "decision 1/1: continue" in replay.stdout and "Okay, done that." in replay.stdout
    assert replay.stderr == f"ptysup: replay: 1 unreadable line in {log} skipped\n"

    resumed = r.ptysup("resume", "last", "--max-iter", "3", "--agent-cmd", AGENT)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    note = f"ptysup: resume: 1 unreadable line in run {run_id}'s event log skipped"
    assert resumed.stderr.count(note) == 1 and "Traceback" not in resumed.stderr
    events = [e for e in read_events(log) if e.get("ts") != "soon"]  # all but the garbled
    resume = next(e for e in events if e["event"] == "run_resume")
    assert resume["iterations"] == 1
    assert (events[-1]["event"], events[-1]["outcome"]) == ("run_end", "complete")
