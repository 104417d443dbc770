"""What the views say of many runs: each run's outcome and reason and its parts in
`ptysup runs`, a [COMPLETE] that --verify rejected shown as rejected, and a batch's own row
(tasks done / running / queued / failed) in `runs` and in what `serve`'s page reads."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from ptysup.batch import state
from ptysup.serve.api import mark_rejected
from ptysup.store.listing import describe
from ptysup.store.rundir import RunDir
from ptysup.views import runs, table


def _run(runs_dir: Path, run_id: str, *events: dict[str, Any]) -> RunDir:
    run = RunDir(runs_dir / run_id)
    run.path.mkdir(parents=True)
    start = {"event": "run_start", "ts": 1.0, "task": "t", "max_iter": 5}
    lines = [json.dumps(e) for e in (start, *events)]
    (run.path / "events.jsonl").write_text("\n".join(lines) + "\n")
    return run


def test_the_runs_table_shows_the_outcome_with_its_reason_and_the_parts(tmp_path: Path) -> None:
    ended = _run(
        tmp_path,
        "20261125-100000-aaaaaa",
        {"event": "run_end", "ts": 2.0, "outcome": "abort", "reason": "the tests cannot pass"},
        {"event": "run_resume", "ts": 3.0, "part": 2},
        {"event": "run_end", "ts": 4.0, "outcome": "budget", "reason": "max-iter 5 reached"},
    )
    out = io.StringIO()
    table.render([describe(ended)], out)
    head, row = out.getvalue().splitlines()[:2]
    # No plan: no STEP column; two parts: PARTS.
    assert head.split()[:5] == ["RUN", "STATE", "OUTCOME", "ITER", "PARTS"]
    # The last part's end is the run's: a resumed run's earlier reason is gone with it.
    assert "budget: max-iter 5 reached" in row and "abort" not in row
    assert row.split()[row.split().index("reached") + 2] == "2"  # ITER, then PARTS


def test_columns_every_run_leaves_at_their_default_are_left_out_so_the_task_fits_80() -> None:
    rows = [
        {
            "run_id": "20261125-100000-aaaaaa",
            "state": "working",
            "outcome": None,
            "step": None,
            "step_index": 0,
            "steps_of": 0,
            "iterations": 0,
            "max_iter": 50,
            "parts": 1,
            "elapsed_s": 5.0,
            "clock_from": None,
            "cost_usd": 0.0,
            "task": "a slow task",
        }
    ]
    out = io.StringIO()
    table.render(rows, out)
    head, row = out.getvalue().splitlines()[:2]
    assert head.split() == ["RUN", "STATE", "OUTCOME", "ITER", "ELAPSED", "COST", "TASK"]
    assert row.endswith("a slow task") and len(row) <= 80
    out = io.StringIO()
    table.render([{**rows[0], "parts": 2, "step": "tests", "step_index": 1, "steps_of": 2}], out)
    assert out.getvalue().split()[:9] == [
        "RUN",
        "STATE",
        "OUTCOME",
        "STEP",
        "ITER",
        "PARTS",
        "ELAPSED",
        "COST",
        "TASK",
    ]


def test_a_complete_that_verify_rejected_is_shown_as_rejected() -> None:
    events = [
        {"event": "decision", "iteration": 1, "action": "complete", "content": "done"},
        {"event": "verify", "iteration": 1, "passed": False, "exit_code": 1},
        {"event": "decision", "iteration": 2, "action": "continue", "content": "fix it"},
        {"event": "verify", "iteration": 2, "passed": False},  # no [COMPLETE] before it
        {"event": "decision", "iteration": 3, "action": "complete", "content": "now"},
        {"event": "verify", "iteration": 3, "passed": True, "exit_code": 0},
    ]
    shown = mark_rejected(events)
    assert [(d["action"], d["rejected"]) for d in shown] == [
        ("complete", True),
        ("continue", False),
        ("complete", False),
    ]


def _batch(runs_dir: Path, tasks: list[dict[str, Any]], ended: float | None) -> Path:
    where = runs_dir / state.BATCHES_DIR / "TASKS-0123456789"
    data = {"tasks_file": "/p/TASKS.yaml", "base": None, "pid": 1, "started": 5.0}
    where.mkdir(parents=True)
    (where / state.STATE_FILE).write_text(json.dumps({**data, "ended": ended, "tasks": tasks}))
    return where


def test_a_batch_has_its_own_row_counting_its_tasks(tmp_path: Path) -> None:
    live = _run(tmp_path, "20261125-100002-cccccc")
    _batch(
        tmp_path,
        [
            {"id": "a", "phase": "ended", "run_id": "r1", "outcome": "complete", "exit_code": 0},
            {"id": "b", "phase": "ended", "run_id": "r2", "outcome": "abort", "exit_code": 1},
            {"id": "c", "phase": "running", "run_id": live.run_id},
            {"id": "d", "phase": "running", "run_id": "20261125-gone"},  # died with the batch
            {"id": "e", "phase": "queued"},
            # Ended by a signal: cut short, not decided; a rerun resumes it.
            {"id": "f", "phase": "ended", "run_id": "r3", "outcome": "signal", "exit_code": 143},
        ],
        ended=None,
    )
    out = io.StringIO()
    with live.lock():  # c's run is alive
        assert runs.main([], out, tmp_path) == 0
        (batch,) = state.rows(tmp_path)
    lines = out.getvalue().splitlines()
    header = ["BATCH", "STATE", "DONE", "RUNNING", "QUEUED", "INTERRUPTED", "FAILED", "FILE"]
    assert lines[0].split() == header
    # Not running, never ended: it crashed. d's run is not alive: a rerun goes on with it,
    # so it is interrupted, not failed; b's abort is final: failed.
    row = ["TASKS-0123456789", "crashed", "1", "1", "1", "2", "1", "/p/TASKS.yaml"]
    assert lines[1].split() == row
    counted = ("done", "running", "queued", "interrupted", "failed")
    assert tuple(batch[k] for k in counted) == (1, 1, 1, 2, 1)
    assert any(line.startswith("RUN ") for line in lines)  # the runs follow
    listed = json.loads(_json(tmp_path))
    assert listed[0]["batch"] == "TASKS-0123456789" and listed[1]["run_id"] == live.run_id


def _json(runs_dir: Path) -> str:
    out = io.StringIO()
    assert runs.main(["--json"], out, runs_dir) == 0
    return out.getvalue()
