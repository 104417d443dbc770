"""The "still working" line of a quiet CI log."""

from __future__ import annotations

from ptysup.events import EventLog
from ptysup.heartbeat import Heartbeat
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
