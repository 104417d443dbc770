"""The run directory: run.json, the lock, RUN resolution, progress over every part."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ptysup.config import RunConfig
from ptysup.store.rundir import (
    RunDir,
    RunLocked,
    RunNotFound,
    RunRecord,
    config_from_json,
    config_to_json,
    find_run,
    find_run_dir,
    part_recordings,
    progress,
    write_atomic,
)


def test_options_survive_the_trip_through_run_json() -> None:
    config = RunConfig(
        task="t",
        max_iter=7,
        agent_cmd=("claude", "--model", "x"),
        verify=(("pytest", "-q"), ("ruff", "check")),
        max_time=90.0,
        summary_json=Path("s.json"),
        redact=("sk-[a-z]+",),
    )
    data = json.loads(json.dumps(config_to_json(config)))
    assert config_from_json(data, cwd=Path(".")) == config


def test_the_lock_refuses_a_second_holder_and_names_the_pid(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "r1")
    assert run.holder() is None
    with run.lock():
        assert run.holder() == os.getpid()
        with pytest.raises(RunLocked) as caught, run.lock():
            pass
        assert caught.value.pid == os.getpid()
    assert run.holder() is None


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
def test_a_killed_holder_leaves_no_lock_behind(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "r1")
    code = (
        "import os, signal, sys; from pathlib import Path; from ptysup.store.rundir import RunDir\n"
        f"with RunDir(Path({str(run.path)!r})).lock():\n"
        "    print('locked', flush=True); sys.stdin.read()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline() == "locked\n"
    assert run.holder() == proc.pid
    proc.kill()
    proc.wait()
    assert run.holder() is None


def test_write_atomic_replaces_the_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "d" / "run.json"
    write_atomic(path, "one")
    write_atomic(path, "two")
    assert path.read_text() == "two" and oct(path.stat().st_mode & 0o777) == "0o600"
    assert sorted(p.name for p in path.parent.iterdir()) == ["run.json"]


def _record(run: RunDir, log: Path) -> None:
    run.write_record(RunRecord(run.run_id, {}, "sid", str(log), None, "/", 0.0))


def test_run_resolution_by_events_file_elsewhere_prefix_and_last(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    a, b = RunDir(runs / "20260101-000000-aaaaaa"), RunDir(runs / "20260102-000000-bbbbbb")
    log = tmp_path / "elsewhere.jsonl"
    log.write_text(json.dumps({"event": "run_start", "run_id": a.run_id, "ts": 1}) + "\n")
    _record(a, log)
    _record(b, b.default_events)
    b.default_events.write_text("")
    assert find_run_dir(str(log), runs).path == a.path  # --log-file outside the run dir
    assert find_run("20260101", runs) == log
    assert find_run_dir("last", runs).path == b.path
    with pytest.raises(RunNotFound, match="ambiguous"):
        find_run_dir("2026", runs)


def _ev(event: str, ts: float, **fields: object) -> dict[str, object]:
    return {"event": event, "ts": ts, **fields}


def test_progress_spans_every_part_even_one_cut_off_by_kill_9() -> None:
    events = [
        _ev("run_start", 100.0, task="t", max_iter=5),
        _ev("step_start", 101.0, id="a", index=1, of=2),
        _ev("decision", 110.0, iteration=1, max_iter=5, total_cost_usd=0.5),
        _ev("step_end", 111.0, id="a", outcome="complete"),
        _ev("step_start", 111.0, id="b", index=2, of=2),
        _ev("decision", 120.0, iteration=2, max_iter=5, total_cost_usd=0.75),
        _ev("hook", 130.0, name="Stop"),  # then kill -9: no run_end
        _ev("run_resume", 1000.0, elapsed_before_s=30.0, max_iter=9),
        _ev("decision", 1010.0, iteration=3, max_iter=9, total_cost_usd=1.0),
    ]
    p = progress(events[:7])
    assert (p.iterations, p.elapsed_s, p.cost_usd, p.outcome) == (2, 30.0, 0.75, None)
    assert (p.steps_done, p.step, p.step_index, p.step_iterations) == (("a",), "b", 2, 1)
    p = progress(events)
    assert (p.iterations, p.elapsed_s, p.cost_usd, p.max_iter, p.parts) == (3, 40.0, 1.0, 9, 2)
    assert p.step_iterations == 2  # step b's decisions in both parts
    ended = progress(
        [*events, _ev("run_end", 1020.0, outcome="budget", iterations=3, elapsed_s=50)]
    )
    assert (ended.outcome, ended.elapsed_s) == ("budget", 50)


def test_each_part_of_a_run_names_its_own_recording() -> None:
    events = [
        _ev("run_start", 1.0, run_id="a", record="/r/events.cast"),
        _ev("run_start", 2.0, run_id="b", record="/r/b.cast"),  # a reused --log-file
        _ev("run_resume", 3.0, run_id="a", record="/r/events.part2.cast"),
        _ev("run_resume", 4.0, run_id="a"),  # a part that does not say
    ]
    default = Path("/r/default.cast")
    assert part_recordings(events, default, "a") == [
        Path("/r/events.cast"),
        Path("/r/events.part2.cast"),
        default,
    ]
    assert len(part_recordings(events, default)) == 4
    assert part_recordings([], default) == [default]


def test_a_part_killed_in_a_quiet_spell_counts_its_time_to_its_last_sign_of_life() -> None:
    events = [
        _ev("run_start", 100.0, task="t"),
        _ev("inject", 110.0, kind="task", text="t"),  # then a quiet 20-minute tool call
    ]
    assert progress(events).elapsed_s == 10.0  # the log alone
    assert progress(events, alive=1300.0).elapsed_s == 1200.0
    assert progress(events, alive=50.0).elapsed_s == 10.0  # an earlier part's mark
    resumed = [*events, _ev("run_resume", 2000.0, elapsed_before_s=1200.0), _ev("x", 2005.0)]
    assert progress(resumed, alive=2100.0).elapsed_s == 1300.0  # only the last part's
    ended = [*events, _ev("run_end", 120.0, outcome="abort", elapsed_s=20.0)]
    assert progress(ended, alive=1300.0).elapsed_s == 20.0  # run_end's time stands


def test_the_alive_file_says_when_the_run_last_marked_itself_alive(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "r1")
    assert run.last_alive() is None
    run.path.mkdir()
    run.mark_alive()
    first = run.last_alive()
    assert first is not None and abs(first - time.time()) < 5
    os.utime(run.path / "alive", (1000.0, 1000.0))
    assert run.last_alive() == 1000.0
    run.mark_alive()
    assert run.last_alive() == pytest.approx(first, abs=5)
    assert (run.path / "alive").stat().st_mode & 0o777 == 0o600


def test_the_session_an_agent_picked_replaces_the_placeholder_in_run_json(
    tmp_path: Path,
) -> None:
    run_dir = RunDir(tmp_path / "run-1")
    run_dir.path.mkdir()
    config = RunConfig(task="t", cwd=tmp_path, agent_cmd=("codex",))
    run_dir.store(config, "ptysup-placeholder", tmp_path / "events.jsonl", None)
    before = run_dir.read_record()
    run_dir.learn_session("019a-codex")
    after = run_dir.read_record()
    assert before is not None and after is not None
    assert (before.session_id, after.session_id) == ("ptysup-placeholder", "019a-codex")
    assert after.config == before.config and after.started == before.started


def _decided(action: str, content: str = "why") -> dict[str, object]:
    return {"event": "decision", "iteration": 1, "action": action, "content": content}


STEP_2 = {"event": "step_start", "id": "b", "index": 2, "of": 2}


@pytest.mark.parametrize(
    ("events", "unfinished"),
    [
        ([_decided("complete", "all done")], ("complete", "all done")),
        ([_decided("abort"), {"event": "interrupt"}, {"event": "escalation"}], ("abort", "why")),
        ([_decided("escalate"), {"event": "escalation"}], ("escalate", "why")),
        ([_decided("complete"), {"event": "verify", "passed": True}], ("complete", "why")),
        ([_decided("complete"), {"event": "run_resume"}], ("complete", "why")),  # killed again
        ([_decided("continue")], None),
        ([_decided("complete"), {"event": "inject", "kind": "verify"}], None),
        ([_decided("escalate"), {"event": "turn_end", "kind": "stop"}], None),
        ([_decided("abort"), {"event": "run_end", "outcome": "abort"}], None),
        # A step before the last ended: the next one starts; the last: the plan is done.
        ([{**STEP_2, "index": 1}, _decided("complete"), {"event": "step_end"}], None),
        ([STEP_2, _decided("complete"), {"event": "step_end"}], ("complete", "why")),
    ],
)
def test_the_last_decision_a_run_never_carried_out_is_read_from_its_log(
    events: list[dict[str, object]], unfinished: tuple[str, str] | None
) -> None:
    started = [{"event": "run_start", "run_id": "r"}, {"event": "inject", "kind": "task"}]
    assert progress([*started, *events]).unfinished == unfinished
