"""A recording made while events happen, replayed to show each decision's screen."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from ptysup.events import EventLog, JsonlSink
from ptysup.store.rundir import RunNotFound, find_run
from ptysup.terminal.record import Recording, read_cast
from ptysup.views.replay import main
from tests.helpers import Tick


def _record_run(run_dir: Path) -> Path:
    log_path = run_dir / "events.jsonl"
    rec = Recording(run_dir / "events.cast", 5, 20, Tick())
    log = EventLog([JsonlSink(log_path), rec])
    log.emit("run_start", run_id=run_dir.name, task="the task", record=str(rec.path))
    rec.output(b"first scr")
    rec.output("é".encode()[:1])  # a UTF-8 sequence split across reads
    rec.output("é".encode()[1:] + b"en")
    log.emit("turn_end", kind="stop", detail="")
    log.emit(
        "decision", iteration=1, max_iter=3, action="continue", content="go on", duration_s=1.0
    )
    log.emit("inject", kind="instruction", text="go on", confirmed=True, attempts=1)
    rec.output(b"\x1b[2J\x1b[Hsecond screen")
    rec.resize(6, 30)
    log.emit("decision", iteration=2, max_iter=3, action="complete", content="done", duration_s=1.0)
    log.emit("run_end", outcome="complete", exit_code=0, iterations=2, elapsed_s=3.0, cost_usd=0.01)
    log.close()
    return log_path


def test_recording_is_asciicast_v2(tmp_path: Path) -> None:
    _record_run(tmp_path / "r1")
    header, events = read_cast(tmp_path / "r1" / "events.cast")
    assert (header["version"], header["width"], header["height"]) == (2, 20, 5)
    kinds = [k for _, k, _ in events]
    assert kinds == ["o", "o", "m", "m", "i", "o", "r", "m"]
    assert "".join(d for _, k, d in events if k == "o").startswith("first scréen")
    assert [d for _, k, d in events if k == "m"] == [
        "turn_end:stop",
        "decision:1:continue",
        "decision:2:complete",
    ]
    assert (tmp_path / "r1" / "events.cast").stat().st_mode & 0o777 == 0o600
    times = [t for t, _, _ in events]
    assert times == sorted(times)


def test_replay_prints_each_decision_with_its_screen(tmp_path: Path) -> None:
    log = _record_run(tmp_path / "r1")
    out = io.StringIO()
    assert main([str(log)], out) == 0
    text = out.getvalue()
    first, second = text.split("── decision 2/3")
    assert "decision 1/3: continue" in first and "first scréen" in first
    assert "[CONTINUE] go on" in first
    assert "second screen" in second and "first" not in second
    assert "run_end: complete (exit 0)" in second


def test_find_run_by_id_prefix_and_last(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    a = _record_run(runs / "20260101-000000-aaaaaa")
    b = _record_run(runs / "20260102-000000-bbbbbb")
    assert find_run("20260101", runs) == a
    assert find_run("last", runs) == b
    assert find_run(str(b.parent), runs) == b
    with pytest.raises(RunNotFound, match="ambiguous"):
        find_run("2026", runs)
    with pytest.raises(RunNotFound, match="no run"):
        find_run("nope", runs)


def test_replay_of_a_killed_run_says_so(tmp_path: Path) -> None:
    log = _record_run(tmp_path / "r1")
    lines = log.read_text().splitlines()
    log.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:10])  # cut mid-line
    out = io.StringIO()
    assert main([str(log)], out) == 0
    assert "no run_end" in out.getvalue()
    assert json.loads(lines[0])["event"] == "run_start"


def test_replay_shows_the_checks_before_any_change_and_the_tamper_guard() -> None:
    from ptysup.views.replay import render

    events: list[dict[str, Any]] = [
        {"event": "run_start", "run_id": "r", "task": "fix calc"},
        {
            "event": "verify_baseline",
            "results": [{"command": ["pytest"], "exit_code": 1, "passed": False}],
        },
        {"event": "decision", "iteration": 1, "max_iter": 5, "action": "complete", "content": "ok"},
        {"event": "verify", "command": ["pytest"], "passed": True, "exit_code": 0},
        {
            "event": "tamper",
            "verdict": "refused",
            "files": ["tests/test_calc.py"],
            "command": ["pytest"],
            "exit_code": 1,
        },
    ]
    out = io.StringIO()
    render(events, {}, out)
    text = out.getvalue()
    assert "  checks before any change: `pytest` exited 1\n" in text
    assert "  tamper guard: refused: protected files changed: tests/test_calc.py" in text
