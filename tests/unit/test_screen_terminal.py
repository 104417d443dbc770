"""Where ptysup's screen model differs from stock pyte on purpose: it behaves like the
person's terminal (tmux) for the alternate screen, for a resize (rows dropped, kept in a
history and brought back, lines reflowed), for REP, and for CSI sequences pyte does not
know. tests/e2e/test_screen_matches_tmux.py holds these to tmux's own rendering."""

from __future__ import annotations

import pyte
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ptysup.terminal.screen import ScreenModel


def stock(data: bytes, rows: int = 3, cols: int = 20) -> list[str]:
    screen = pyte.Screen(cols, rows)
    pyte.ByteStream(screen).feed(data)
    return list(screen.display)


FOREIGN = [
    b"\x1b[<u",  # kitty keyboard: pop (Claude Code on exit)
    b"\x1b[>1u",  # kitty keyboard: push
    b"\x1b[=5;1u",
    b"\x1b[?u",  # kitty keyboard: query (pyte has no `u`, nothing to draw either way)
    b"\x1b[!p",  # soft reset
    b"\x1b[>4;2m",  # modifyOtherKeys: pyte would underline
    b"\x1b[>0q",  # XTVERSION
    b"\x1b[38:2::1:2:3m",  # colon sub-parameters
    b"\x1b[1'z",
]


@pytest.mark.parametrize("seq", FOREIGN, ids=repr)
@pytest.mark.parametrize("piece", [None, 1, 2])
def test_unknown_csi_sequences_are_consumed_never_drawn(seq: bytes, piece: int | None) -> None:
    data = b"a" + seq + "╭─── Claude Code".encode() + seq + b"\r\nnext" + seq
    model = ScreenModel(3, 20)
    step = piece or len(data)
    for start in range(0, len(data), step):
        model.feed(data[start : start + step])
    without = data.replace(seq, b"")
    assert list(model.snapshot().lines) == stock(without)
    assert model.snapshot().lines[0].startswith("a╭─── Claude Code")
    assert model._screen.cursor.attrs == pyte.Screen(20, 3).cursor.attrs  # no underline
    assert model.rejected == 0


def test_secondary_device_attributes_still_reach_pyte() -> None:
    answers: list[bytes] = []
    model = ScreenModel(3, 20, answer=answers.append)
    model.feed(b"\x1b[>c")
    assert answers  # pyte answers it (as primary DA); ptysup keeps that


def test_a_split_known_sequence_still_applies() -> None:
    model = ScreenModel(3, 20)
    for byte in b"ab\x1b[2;5Hc\x1b[1mX":
        model.feed(bytes([byte]))
    assert model.snapshot().lines[1] == "    cX".ljust(20)
    assert model._screen.cursor.attrs.bold


@pytest.mark.parametrize("mode", [1049, 1047, 47])
def test_the_alternate_screen_gives_the_main_screen_back(mode: int) -> None:
    model = ScreenModel(4, 20)
    model.feed(b"$ less file\r\n")
    main = model.snapshot()
    model.feed(b"\x1b[?%dh\x1b[H\x1b[2Jpage 1 of less\r\n(END)" % mode)
    assert model.snapshot().text() == "page 1 of less\n(END)"
    assert model._screen.alternate
    model.feed(b"\x1b[?%dl" % mode)
    assert not model._screen.alternate
    assert model.snapshot().lines == main.lines
    if mode == 1049:  # saves and restores the cursor too
        assert model.snapshot().cursor == main.cursor
    model.feed(b"\r$ ")
    assert model.snapshot().text() == "$ less file\n$"


def test_a_reset_leaves_the_alternate_screen() -> None:
    model = ScreenModel(3, 20)
    model.feed(b"\x1b[?1049hfull screen\x1bc")
    assert not model._screen.alternate
    model.feed(b"\x1b[?1049l")  # nothing to go back to: no error, no old page
    assert model.snapshot().text() == ""


