"""The person's cursor at start: the terminal's answer taken from the keys whenever it
comes, the screen model's first output held until then."""

from __future__ import annotations

import pytest

from ptysup.terminal.cursor import CursorAnswer


class Model:
    """What the screen model was told, in order."""

    def __init__(self) -> None:
        self.calls: list[object] = []

    def place(self, row: int, col: int) -> None:
        self.calls.append((row, col))

    def feed(self, data: bytes) -> None:
        self.calls.append(data)


def answer(model: Model, hold_max: int = 1 << 20) -> CursorAnswer:
    return CursorAnswer(model.place, model.feed, hold_max=hold_max)


def test_the_model_starts_where_the_answer_says_before_any_output() -> None:
    model = Model()
    cursor = answer(model)
    cursor.output(b"hi\r\n")
    cursor.output(b"there")
    assert model.calls == []  # held: where does it start?
    assert cursor.keys(b"ab\x1b[12;5Rc") == b"abc"  # typed meanwhile: the person's
    assert model.calls == [(11, 4), b"hi\r\nthere"]
    cursor.output(b"more")
    assert model.calls[-1] == b"more"


@pytest.mark.parametrize(
    "reads",
    [
        [b"x\x1b", b"[3;1Ry"],
        [b"x\x1b[", b"3;1Ry"],
        [b"x\x1b[3", b";1Ry"],
        [b"x\x1b[3;", b"1Ry"],
        [b"x\x1b[3;1", b"Ry"],
        [b"x\x1b", b"[", b"3", b";", b"1", b"Ry"],
    ],
)
def test_an_answer_split_across_reads_is_taken_out_whole(reads: list[bytes]) -> None:
    model = Model()
    cursor = answer(model)
    typed = b"".join(cursor.keys(r) for r in reads)
    assert typed == b"xy"
    assert model.calls == [(2, 0)]


def test_without_an_answer_in_time_the_model_starts_at_the_top_and_a_late_one_is_dropped() -> None:
    model = Model()
    cursor = answer(model)
    cursor.output(b"hi")
    assert cursor.keys(b"a\x1b") == b"a"  # maybe an answer's start, maybe the person's Esc
    assert cursor.settle() == b""  # not yet time
    cursor.time_up()
    assert cursor.settle() == b"\x1b"  # the person's, after all
    assert model.calls == [b"hi"]
    assert cursor.keys(b"\x1b") == b"\x1b"  # no answer is due now: nothing is kept
    assert cursor.keys(b"k\x1b[40;1Rl") == b"kl"  # late, but still not the person's
    assert model.calls == [b"hi"]  # and too late to place the model
    assert cursor.keys(b"\x1b[40;1R") == b"\x1b[40;1R"  # one answer, one query


def test_a_flood_before_the_answer_is_not_held_past_the_limit() -> None:
    model = Model()
    cursor = answer(model, hold_max=10)
    cursor.output(b"12345")
    cursor.output(b"678901")
    assert model.calls == [b"12345678901"]
    assert cursor.keys(b"\x1b[2;2R") == b""
    assert model.calls == [b"12345678901"]


def test_the_end_of_the_output_releases_what_was_held() -> None:
    model = Model()
    cursor = answer(model)
    cursor.output(b"last words")
    cursor.release()
    cursor.release()
    assert model.calls == [b"last words"]


def test_without_a_terminal_nothing_is_held_or_taken_out() -> None:
    model = Model()
    cursor = answer(model)
    cursor.unasked()
    cursor.output(b"out")
    assert cursor.keys(b"\x1b[1;2R\x1b") == b"\x1b[1;2R\x1b"
    assert model.calls == [b"out"]


def test_the_model_starts_once_whatever_starts_it() -> None:
    starts: list[int] = []
    model = Model()
    cursor = CursorAnswer(model.place, model.feed, started=lambda: starts.append(1))
    cursor.output(b"x")
    assert starts == []
    cursor.keys(b"\x1b[1;1R")
    cursor.time_up()
    cursor.settle()
    cursor.release()
    assert starts == [1]
