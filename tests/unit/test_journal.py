"""The event log's file (JsonlSink): every event a whole line, whatever the last one was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ptysup.events import Event, EventLog, JsonlSink, failure_text
from ptysup.store.rundir import progress, read_events


def _lines(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n")
    return text.split("\n")[:-1]


@pytest.mark.parametrize("cut", ['{"ts": 1.0, "event": "hoo', '{"ts": 1.0, "event": "hook"}'])
def test_an_event_after_a_cut_last_line_starts_a_line_of_its_own(tmp_path: Path, cut: str) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"ts": 0.5, "event": "run_start", "run_id": "r"}\n' + cut)
    log = EventLog([JsonlSink(path)])
    log.emit("run_resume", run_id="r", part=2)
    log.emit("agent_start", pid=1)
    log.close()
    lines = _lines(path)
    assert lines[1] == cut  # the cut line stays alone, as it was
    assert [json.loads(line)["event"] for line in lines[2:]] == ["run_resume", "agent_start"]
    assert [e["event"] for e in read_events(path)][-2:] == ["run_resume", "agent_start"]


def test_an_empty_log_and_a_whole_one_get_no_blank_line(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    for _ in range(2):  # created empty, then appended to whole
        sink = JsonlSink(path)
        sink.write(Event("x", 1.0))
        sink.close()
    assert [json.loads(line)["event"] for line in _lines(path)] == ["x", "x"]


def test_a_part_whose_start_the_log_lost_still_counts_by_its_number() -> None:
    events = [
        {"event": "run_start", "ts": 1.0},
        {"event": "run_resume", "ts": 2.0, "part": 3},  # part 2's run_resume was lost
    ]
    assert progress(events).parts == 3


class _Full:
    """A sink whose disk is full from its second write on."""

    def __init__(self) -> None:
        self.writes = 0

    def write(self, event: Event) -> None:
        self.writes += 1
        if self.writes > 1:
            raise OSError(28, "No space left on device", "/runs/r/events.jsonl")

    def close(self) -> None:
        raise OSError(28, "No space left on device", "/runs/r/events.jsonl")


class _Seen:
    def __init__(self) -> None:
        self.events: list[str] = []

    def write(self, event: Event) -> None:
        self.events.append(event.event)

    def close(self) -> None:
        pass


def test_the_first_failed_write_is_told_once_and_to_a_late_watcher_too() -> None:
    told: list[str] = []
    seen = _Seen()
    log = EventLog([_Full(), seen])
    log.on_failure(lambda err: told.append(failure_text(err)))
    log.emit("run_start")
    assert told == [] and log.failed is None
    log.emit("hook")
    log.emit("run_end")
    log.close()
    assert told == ["cannot write /runs/r/events.jsonl: No space left on device"]
    assert seen.events == ["run_start", "hook", "run_end"]  # the other sinks got every event
    late: list[OSError] = []
    log.on_failure(late.append)
    assert late == [log.failed] and log.failed is not None and log.failed.errno == 28