def test_a_shrink_keeps_the_cursor_with_its_text() -> None:
    # python at the bottom of a 6-row window; tmux drops the top rows on a shrink.
    model = ScreenModel(6, 20)
    model.feed(b">>> 1\r\n1\r\n>>> 2\r\n2\r\n>>> 6 * 7\r\n42")
    model.resize(4, 20)
    model.feed(b"\r\n>>> ")
    lines = [line.rstrip() for line in model.snapshot().lines]
    assert lines == ["2", ">>> 6 * 7", "42", ">>>"]


def test_a_shrink_drops_the_rows_below_the_cursor_first() -> None:
    model = ScreenModel(6, 20)
    model.feed(b"$ one\r\n$ two\r\n$ ")
    model.resize(3, 20)
    assert [line.rstrip() for line in model.snapshot().lines] == ["$ one", "$ two", "$"]
    assert model.snapshot().cursor == (2, 2)


def test_a_shrink_in_the_alternate_screen_keeps_the_main_screen_whole() -> None:
    model = ScreenModel(5, 20)
    model.feed(b"a\r\nb\r\nc\r\nd\r\n$ ")
    model.feed(b"\x1b[?1049h\x1b[Hpager")
    model.resize(3, 20)
    model.feed(b"\x1b[?1049l")
    assert [line.rstrip() for line in model.snapshot().lines] == ["c", "d", "$"]


def test_rejected_sequences_are_counted_for_one_warning() -> None:
    model = ScreenModel(2, 10)
    assert model.rejected_note() is None
    model.feed(b"a\x1b[1;2Ab\x1b[1;2Ac")
    note = model.rejected_note()
    assert note is not None and "2 escape sequence" in note and "TypeError" in note


def test_a_cell_left_past_the_edge_is_not_brought_back_by_a_reflow() -> None:
    # Found by hypothesis: an insert on a 2-column screen leaves a cell at x=2, off screen;
    # a reflow to one column takes only what was on screen (tmux 3.3a shows the same).
    model = ScreenModel(1, 1)
    model.feed(b"\x1b[?7l")
    model.resize(2, 2)
    model.feed(b"a\n\x1b[4h00\x1b8")
    model.resize(2, 1)
    assert model.snapshot().lines == (" ", "0")
    model.resize(1, 1)  # the row below the cursor goes first
    assert model.snapshot().lines == (" ",)


# Strings no screen shows. The tmux one is opencode 1.18's start-up query under tmux: the
# wrapped sequences' ESCs are doubled, so an early end at the first `ESC ESC \` drew
# `[?1016$p[?2027$p…` on the person's main screen.
STRINGS = [
    b"\x1bPtmux;\x1b\x1bP+q4d73\x1b\x1b\\\x1b\x1b[?1016$p\x1b\x1b[?2031$p\x1b\\",
    b"\x1bP+q544e\x1b\\",  # XTGETTCAP
    b"\x1b_Gi=1,a=q;AAAA\x1b\\",  # kitty graphics (APC)
    b"\x1b^privacy message\x1b\\",  # PM
    b"\x1bXstart of string\x1b\\",  # SOS
]


@pytest.mark.parametrize("seq", STRINGS, ids=repr)
def test_strings_are_consumed_never_drawn_wherever_a_feed_ends(seq: bytes) -> None:
    data = b"a" + seq + b"b\r\nnext" + seq
    whole = ScreenModel(3, 20)
    whole.feed(data)
    assert list(whole.snapshot().lines[:2]) == ["ab".ljust(20), "next".ljust(20)]
    assert whole.snapshot().cursor == (1, 4)
    for cut in range(1, len(data)):
        model = ScreenModel(3, 20)
        model.feed(data[:cut])
        model.feed(data[cut:])
        assert model.snapshot().lines == whole.snapshot().lines, cut
        assert model.snapshot().cursor == (1, 4), cut


