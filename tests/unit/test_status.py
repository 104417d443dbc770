from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyte
import pytest

from ptysup.events import CUT, EventLog
from ptysup.terminal import status
from ptysup.terminal.modes import ModeTracker
from ptysup.terminal.record import output_bytes
from ptysup.terminal.status import GAP_S, REDRAW_S, StatusLine, StatusSink, ends_cleanly
from tests.unit.test_transcripts import CASTS


@pytest.mark.parametrize(
    ("data", "clean"),
    [
        (b"plain text", True),
        (b"\x1b[31mred\x1b[0m", True),
        (b"text\x1b", False),
        (b"text\x1b[3", False),
        (b"text\x1b[?2026", False),
        (b"\x1b]0;title", False),
        (b"\x1b]0;title\x07", True),
        (b"\x1b]0;title\x1b\\", True),
        (b"\x1b7", True),
        ("✶".encode()[:2], False),
        ("✶".encode(), True),
        ("é".encode()[:1], False),
    ],
)
def test_ends_cleanly(data: bytes, clean: bool) -> None:
    assert ends_cleanly(data) is clean


class Terminal:
    """A pyte terminal standing in for the person's."""

    def __init__(self, rows: int, cols: int) -> None:
        self.screen = pyte.Screen(cols, rows)
        self.stream = pyte.ByteStream(self.screen)

    def write(self, data: bytes) -> None:
        self.stream.feed(data)


def test_agent_output_never_reaches_the_status_row_and_the_row_survives_scrolling() -> None:
    term = Terminal(8, 40)
    line = StatusLine(term.write, 8, 40, clock=lambda: 0.0)
    assert line.agent_size() == (7, 40)
    line.start()
    line.update("ptysup 1/5 · working")
    line.flush()
    for i in range(30):  # the agent prints more lines than its screen holds
        chunk = f"agent line {i}\r\n".encode()
        term.write(chunk)
        line.after_output(chunk)
    assert term.screen.display[7].startswith("ptysup 1/5 · working")
    assert term.screen.display[6].strip() == ""
    assert term.screen.display[5].startswith("agent line 29")


def test_status_waits_for_the_end_of_a_split_escape_sequence() -> None:
    writes: list[bytes] = []
    line = StatusLine(writes.append, 10, 40, clock=lambda: 0.0)
    line.after_output(b"abc\x1b[3")
    line.update("status")
    line.flush()
    assert writes == []
    line.after_output(b"1mdef")
    assert len(writes) == 1 and b"status" in writes[0]


def test_sink_composes_iteration_time_and_last_decision() -> None:
    pokes: list[int] = []
    line = StatusLine(lambda b: None, 10, 80, clock=lambda: 0.0)
    t = [100.0]
    sink = StatusSink(line, lambda: pokes.append(1), clock=lambda: t[0])
    log = EventLog([sink])
    log.emit("run_start", max_iter=50)
    log.emit("turn_end", kind="stop")
    t[0] = 165.0
    log.emit("decision", iteration=2, action="continue", content="fix the test")
    assert line.text == "ptysup 2/50 · 1m05s · decided: continue · last: continue: fix the test"
    assert len(pokes) == 3
    log.emit("decision", iteration=3, action="continue", content="go", total_cost_usd=0.4213)
    assert line.text == "ptysup 3/50 · 1m05s · $0.42 · decided: continue · last: continue: go"


def test_a_refusal_of_the_tamper_guard_shows_on_the_row() -> None:
    line = StatusLine(lambda b: None, 10, 80, clock=lambda: 0.0)
    log = EventLog([StatusSink(line, lambda: None, 50, clock=lambda: 0.0)])
    log.emit("verify", iteration=1, passed=True)
    log.emit("tamper", iteration=1, verdict="passed", files=["tests/test_a.py"])
    assert "verify passed" in line.text  # nothing refused: the verify's word stands
    log.emit("tamper", iteration=1, verdict="refused", files=["tests/test_a.py"])
    assert line.text == "ptysup 0/50 · 0s · done refused: the agent changed the tests"


