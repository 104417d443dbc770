"""The event log's file (JsonlSink): every event a whole line, whatever the last one was."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from ptysup.events import SYNC_AT, Event, EventLog, JsonlSink, failure_text
from ptysup.store import durable
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


class _Disk:
    """An fsync that records what it synced (by path), and can fail or wait."""

    def __init__(self) -> None:
        self.synced: list[str] = []
        self.fail: OSError | None = None
        self.hold: threading.Event | None = None
        self.holding = threading.Event()

    def __call__(self, fd: int) -> None:
        self.synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        if self.hold is not None:
            self.holding.set()
            self.hold.wait(10)
        if self.fail is not None:
            raise self.fail


def test_the_log_is_fsynced_after_the_events_that_matter_and_its_new_name_at_once(
    tmp_path: Path,
) -> None:
    disk = _Disk()
    path = tmp_path / "runs" / "r" / "events.jsonl"
    durable.make_dirs(path.parent, disk)  # as the run makes its folder: each new name too
    assert disk.synced == [str(tmp_path), str(tmp_path / "runs")]
    disk.synced.clear()
    log = EventLog([JsonlSink(path, fsync=disk)])
    assert disk.synced == [str(path.parent)]  # the new file's name
    disk.synced.clear()
    for name in ("run_start", "agent_start", "hook", "decision", "inject", "run_end"):
        log.emit(name)
        assert disk.synced == ([str(path)] if name in SYNC_AT else []), name
        disk.synced.clear()
    log.emit("hook")
    log.close()  # what came after the last sync point is synced as the file is closed
    assert disk.synced == [str(path)]


def test_a_sync_holds_up_no_other_thread_s_event(tmp_path: Path) -> None:
    # The relay logs a resize from its own thread: a decision's fsync must not stall it.
    disk = _Disk()
    log = EventLog([JsonlSink(tmp_path / "events.jsonl", fsync=disk)])
    disk.hold = threading.Event()
    deciding = threading.Thread(target=log.emit, args=("decision",))
    deciding.start()
    assert disk.holding.wait(10)
    log.emit("resize", rows=40, cols=120)  # returns while the fsync is under way
    disk.hold.set()
    deciding.join(10)
    log.close()
    names = [e["event"] for e in read_events(tmp_path / "events.jsonl")]
    assert names == ["decision", "resize"]


def test_a_failed_fsync_is_a_failed_write_of_the_log(tmp_path: Path) -> None:
    disk = _Disk()
    told: list[OSError] = []
    log = EventLog([JsonlSink(tmp_path / "events.jsonl", fsync=disk)])
    log.on_failure(told.append)
    disk.fail = OSError(5, "Input/output error")
    log.emit("hook")
    assert log.failed is None
    log.emit("decision")
    assert told and failure_text(told[0]) == (
        f"cannot write {tmp_path / 'events.jsonl'}: Input/output error"
    )


def test_a_log_that_is_no_file_is_never_fsynced(tmp_path: Path) -> None:
    disk = _Disk()
    os.mkfifo(tmp_path / "pipe")
    reader = os.open(tmp_path / "pipe", os.O_RDONLY | os.O_NONBLOCK)
    try:
        log = EventLog([JsonlSink(tmp_path / "pipe", fsync=disk)])
        log.emit("decision")
        log.close()
    finally:
        os.close(reader)
    assert disk.synced == []
