"""The mode tracker: what the agent left on is switched off, nothing else."""

from __future__ import annotations

import pytest

from ptysup.terminal.inject import Typist, one_line
from ptysup.terminal.modes import BRACKETED_PASTE, ModeTracker

ALWAYS = b"\x1b7\x1b[r\x1b8\x1b[0m"  # scroll region and colours, whatever happened


def test_a_fresh_agent_needs_only_region_and_colours_reset() -> None:
    tracker = ModeTracker()
    tracker.feed(b"plain output\r\n\x1b[31mred\x1b[0m")
    assert tracker.reset() == ALWAYS


def test_modes_left_on_are_switched_off_alternate_screen_first() -> None:
    tracker = ModeTracker()
    tracker.feed(b"\x1b[?1049h\x1b[?25l\x1b[?1000;1006h\x1b=\x1b[?1h\x1b[?2004h\x1b[>1u")
    reset = tracker.reset()
    assert reset.startswith(b"\x1b[?1049l")
    for part in (b"\x1b[?25h", b"\x1b[?1000l", b"\x1b[?1006l", b"\x1b>", b"\x1b[?1l"):
        assert part in reset
    assert b"\x1b[?2004l" in reset and b"\x1b[<1u" in reset
    assert reset.endswith(ALWAYS)


def test_modes_the_agent_turned_off_again_are_left_alone() -> None:
    tracker = ModeTracker()
    tracker.feed(b"\x1b[?1049h\x1b[?25l\x1b=\x1b[>1u")
    tracker.feed(b"\x1b[?25h\x1b[?1049l\x1b>\x1b[<u")
    assert tracker.reset() == ALWAYS


@pytest.mark.parametrize("cut", range(1, 9))
def test_a_sequence_split_across_chunks_is_seen(cut: int) -> None:
    data = b"xx\x1b[?2004h"
    tracker = ModeTracker()
    tracker.feed(data[:cut])
    assert not tracker.on(BRACKETED_PASTE) or cut >= len(data)
    tracker.feed(data[cut:])
    assert tracker.on(BRACKETED_PASTE)
    tracker.feed(b"\x1b[?2004l")
    assert not tracker.on(BRACKETED_PASTE)


def test_plain_text_for_an_agent_without_bracketed_paste() -> None:
    writes: list[bytes] = []
    bracketed = [False]
    typist = Typist(writes.append, lambda s: None, bracketed=lambda: bracketed[0])
    typist.paste("Get ready\n\n  second line\n")
    bracketed[0] = True
    typist.paste("Get ready\nnow")
    assert writes == [b"Get ready second line", b"\x1b[200~Get ready\nnow\x1b[201~"]


def test_one_line_joins_lines_and_drops_blank_ones() -> None:
    assert one_line("a\n\n b \nc") == "a b c"
    assert one_line("single") == "single"


def test_changes_among_many_other_sequences_apply_in_order() -> None:
    colours = b"".join(b"\x1b[3%dmx\x1b[0m" % (i % 8) for i in range(500))
    tracker = ModeTracker()
    tracker.feed(colours + b"\x1b[?2004h" + colours + b"\x1b>\x1b[?1049h\x1b=" + colours)
    tracker.feed(colours + b"\x1b[?2004l\x1b[?25l" + colours + b"\x1b[?2004h")
    assert tracker.on(2004) and tracker.on(1049)
    assert tracker.reset().startswith(b"\x1b[?1049l")  # the alternate screen left first
    assert b"\x1b[?25h" in tracker.reset() and b"\x1b>" in tracker.reset()  # cursor, keypad


@pytest.mark.parametrize("filler", [b"=", b">", b"<", b"?", b"a=b>c<d?"])
def test_changes_amid_text_full_of_the_probe_bytes_are_seen(filler: bytes) -> None:
    # The tracker finds prefixes by their rare last byte; text made of those bytes takes
    # the other way, and must find the same changes.
    text = filler * (200 // len(filler))
    tracker = ModeTracker()
    tracker.feed(text + b"\x1b=" + text + b"\x1b[?1049h" + text + b"\x1b[>1u" + text)
    reset = tracker.reset()
    assert reset.startswith(b"\x1b[?1049l") and b"\x1b>" in reset and b"\x1b[<1u" in reset
    tracker.feed(text + b"\x1b>" + text + b"\x1b[?1049l" + text + b"\x1b[<1u" + text)
    assert tracker.reset() == ALWAYS


@pytest.mark.parametrize(
    ("data", "switched"),
    [
        (b"text\x1b[?1049h\x1b[?25l", True),
        (b"\x1b[?25h\x1b[?1049l", True),
        (b"\x1b[?47h", True),
        (b"\x1b[?1047l", True),
        (b"\x1b[?25;1049h", True),  # among other modes
        (b"\x1b[?3h", True),  # 132 columns: the screen and its margins cleared
        (b"\x1b[?" + b"9" * 5000 + b"h", False),  # no mode, and no error
        (b"\x1b[?25l\x1b[?2026h\x1b[?2004h", False),
        (b"\x1b[1049h", False),  # not a private mode
        (b"plain text ?1049h", False),
    ],
)
def test_feed_says_whether_the_screen_was_switched(data: bytes, switched: bool) -> None:
    # The status line draws its row again on the other screen (wiring).
    tracker = ModeTracker()
    assert tracker.feed(data) is switched
    assert tracker.feed(b"more text") is False  # said once, for the chunk that switched


@pytest.mark.parametrize("cut", range(1, 8))
def test_a_switch_split_across_chunks_is_said_by_the_chunk_that_ends_it(cut: int) -> None:
    data = b"\x1b[?1049h"
    tracker = ModeTracker()
    assert tracker.feed(b"x" + data[:cut]) is False
    assert tracker.feed(data[cut:] + b"x") is True
    assert tracker.on(1049)


def test_codexs_keyboard_and_frame_modes_left_on_are_switched_off() -> None:
    # Codex 0.169 at start: kitty push, modifyOtherKeys, focus events; every frame inside
    # synchronized output. Killed mid-frame, all of them would outlive it.
    tracker = ModeTracker()
    tracker.feed(b"\x1b[>7u\x1b[>4;1m\x1b[?1004h\x1b[?2026hframe")
    reset = tracker.reset()
    for part in (b"\x1b[<1u", b"\x1b[>4;0m", b"\x1b[?1004l", b"\x1b[?2026l"):
        assert part in reset, part


def test_modify_other_keys_turned_off_again_is_left_alone() -> None:
    tracker = ModeTracker()
    tracker.feed(b"\x1b[>4;2m\x1b[?2026h\x1b[?2026l")
    tracker.feed(b"\x1b[>4m")
    assert tracker.reset() == ALWAYS
