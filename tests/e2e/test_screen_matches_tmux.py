"""The screen model against tmux, the person's terminal: the same bytes, and the same
resizes, give the same rows and the same cursor.

Each case is played into a private tmux's pane by a small program that writes each step
raw and waits for tmux's answer to a cursor query (so tmux has read all of it), and fed
to a ScreenModel (or, where the feeder matters, to a ScreenFeeder in the relay's pieces);
`capture-pane` is compared with the model row for row.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ptysup.terminal.screen import ScreenFeeder, ScreenModel
from tests.helpers import Tmux, wait_for

pytestmark = pytest.mark.e2e

Resize = tuple[int, int]  # (cols, rows)
Step = bytes | Resize

# The pane's program: each step from the FIFO (4-byte length, then the bytes) written raw,
# then a cursor query; tmux answers it once it has read everything before it, and the
# answer is passed on as the step's acknowledgement.
PANE = """
import os, sys, tty
tty.setraw(0)
steps, acks = open(sys.argv[1], "rb"), open(sys.argv[2], "ab", buffering=0)
while head := steps.read(4):
    data = steps.read(int.from_bytes(head, "big"))
    os.write(1, data + b"\\x1b[6n")
    answer = b""
    while not answer.endswith(b"R"):
        answer += os.read(0, 1)
    acks.write(b"k")
