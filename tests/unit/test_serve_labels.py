"""What the page calls a run's state: an ended run by its outcome, in `ptysup runs`' words."""

from __future__ import annotations

from pathlib import Path

from ptysup.exitcodes import Outcome
from ptysup.serve import labels
from ptysup.serve.api import RunsIndex
from ptysup.store import runstate
from ptysup.store.rundir import RUNS_DIR
from tests.serving import make_run


def test_every_outcome_and_state_has_a_tone() -> None:
    for word in [o.value for o in Outcome] + [
        s for s in runstate.STATES if s not in runstate.ENDED
    ]:
        assert word in labels.TONES, word


def test_a_run_stopped_on_purpose_reads_stopped_not_failed(tmp_path: Path) -> None:
    """Issue 30: the page said "failed" of every run that did not complete."""
    said = {}
    for n, outcome in enumerate(("stopped", "signal", "budget", "escalated", "abort", "complete")):
        make_run(tmp_path, f"20260101-12000{n}-aaaaaa", task="t", outcome=outcome)
        said[f"20260101-12000{n}-aaaaaa"] = outcome
    rows = RunsIndex(tmp_path / RUNS_DIR).rows()
    assert {r["run_id"]: r["label"] for r in rows} == said
    tones = {r["label"]: r["tone"] for r in rows}
    assert tones == {
        "stopped": labels.HALTED,
        "signal": labels.HALTED,
        "budget": labels.LIMIT,
        "escalated": labels.LIMIT,
        "abort": labels.FAILED,
        "complete": labels.OK,
    }
    assert {r["state"] for r in rows} == {"done", "failed"}  # the store's states, unchanged


def test_a_state_this_version_does_not_know_reads_as_itself() -> None:
    assert labels.label({"state": "paused", "outcome": None}) == {
        "label": "paused",
        "tone": labels.HALTED,
    }
    assert labels.label({"state": "working", "outcome": None})["tone"] == labels.LIVE
