"""What a CI job sees, with the real Claude Code and the fake model: fatal supervisor
errors, the log's shape, output files."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest

from ptysup.replay import main as replay_main
from ptysup.testing.fakemodel import RequestKind
from tests.e2e.conftest import Rig
from tests.helpers import read_events

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(("status", "words"), [(401, "Failed to authenticate"), (404, "model")])
def test_a_supervisor_that_cannot_authenticate_ends_the_run_at_once(
    rig: Callable[..., Rig], status: int, words: str
) -> None:
    r = rig({"agent": [{"reply": "ok"}], "supervisor": [{"error": status}]})
    run = r.run("t")
    assert run.code == 5, run.stdout + run.stderr
    assert len(run.named("supervisor_error")) == 1  # never retried
    assert r.model.requests_of(RequestKind.SUPERVISOR)
    end = run.events[-1]
    assert end["outcome"] == "supervisor_failed"
    assert "cannot work" in end["reason"] and words in end["reason"]
    assert not run.named("wait")


def test_a_reused_log_file_keeps_each_runs_recording_and_replay_apart(
    rig: Callable[..., Rig],
) -> None:
    r = rig({"agent": [{"reply": "ok"}], "supervisor": [{"reply": "[COMPLETE] done"}]})
    first, second = r.run("first task"), r.run("second task")
    assert (first.code, second.code) == (0, 0), second.stdout
    starts = [e for e in read_events(r.log) if e["event"] == "run_start"]
    casts = [Path(s["record"]) for s in starts]
    assert len(starts) == 2 and casts[0] != casts[1]
    assert all(c.is_file() and c.name.startswith("events.") for c in casts)
    for run_id, task in [(None, "second task"), (starts[0]["run_id"], "first task")]:
        out = io.StringIO()
        assert replay_main([str(r.log), *([run_id] if run_id else [])], out) == 0
        text = out.getvalue()
        assert f": {task}\n" in text and text.count("run_end:") == 1
        assert "(no recording of this screen)" not in text
