"""The pulse of a quiet run: the "still working" line of a CI log, the `alive` mark."""

from __future__ import annotations

import time

from ptysup.events import EventLog
from ptysup.run.heartbeat import Heartbeat
from tests.helpers import EventList, wait_for


def test_a_quiet_log_says_still_working_and_any_event_resets_the_wait() -> None:
    sink = EventList()
    log = EventLog([sink])
    beat = Heartbeat(log, tools=lambda: 3, every=0.3)
    log.add(beat)
    beat.start()
    try:
        log.emit("inject", kind="task", text="t")
        wait_for(lambda: "still_working" in sink.names(), 10, "a still_working event")
        names = sink.names()
        assert names[:2] == ["inject", "still_working"]
        first = next(e for e in sink.events if e.event == "still_working")
        assert first.fields["tools"] == 3 and first.fields["elapsed_s"] >= 0.3
        wait_for(lambda: sink.names().count("still_working") >= 2, 10, "a second one")
        beats = [e for e in sink.events if e.event == "still_working"]
        assert beats[1].ts - beats[0].ts >= 0.25  # one per quiet spell, not a flood
    finally:
        beat.stop()


def test_the_still_working_line_reads_as_elapsed_and_tools() -> None:
    from ptysup.events import Event, format_line

    line = format_line(Event("still_working", 0.0, {"elapsed_s": 421.5, "tools": 12}))
    assert line.endswith("ptysup still_working    7m01s into the turn, 12 tool call(s)")


def test_a_quiet_run_marks_itself_alive_and_an_event_counts_as_a_mark() -> None:
    sink = EventList()
    log = EventLog([sink])
    marks: list[float] = []
    beat = Heartbeat(
        log,
        tools=lambda: 0,
        say=False,
        alive=lambda: marks.append(time.monotonic()),
        alive_every=0.2,
    )
    log.add(beat)
    beat.start()
    try:
        start = time.monotonic()
        wait_for(lambda: len(marks) >= 2, 10, "two marks")
        assert marks[0] - start >= 0.15 and marks[1] - marks[0] >= 0.15  # one per quiet spell
        for _ in range(4):  # events keep it from marking
            time.sleep(0.1)
            at = time.monotonic()  # no later than the event: a loaded machine may lag after it
            log.emit("hook", name="PostToolUse")
        count = len(marks)
        wait_for(lambda: len(marks) > count, 10, "a mark after the events")
        assert marks[count] - at >= 0.15
    finally:
        beat.stop()
    assert "still_working" not in sink.names()  # in a terminal it says nothing


def test_a_failed_mark_is_a_warning_once_and_the_run_goes_on() -> None:
    sink = EventList()
    log = EventLog([sink])
    tries: list[int] = []

    def fail() -> None:
        tries.append(1)
        raise OSError(28, "No space left on device")

    beat = Heartbeat(log, tools=lambda: 0, say=False, alive=fail, alive_every=0.05)
    log.add(beat)
    beat.start()
    try:
        wait_for(lambda: len(tries) >= 3, 10, "three tries")
    finally:
        beat.stop()
    warnings = [e for e in sink.events if e.event == "warning"]
    assert len(warnings) == 1 and "cannot mark the run alive" in warnings[0].fields["message"]