"""


@dataclass(frozen=True)
class Case:
    """Steps played from a COLS x ROWS start; `feeder`: through a ScreenFeeder."""

    steps: tuple[Step, ...]
    cols: int = 20
    rows: int = 6
    feeder: bool = False


def progress_bars(cycles: int, bars: int = 3) -> bytes:
    """BARS progress bars repainted in place CYCLES times (cursor up over them, each
    redrawn), between a shell line and a prompt."""
    out = [b"$ run\r\n"]
    for i in range(cycles + 1):
        if i:
            out.append(b"\x1b[%dA" % bars)
        for b in range(bars):
            done = i * (b + 1) * 30 // (cycles * bars)
            pct = i * 100 // cycles
            out.append(b"\r\x1b[Kbar%d [%s%s] %d%%\r\n" % (b, b"#" * done, b"." * (30 - done), pct))
    return b"".join([*out, b"done\r\n$ "])


def one_bar(updates: int) -> bytes:
    """One progress bar redrawn in place (carriage return, erase) UPDATES times."""
    bars = (
        b"\r\x1b[K[%-30s] %d%%" % (b"#" * (i * 30 // updates), i * 100 // updates)
        for i in range(updates + 1)
    )
    return b"$ run\r\n" + b"".join(bars) + b"\r\ndone\r\n$ "


LONG = b"$ echo\r\nthe quick brown fox jumps over the lazy dog\r\n$ "
CJK = "漢字とかなの文が右端で折り返される。".encode() * 3
CASES = {
    # UTF-8 read as Latin-1 and encoded again: C1 characters, which tmux drops (pyte
    # started strings and CSIs at them and lost the lines after).
    "mojibake": Case(
        (
            "line1\r\n\u0090mojibake\r\nline3\r\n\u009bline4\r\nline5 \u009d title\r\n"
            "line6\u009c\r\ncafÃ© â€” â€œquotedâ€\u009d\r\nline8".encode(),
        ),
        cols=40,
        rows=9,
    ),
    "bytes-that-are-no-utf-8": Case((b"caf\xe9 ok\r\n\xff\xfeAB\r\n\xe2\x94x\r\nend",)),
    "c0-controls-in-text": Case((b"a\x01b\x7fc\x00d\x1ce",)),
    # A wide character at the last column goes on at the next row's start.
    "wide-at-the-last-column": Case((b"abcdefghi" + "中文字".encode() + b"x",), cols=10),
    "cjk-text-wrapping": Case((CJK + b"\r\n$ ",), cols=21, rows=8),
    "wide-without-autowrap": Case((b"\x1b[?7labcdefghi" + "中文".encode() + b"x",), cols=10),
    "wide-stub-written-over": Case(
        (b"\x1b[?7l012345678" + "中".encode() + b"X\x1b[1;9H" + "中".encode() + b"Y",),
        cols=10,
    ),
    "nel": Case((b"abc\r\ndef\x1bEghi\x1bEjkl",)),
    "rep": Case((b"ab\x1b[3bc\r\nx\x1b[30b\r\n-\x1b[5b|",)),
    "rep-only-right-after-a-character": Case(
        (b"a\r\x1b[2b|a\x1b[1m\x1b[2b|a\x1b[C\x1b[2b|\x1b[3b|ab\x1b[2b\x1b[2b",)
    ),
    "scroll-up-in-a-region": Case((b"1\r\n2\r\n3\r\n4\x1b[2;3r\x1b[4;1H\x1b[S",), rows=4),
    "scroll-up-whole-screen": Case((b"1\r\n2\r\n3\r\n4\x1b[2Sx",), rows=4),
    "scroll-down": Case((b"1\r\n2\r\n3\r\n4\x1b[Tx",), rows=4),
    "scroll-down-in-a-region": Case((b"1\r\n2\r\n3\r\n4\x1b[2;3r\x1b[4;1H\x1b[T",), rows=4),
    "scrolled-lines-come-back-on-a-grow": Case(
        (b"".join(b"line %d\r\n" % i for i in range(10)) + b"$ 1\x1b[2S", (20, 9)), rows=6
    ),
    # A restored cursor stays where it was saved, outside the scroll region too.
    "restore-outside-the-region": Case((b"\x1b[5;3Hs\x1b7\x1b[1;2r\x1b8X",), cols=10),
    "restore-csi-u-outside-the-region": Case((b"\x1b[5;3Hs\x1b[s\x1b[1;2r\x1b[uX",), cols=10),
    "restore-twice": Case((b"\x1b[2;3H\x1b7\x1b[5;1H\x1b8A\x1b8B",), cols=10),
    "restore-in-origin-mode": Case((b"\x1b[6;8H\x1b7\x1b[?6h\x1b[2;4r\x1b8Z",), cols=10),
    "erase-scrollback-only": Case((b"l1\r\nl2\r\nl3\r\nl4\r\nl5\r\nl6\x1b[3J", (10, 8)), rows=4),
    # Lines printed before a resize keep their ends: tmux reflows them.
    "narrower": Case((LONG, (12, 6))),
    "narrower-then-wider": Case((LONG, (12, 6), (50, 6))),
    "wider-joins-wrapped-lines": Case((b"abcdefghijklmnopqrstuvwxy\r\n$ ", (30, 6)), cols=10),
    "prompt-line-wrapping-at-the-cursor": Case(
        (b"$ a long command typed at the prompt", (12, 6), b"!", (50, 6)), cols=30
    ),
    "wide-characters-reflowed": Case((CJK + b"\r\n$ ", (9, 6), (30, 6), (7, 6)), cols=20),
    "many-lines-narrower-and-back": Case(
        (b"".join(b"line %d is long enough\r\n" % i for i in range(8)) + b"$ ", (9, 6), (40, 6)),
        cols=40,
    ),
    "rows-below-the-cursor-go-first": Case((b"r0\r\nr1\r\nr2\r\nr3\r\nr4\x1b[2;1H", (20, 3))),
    "alternate-screen-resized-then-left": Case(
        (b"one\r\ntwo\r\nthree\r\n\x1b[?1049h\x1b[Hfull screen", (10, 2), b"\x1b[?1049l$ back"),
        cols=30,
    ),
    # A fast progress bar floods the feeder: fed whole once it stops, no stale rows.
    "progress-bars-repainted-in-place": Case((progress_bars(8000),), cols=60, rows=10, feeder=True),
    "one-progress-bar-redrawn": Case((one_bar(40000),), cols=60, rows=10, feeder=True),
}


class Pane:
    """A private tmux whose pane plays steps written to it and says when tmux has them."""

    def __init__(self, tmp_path: Path, cols: int, rows: int) -> None:
        self.tmux = Tmux(f"screen-vs-tmux-{tmp_path.name[-24:]}", cols, rows)
        steps, self._acks = tmp_path / "steps", tmp_path / "acks"
        os.mkfifo(steps)
        self._acks.touch()
        self._played = 0
        program = tmp_path / "pane.py"
        program.write_text(PANE)
        script = tmp_path / "pane.sh"
        script.write_text(f"exec {sys.executable} {program} {steps} {self._acks}\n")
        self.tmux.start(script)
        fds: list[int] = []

        def reader_there() -> bool:  # the FIFO opens for writing once the pane reads it
            try:
                fds.append(os.open(steps, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                return False
            return True

        wait_for(reader_there, 30, "the pane's program to start")
        self._steps = fds[0]
        os.set_blocking(self._steps, True)

    def play(self, data: bytes) -> None:
        os.write(self._steps, len(data).to_bytes(4, "big"))
        view = memoryview(data)
        while view:
            view = view[os.write(self._steps, view) :]
        self._played += 1
        wait_for(lambda: self._acks.stat().st_size >= self._played, 60, "tmux to read a step")

    def resize(self, cols: int, rows: int) -> None:
        self.tmux.resize(cols, rows)
        wait_for(
            lambda: self.tmux.display("#{pane_width}x#{pane_height}") == f"{cols}x{rows}",
            10,
            f"the pane at {cols}x{rows}",
        )
        self.play(b"")  # and tmux has redrawn it

    def screen(self) -> tuple[list[str], tuple[int, int]]:
        rows = [line.rstrip() for line in self.tmux.capture().split("\n")[:-1]]
        y, x = self.tmux.display("#{cursor_y},#{cursor_x}").split(",")
        return rows, (int(y), int(x))

    def close(self) -> None:
        os.close(self._steps)
        self.tmux.kill()


@pytest.fixture
def pane(tmp_path: Path) -> Iterator[list[Pane]]:
    made: list[Pane] = []
    yield made
    for p in made:
        p.close()


class Model:
    """The screen model fed the same steps, directly or through a ScreenFeeder."""

    def __init__(self, case: Case) -> None:
        self.model = ScreenModel(case.rows, case.cols)
        self.feeder = ScreenFeeder(self.model, lambda: None) if case.feeder else None
        if self.feeder is not None:
            self.feeder.start()

    def play(self, data: bytes) -> None:
        if self.feeder is None:
            self.model.feed(data)
            return
        for start in range(0, len(data), 4096):  # as a PTY hands it to the relay
            self.feeder.put(data[start : start + 4096])
        assert self.feeder.caught_up(60), "the feeder never caught up"

    def resize(self, cols: int, rows: int) -> None:
        self.model.resize(rows, cols)

    def screen(self) -> tuple[list[str], tuple[int, int]]:
        snap = self.model.snapshot()
        return [line.rstrip() for line in snap.lines], snap.cursor

    def close(self) -> None:
        if self.feeder is not None:
            self.feeder.stop()


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_model_shows_what_tmux_shows(name: str, tmp_path: Path, pane: list[Pane]) -> None:
    case = CASES[name]
    tmux = Pane(tmp_path, case.cols, case.rows)
    pane.append(tmux)
    model = Model(case)
    try:
        for step in case.steps:
            for side in (tmux, model):
                if isinstance(step, bytes):
                    side.play(step)
                else:
                    side.resize(*step)
        shown, modelled = tmux.screen(), model.screen()
    finally:
        model.close()
    table = "\n".join(f"{a!r:48} {b!r}" for a, b in zip(shown[0], modelled[0], strict=False))
    assert modelled == shown, f"tmux (left) and the model (right):\n{table}"