def test_a_decision_on_the_row_keeps_its_words_apart_and_is_cut_like_the_ci_log() -> None:
    term = Terminal(8, 200)
    line = StatusLine(term.write, 8, 200, clock=lambda: 0.0)
    line.start()
    log = EventLog([StatusSink(line, lambda: None, clock=lambda: 0.0)])
    said = "Fix\x1b[31m the\ntest:\r\n\tthen\x0brun\x0cit\x85again\u2028now " + "w" * 200
    log.emit("decision", iteration=1, action="continue", content=said)
    line.flush()
    last = term.screen.display[7].split(" · last: ", 1)[1].rstrip()
    words = "continue: Fix the test: then run it again now "
    assert last == words + "w" * (CUT - len(words) + len("continue: ") - 1) + "…"
    assert term.screen.display[7].startswith("ptysup 1/0 · 0s · decided: continue")
    log.emit("decision", iteration=2, action="continue", content='count("  a   b ")\n  is 7')
    line.flush()
    assert term.screen.display[7].rstrip().endswith('last: continue: count("  a   b ") is 7')


def test_stop_gives_the_whole_terminal_back() -> None:
    term = Terminal(8, 40)
    line = StatusLine(term.write, 8, 40, clock=lambda: 0.0)
    line.start()
    line.stop()
    assert term.screen.display[7].strip() == ""
    assert (term.screen.margins is None) or (term.screen.margins.bottom == 7)


def test_a_flood_of_clears_redraws_at_most_every_gap_and_the_pause_restores_the_row() -> None:
    term = Terminal(8, 40)
    draws: list[bytes] = []
    t = [0.0]

    def write(data: bytes) -> None:
        draws.append(data)
        term.write(data)

    line = StatusLine(write, 8, 40, clock=lambda: t[0])
    line.start()
    line.update("ptysup 1/5 · working")
    line.flush()
    draws.clear()
    for i in range(1000):  # one second of an agent clearing its screen every ms
        t[0] += 0.001
        relay(line, term.write, f"\x1b[2J\x1b[Hframe {i}".encode())
    assert 5 <= len(draws) <= 1 / GAP_S + 1
    assert not term.screen.display[7].startswith("ptysup")  # the last clear erased it
    line.flush()  # the relay saw the output pause
    assert term.screen.display[7].startswith("ptysup 1/5 · working")
    assert term.screen.display[0].startswith("frame 999")


def relay(line: StatusLine, write: Callable[[bytes], None], chunk: bytes) -> None:
    """One chunk of the agent's output as the relay handles it: translated, written, and
    (as a batch of its own) observed."""
    shown = line.for_person(chunk)
    write(shown)
    line.after_output(shown)
    line.observe(shown)


@pytest.mark.parametrize(
    "reset", [b"\x1b[!p", b"\x1bc", b"\x1b[2J", b"\x1b[J", b"\x1b[0J", b"\x1b[3J", b"\x1b#8"]
)
def test_a_clear_or_a_soft_reset_redraws_the_row_and_region(reset: bytes) -> None:
    writes: list[bytes] = []
    line = StatusLine(writes.append, 10, 40, clock=lambda: 0.0)
    line.start()
    writes.clear()
    relay(line, lambda _: None, b"text" + reset)
    line.flush()
    assert len(writes) == 1 and b"\x1b[1;9r" in writes[0] and b"ptysup" in writes[0]


@pytest.mark.parametrize("cut", [1, 2, 3])
def test_a_clear_split_between_two_batches_is_seen(cut: int) -> None:
    writes: list[bytes] = []
    line = StatusLine(writes.append, 10, 40, clock=lambda: 0.0)
    line.start()
    writes.clear()
    clear = b"\x1b[2J"
    relay(line, lambda _: None, b"text" + clear[:cut])
    relay(line, lambda _: None, clear[cut:] + b"more text")
    line.flush()
    assert len(writes) == 1 and b"\x1b[1;9r" in writes[0]


def test_a_clear_split_in_three_batches_is_seen_and_one_seen_whole_is_drawn_once() -> None:
    writes: list[bytes] = []
    line = StatusLine(writes.append, 10, 40, clock=lambda: 0.0)
    line.start()
    writes.clear()
    for piece in (b"ab\x1b", b"[", b"2Jxyz"):  # an agent writing tiny pieces
        relay(line, lambda _: None, piece)
    line.flush()
    assert len(writes) == 1 and b"\x1b[1;9r" in writes[0]
    relay(line, lambda _: None, b"text\x1b[J")  # whole, at the end of its batch
    line.flush()
    relay(line, lambda _: None, b"plain")  # its seam holds that clear, seen already
    line.flush()
    assert len(writes) == 2