def test_a_string_too_long_to_hold_is_still_never_drawn() -> None:
    image = b"\x1bPtmux;\x1b\x1b_G" + b"A\x1b\x1b" * 40_000 + b"B" * 10 + b"\x1b\x1b\\\x1b\\"
    model = ScreenModel(3, 20)
    model.feed(b"a" + image[:100_000])
    model.feed(image[100_000:] + b"b")
    assert model.snapshot().lines[0] == "ab".ljust(20)


def test_csi_s_and_u_save_and_restore_the_cursor_as_esc_7_and_8() -> None:
    model = ScreenModel(4, 20)
    model.feed(b"\r\n\r\nx\x1b[s\x1b[H\x1b[?utop\x1b[u!")
    assert model.snapshot().lines[0].rstrip() == "top"
    assert model.snapshot().lines[2].rstrip() == "x!"  # `CSI ? u` (kitty's query) no restore


def test_opencodes_start_and_exit_leave_the_cursor_below_what_it_printed() -> None:
    # As opencode 1.18 under tmux: queries, `CSI s`, a probe drawn at the top, `CSI u`,
    # then the alternate screen; at exit the main screen back, its logo and its hint.
    start = (
        b"\x1b[?2031h\x1b[s\x1b[6n\x1bPtmux;\x1b\x1bP+q4d73\x1b\x1b\\\x1b\x1b[?2026$p\x1b\\"
        b"\x1b[H\x1b]66;w=1; \x1b\\\x1b[6n\x1b[u\x1b[s\x1b[?1049h\x1b[2J\x1b[Hthe TUI"
    )
    model = ScreenModel(10, 40)
    model.feed(b"$ demo\r\n")
    model.feed(start)
    model.feed(b"\x1b[?1049l\x1b[?25hlogo\r\n\r\n  Continue  opencode -s ses_1\r\n\r\n")
    snap = model.snapshot()
    assert [line.rstrip() for line in snap.lines[:5]] == [
        "$ demo",
        "logo",
        "",
        "  Continue  opencode -s ses_1",
        "",
    ]
    assert snap.cursor == (5, 0)


@pytest.mark.parametrize(
    ("pieces", "shown"),
    [
        ((b"ab\x1b[3b",), "abbbb"),
        ((b"ab", b"\x1b[3b"), "abbbb"),  # the character drawn in the feed before
        ((b"ab\x1b[", b"3b"), "abbbb"),  # the REP split across feeds
        ((b"a", b"\x1b[1m", b"\x1b[2b"), "a"),  # an attribute between: nothing to repeat
        ((b"a\x1b[2b", b"\x1b[2b"), "aaa"),  # nor after a REP
        ((b"\x1bP+q\x1b\\", b"\x1b[2b"), ""),
    ],
)
def test_rep_repeats_only_the_character_drawn_just_before(
    pieces: tuple[bytes, ...], shown: str
) -> None:
    model = ScreenModel(2, 20)
    for piece in pieces:
        model.feed(piece)
    assert model.snapshot().lines[0].rstrip() == shown


LINE = st.text(alphabet="abc xyz漢字", max_size=70)


@given(
    st.lists(LINE, min_size=1, max_size=12),
    st.integers(12, 40),
    st.integers(3, 10),
    st.integers(2, 11),
)
@settings(max_examples=200, deadline=None)
def test_narrower_and_back_shows_the_lines_as_they_were(
    lines: list[str], cols: int, rows: int, narrower: int
) -> None:
    # Narrower, rows go into the history; wider again, they come back from it: lines
    # printed before, wrapped or not, are whole again, the cursor back on its character.
    # (Wider and back need not be: the rows a wider screen adds below stay, as in tmux.)
    model = ScreenModel(rows, cols)
    model.feed("\r\n".join(lines).encode())
    before = model.snapshot()
    model.resize(rows, narrower)
    model.resize(rows, cols)
    after = model.snapshot()
    assert after.lines == before.lines
    assert after.cursor == before.cursor
