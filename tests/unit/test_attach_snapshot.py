"""`ptysup attach`'s first screen: the model re-emitted draws the same cells elsewhere."""

from __future__ import annotations

from pathlib import Path

import pyte
import pytest
from pyte import modes as mo

from ptysup.attach import wire
from ptysup.attach.snapshot import render
from ptysup.terminal.record import output_bytes
from ptysup.terminal.screen import ScreenModel

TRANSCRIPTS = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
ROWS, COLS = 12, 40


def replayed(data: bytes, rows: int = ROWS, cols: int = COLS) -> pyte.Screen:
    screen = pyte.Screen(cols, rows)
    pyte.ByteStream(screen).feed(data)
    return screen


def cells(screen: pyte.Screen) -> list[list[tuple[object, ...]]]:
    return [
        [tuple(screen.buffer[y][x]) for x in range(screen.columns)] for y in range(screen.lines)
    ]


def assert_same(model: ScreenModel, rows: int = ROWS, cols: int = COLS) -> None:
    painted = model.painted(render)[0]
    view = replayed(painted, rows, cols)
    original, _ = model.painted(lambda screen, alternate: (cells(screen), screen.cursor))
    assert cells(view) == original[0]
    assert (view.cursor.y, view.cursor.x) == (original[1].y, original[1].x)
    assert view.cursor.attrs == original[1].attrs
    assert tuple(view.display) == model.snapshot().lines


SCREENS = {
    "colours": b"plain \x1b[1;31mbold red\x1b[0m \x1b[4;44munder blue\x1b[0m\r\n"
    b"\x1b[38;5;208m256\x1b[48;2;10;20;30mtrue\x1b[7mrev\x1b[0m\x1b[9mstrike\x1b[3mit\x1b[0m",
    "wide and wrapped": "日本語のテキスト ".encode() * 6 + b"\r\nend",
    "scrolled": b"".join(b"line %d\r\n" % i for i in range(40)) + b"\x1b[2;3H\x1b[32mgreen",
    "cursor left coloured": b"\x1b[5;10Hhere\x1b[35;1m",
}


@pytest.mark.parametrize("name", SCREENS)
def test_the_painted_screen_draws_the_same_cells_and_cursor(name: str) -> None:
    model = ScreenModel(ROWS, COLS)
    model.feed(SCREENS[name])
    assert_same(model)


def test_a_hidden_cursor_and_a_scroll_region_are_carried_over() -> None:
    model = ScreenModel(ROWS, COLS)
    model.feed(b"top\r\n\x1b[3;8r\x1b[?25l\x1b[5;1Hinside")
    view = replayed(model.painted(render)[0])
    assert mo.DECTCEM not in view.mode
    assert view.margins is not None and (view.margins.top, view.margins.bottom) == (2, 7)
    assert_same(model)


def test_the_alternate_screen_is_entered_for_a_full_screen_program() -> None:
    model = ScreenModel(ROWS, COLS)
    model.feed(b"shell prompt\r\n\x1b[?1049h\x1b[H\x1b[2Jfull screen")
    painted = model.painted(render)[0]
    assert painted.index(b"\x1b[?1049h") < painted.index(b"full screen")
    assert "full screen" in replayed(painted).display[0]


@pytest.mark.parametrize("cast", sorted(TRANSCRIPTS.glob("*.cast")), ids=lambda p: p.stem)
def test_claude_code_screens_from_the_transcripts(cast: Path) -> None:
    model = ScreenModel(40, 120)
    model.feed(output_bytes(cast))
    assert_same(model, 40, 120)


def test_messages_survive_any_cut_of_the_stream() -> None:
    stream = (
        wire.json_frame(wire.HELLO, {"rows": 3, "cols": 4})
        + wire.frame(wire.OUTPUT, b"\x00\xff" * 300)
        + wire.frame(wire.END, b"")
    )
    for cut in range(1, len(stream)):
        reader = wire.Reader()
        got = list(reader.feed(stream[:cut])) + list(reader.feed(stream[cut:]))
        assert [k for k, _ in got] == [wire.HELLO, wire.OUTPUT, wire.END]
        assert got[1][1] == b"\x00\xff" * 300


def test_an_oversized_message_is_refused() -> None:
    with pytest.raises(wire.WireError):
        list(wire.Reader().feed(wire.HEADER.pack(wire.OUTPUT, wire.MAX_PAYLOAD + 1)))