def test_a_reset_while_the_periodic_region_is_due_still_frees_the_cursor() -> None:
    writes: list[bytes] = []
    t = [0.0]
    line = StatusLine(writes.append, 10, 40, clock=lambda: t[0])
    line.start()
    t[0] = REDRAW_S - 0.05
    line.update("ptysup 0:02")
    relay(line, lambda _: None, b"a")  # drawn: the gap since start has passed
    t[0] = REDRAW_S + 0.01
    relay(line, lambda _: None, b"b")  # the periodic region is due, not drawn yet (gap)
    relay(line, lambda _: None, b"\x1bc" + b"line\r\n" * 30)
    line.flush()
    assert writes[-1].startswith(status.FREE_LAST_ROW)


@pytest.mark.parametrize("switch", [b"\x1b[?1049h", b"\x1b[?1049l", b"\x1b[?47h", b"\x1b[?1047l"])
def test_a_screen_switch_seen_by_the_mode_tracker_redraws_the_row_and_region(
    switch: bytes,
) -> None:
    # The wiring: the tracker reads every batch and tells the status line (erased()).
    writes: list[bytes] = []
    line = StatusLine(writes.append, 10, 40, clock=lambda: 0.0)
    line.start()
    writes.clear()
    relay(line, lambda _: None, b"text" + switch)
    assert ModeTracker().feed(b"text" + switch)
    line.erased()
    line.flush()
    assert len(writes) == 1 and b"\x1b[1;9r" in writes[0] and b"ptysup" in writes[0]


def test_after_a_hard_reset_and_lines_in_the_same_read_the_agent_scrolls_above_the_row() -> None:
    # `ESC c` drops the region and homes the cursor; the agent's lines that came with it
    # in one read ran down onto the last row. The repair frees the cursor from that row
    # before it sets the region, so later lines scroll above the status row again.
    term = Terminal(10, 40)
    line = StatusLine(term.write, 10, 40, clock=lambda: 0.0)
    line.start()
    relay(line, term.write, b"\x1bc" + b"".join(b"line %d\r\n" % i for i in range(1, 31)))
    line.flush()  # the output paused
    assert term.screen.display[9].startswith("ptysup")
    assert term.screen.display[7].startswith("line 30")
    for i in range(31, 36):
        relay(line, term.write, b"line %d\r\n" % i)
    line.flush()
    assert term.screen.display[9].startswith("ptysup")
    assert [row.rstrip() for row in term.screen.display[4:9]] == [
        "line 32",
        "line 33",
        "line 34",
        "line 35",
        "",
    ]


def test_an_alert_is_written_whole_between_the_agents_sequences_and_the_sink_says_why() -> None:
    writes: list[bytes] = []
    line = StatusLine(writes.append, 10, 40, clock=lambda: 0.0)
    line.after_output(b"text\x1b[3")  # the agent stopped inside a sequence
    line.alert(b"\x07\x1b]9;ptysup: help\x07")
    line.flush()
    assert writes == []
    line.after_output(b"1m")
    line.flush()
    assert writes[-1].endswith(b"\x07\x1b]9;ptysup: help\x07")
    line.flush()
    assert writes[-1].count(b"\x1b]9;") == 1  # written once
    pokes: list[int] = []
    sink = StatusSink(line, lambda: pokes.append(1), 5, clock=lambda: 0.0)
    log = EventLog([sink])
    log.emit("escalation", reason="needs the API key")
    assert sink.text() == "ptysup 0/5 · 0s · waiting for you: needs the API key"
    log.emit("hook", name="UserPromptSubmit")
    assert "agent working" in sink.text()
    log.emit("question", to="person")
    assert "waiting for you: the agent asks a question" in sink.text()
    assert len(pokes) == 3


def test_paused_stays_on_the_status_line_whatever_the_agent_does() -> None:
    line = StatusLine(lambda b: None, 10, 80, clock=lambda: 0.0)
    sink = StatusSink(line, lambda: None, 5, clock=lambda: 0.0, escape_key="Ctrl-]")
    log = EventLog([sink])
    log.emit("person_command", command="pause")
    assert "PAUSED" in sink.text()
    # The person's own prompt, the agent's turn end, a question: still paused.
    log.emit("hook", name="UserPromptSubmit")
    log.emit("turn_end", kind="stop")
    log.emit("question", to="person")
    assert "PAUSED: the agent is yours" in sink.text()
    log.emit("person_command", command="resume")
    assert "PAUSED" not in sink.text()


def test_a_status_change_before_ptysup_hears_of_a_grown_window_keeps_the_output_scrolling() -> None:
    # tmux grows the window at once and tells the PTY (SIGWINCH) up to 250 ms later; a
    # person's Enter in between changes the status. Its draw must not set a region for the
    # old size: the cursor would sit below it, and the agent's lines would not scroll above
    # the status row.
    term = Terminal(10, 40)
    line = StatusLine(term.write, 10, 40, clock=lambda: 0.0)
    line.start()
    term.screen.resize(14, 40)  # the terminal grew and dropped the region, as tmux does
    term.write(b"\x1b[13;1Hbash$ seq 1 20")
    line.update("ptysup · your message: agent working")
    line.flush()
    chunk = b"\r\n" + b"".join(b"%d\r\n" % i for i in range(1, 21)) + b"bash$ "
    term.write(chunk)
    line.after_output(chunk)
    line.resize(14, 40)  # SIGWINCH at last
    line.flush()
    assert term.screen.display[13].startswith("ptysup · your message: agent working")
    assert term.screen.display[12].rstrip() == "bash$"
    assert [row.rstrip() for row in term.screen.display[8:12]] == ["17", "18", "19", "20"]


@pytest.mark.parametrize("pulled", [0, 2, 4])
def test_after_a_grow_the_old_status_row_is_erased_wherever_the_terminal_moved_it(
    pulled: int,
) -> None:
    # A grown terminal first moves lines from its scrollback into the new rows (tmux,
    # xterm), the old status row and the cursor down with them, then adds blank rows.
    term = Terminal(8, 40)
    line = StatusLine(term.write, 8, 40, clock=lambda: 0.0)
    line.start()
    relay(line, term.write, b"one\r\ntwo\r\nthree\r\n")
    line.flush()
    assert term.screen.display[7].startswith("ptysup")
    term.screen.resize(12, 40)
    term.write(b"\x1b[r\x1b[H" + b"\x1bM" * pulled + b"\x1b[%d;1H" % (4 + pulled))
    old = 7 + pulled
    assert term.screen.display[old].startswith("ptysup")
    line.resize(12, 40, cursor_row=3)  # the cursor's row before the grow
    line.flush()
    assert term.screen.display[11].startswith("ptysup")
    if old != 11:
        assert term.screen.display[old].strip() == ""
    assert [term.screen.display[y].rstrip() for y in range(pulled, pulled + 3)] == [
        "one",
        "two",
        "three",
    ]
    assert (term.screen.cursor.y, term.screen.cursor.x) == (3 + pulled, 0)


def test_after_a_grow_output_before_the_draw_leaves_the_old_row_alone() -> None:
    # The draw waits for the end of the agent's sequence; the cursor may have moved by
    # then, so how far below it the old row is is not known any more.
    writes: list[bytes] = []
    line = StatusLine(writes.append, 8, 40, clock=lambda: 0.0)
    line.after_output(b"text\x1b[3")
    line.resize(12, 40, cursor_row=3)
    line.flush()
    assert writes == []
    line.after_output(b"1m\r\n\r\n")
    assert len(writes) == 1 and b"ptysup" in writes[0]  # the new row's draw
    assert b"B\x1b[0m\x1b[2K" not in writes[0]  # but no erase below the cursor
    line.resize(16, 40)  # without the cursor's row: nothing to erase
    line.flush()
    assert b"B\x1b[0m\x1b[2K" not in writes[-1]


# Claude Code's last bytes as it exits (2.1.197): drop the scroll region, say how to resume.
GOODBYE = b"\x1b7\x1b[r\x1b8\r\nResume this session with:\r\nclaude --resume ID\r\n"


@pytest.mark.parametrize("split", [None, 3, 4], ids=["whole", "ESC|[r", "ESC[|r"])
def test_an_agent_dropping_its_scroll_region_never_scrolls_the_status_row(
    split: int | None,
) -> None:
    term = Terminal(10, 40)
    line = StatusLine(term.write, 10, 40, clock=lambda: 0.0)
    line.start()
    line.update("ptysup 1/5 · decided: complete")
    line.flush()
    filled = b"".join(b"\r\nconversation %d" % i for i in range(20))  # cursor: agent's last row
    chunks = [filled, GOODBYE] if split is None else [filled, GOODBYE[:split], GOODBYE[split:]]
    for chunk in chunks:  # as the relay does: translated, written, observed
        shown = line.for_person(chunk)
        term.write(shown)
        line.after_output(shown)
    assert term.screen.display[9].startswith("ptysup 1/5")  # still on the last row
    assert [row.rstrip() for row in term.screen.display[6:9]] == [
        "Resume this session with:",
        "claude --resume ID",
        "",
    ]
    line.stop()  # the run ends: the row is cleared and no piece of it is left anywhere
    assert not [row for row in term.screen.display if "ptysup" in row or "·" in row]


def test_other_region_changes_and_plain_text_pass_unchanged() -> None:
    line = StatusLine(lambda b: None, 10, 40, clock=lambda: 0.0)
    for data in (b"plain r text", b"\x1b[2;5r\x1b[31mred\x1b[0m", b"[r", b"r"):
        assert line.for_person(data) is data


@pytest.mark.parametrize(
    "data",
    [
        b"\x1b[r",
        b"a\x1b[rb\x1b[r\x1b[rc",
        b"\x1b[r\x1b[r",
        b"\x1b[\x1b[rr",
        b"text\x1b[31m\x1b[r\x1b[2;5rmore\x1b[r",
    ],
)
def test_every_scroll_region_reset_in_a_chunk_becomes_the_agents_region(data: bytes) -> None:
    line = StatusLine(lambda b: None, 10, 40, clock=lambda: 0.0)
    assert line.for_person(data) == data.replace(b"\x1b[r", b"\x1b[1;9r")


@pytest.mark.parametrize("cast", CASTS, ids=lambda p: p.stem)
def test_claude_codes_output_reaches_the_person_with_only_its_region_resets_changed(
    cast: Path,
) -> None:
    data = output_bytes(cast)
    line = StatusLine(lambda b: None, 10, 40, clock=lambda: 0.0)
    shown = b"".join(line.for_person(data[i : i + 4095]) for i in range(0, len(data), 4095))
    assert shown == data.replace(b"\x1b[r", b"\x1b[1;9r")


def test_a_scroll_region_reset_split_in_three_pieces_is_followed_by_the_region() -> None:
    line = StatusLine(lambda b: None, 10, 40, clock=lambda: 0.0)
    shown = [line.for_person(piece) for piece in (b"ab\x1b", b"[", b"rxyz")]
    assert shown == [b"ab\x1b", b"[", b"r\x1b[1;9rxyz"]


# As the person's terminal gets them: the agent's `CSI r` arrives as a region (for_person).
# Screen switches are the mode tracker's to report.
ERASING = [
    b"\x1b[J",
    b"\x1b[0J",
    b"\x1b[2J",
    b"\x1b[3J",
    b"\x1b[?2J",
    b"\x1b[!p",
    b"\x1bc",
    b"\x1b#8",
]
NOT_ERASING = [
    b"\x1b[K",
    b"\x1b[2K",
    b"\x1b[1J",
    b"\x1b[?1004h",
    b"\x1b[?25l",
    b"\x1b[1;9r",
    b"Jc!p?47",
    b"\x1b[!",
    b"\x1b[?1049h",
    b"\x1b#3",
    b"#8",
]


@pytest.mark.parametrize("seq", ERASING + NOT_ERASING)
def test_the_erase_probes_agree_with_the_regex(seq: bytes) -> None:
    for data in (seq, b"text " + seq + b" \x1b[31mmore\x1b[0m", b"\x1b[1m" + seq[:-1]):
        assert status._erases(data) == (status._ERASES.search(data) is not None), data
    assert status._erases(b"x" + seq) is (seq in ERASING)
    assert status._erases(b"J!" * 100 + seq) is (seq in ERASING)  # past the probes' limit


@pytest.mark.parametrize("cast", CASTS, ids=lambda p: p.stem)
def test_the_erase_probes_agree_with_the_regex_on_claude_codes_output(cast: Path) -> None:
    data = output_bytes(cast)
    for i in range(0, len(data), 4096):
        piece = data[i : i + 4096]
        assert status._erases(piece) == (status._ERASES.search(piece) is not None), i
