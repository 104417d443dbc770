"""The screen model and the Claude Code detector on any byte stream: never raise, never hang.

Random and malformed streams come from Hypothesis; the recorded transcripts of the real
Claude Code (fixtures/transcripts/*.cast) are read at every offset just after an escape
sequence starts (where a cut leaves one half-read) and at a stride elsewhere, and are
fed cut short, with a piece dropped from the middle, and followed by another recording.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ptysup.agents.claude.profile import ClaudeProfile
from ptysup.terminal.record import as_bytes, read_cast, size_of
from ptysup.terminal.screen import ScreenModel, ScreenSnapshot
from tests.property.guard import cpu_deadline
from tests.property.strategies import any_text, terminal_bytes

TRANSCRIPTS = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
CASTS = sorted(TRANSCRIPTS.glob("*.cast"))
PROFILE = ClaudeProfile()
STRIDE = 61  # offsets read between escape sequences
AFTER_ESC = 4  # offsets read just after each ESC (inside the sequence it starts)
MAX_CUTS = 100  # streams per recording cut short and followed by another
API_ERROR_EVERY = 32  # the api_error regex is slow on wide screens (see test below)


def read(snap: ScreenSnapshot, api_error: bool = True) -> None:
    """Run every detector on `snap`."""
    PROFILE.screen_state(snap)
    PROFILE.input_has_text(snap)
    if api_error:
        PROFILE.api_error(snap)


# -- random streams ----------------------------------------------------------------------


@given(
    terminal_bytes(),
    st.lists(st.integers(0, 200), max_size=6),
    st.integers(1, 60),
    st.integers(1, 250),
    st.one_of(st.none(), st.tuples(st.integers(1, 60), st.integers(1, 250))),
)
@settings(max_examples=120, deadline=5000)
def test_any_byte_stream_in_any_pieces_never_raises(
    data: bytes, cuts: list[int], rows: int, cols: int, resize: tuple[int, int] | None
) -> None:
    answers: list[bytes] = []
    with cpu_deadline(5):
        model = ScreenModel(rows, cols, answer=answers.append)
        edges = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
        for n, (start, end) in enumerate(itertools.pairwise(edges)):
            model.feed(data[start:end])
            if resize is not None and n == 0:
                model.resize(*resize)
            read(model.snapshot())
        read(model.snapshot())


@pytest.mark.parametrize(
    "data",
    [
        # pyte int()s what str.isdigit() accepts, and calls handlers with every parameter.
        pytest.param("\x1b[²m".encode(), id="superscript-digit"),
        pytest.param(b"\x1b[" + b"1" * 5000 + b"m", id="5000-digit-param"),
        pytest.param(b"\x1b[1;2@", id="too-many-params-ICH"),
        pytest.param("\x1b[1;2\x1b[²P".encode(), id="too-many-params-in-pyte-parser"),
        pytest.param("ＡＡ\rab\x1b[2P".encode(), id="wide-char-stub"),
        pytest.param(b"\x1b[?3h\x1b#8", id="column-mode-and-alignment"),
        pytest.param(b"\x1b[" + b";" * 10_000 + b"m", id="ten-thousand-params"),
        pytest.param(b"\x1bP" + b"d" * 100_000 + b"\x1b\\", id="long-dcs"),
    ],
)
def test_malformed_sequences_leave_the_model_working(data: bytes) -> None:
    model = ScreenModel(10, 40)
    with cpu_deadline(5):
        model.feed(data + b"\x1b[H\x1b[2Jafter")  # one chunk: what follows must not be lost
        snap = model.snapshot()
    read(snap)
    assert "after" in snap.text()


def test_an_unterminated_title_is_survived() -> None:
    # pyte (unlike a VT500 parser) reads an ESC inside an OSC as part of it: the output
    # after a title cut short is lost up to the next BEL. It must not raise or stall.
    model = ScreenModel(10, 40)
    with cpu_deadline(5):
        model.feed(b"\x1b]0;" + b"t" * 100_000 + b"\x1b[H\x1b[2Jlost")
        model.feed(b"\x07\x1b]0;\xe2\x9c\xb3 Claude Code\x07back")
        snap = model.snapshot()
    read(snap)
    assert "back" in snap.text() and snap.title == "✳ Claude Code"


@given(
    st.lists(any_text(max_size=400), max_size=70).map(tuple),
    any_text(max_size=200),
    st.tuples(st.integers(-5, 100), st.integers(-5, 500)),
)
@settings(max_examples=300, deadline=5000)
def test_detector_reads_any_snapshot(
    lines: tuple[str, ...], title: str, cursor: tuple[int, int]
) -> None:
    with cpu_deadline(5):
        read(ScreenSnapshot(lines, title, cursor))


@pytest.mark.parametrize("unit", ["rate limit ", " ", "overloaded "])
def test_detector_is_fast_on_a_wide_screen(unit: str) -> None:
    # 60 lines of 600 columns: ~1 s per api_error call with the current regex, 6 s at
    # 1000 columns; a few ms with a linear one.
    line = (unit * (600 // len(unit) + 1))[:600]
    snap = ScreenSnapshot((line,) * 60, "✳ Claude Code", (0, 0))
    with cpu_deadline(0.2, "reading a 600-column screen"):
        read(snap)


# -- the recorded transcripts ------------------------------------------------------------


@dataclass(frozen=True)
class Recording:
    """A transcript's output bytes, its size, and its resizes by byte offset."""

    name: str
    rows: int
    cols: int
    data: bytes
    resizes: tuple[tuple[int, int, int], ...]  # (offset, rows, cols)

    @classmethod
    def load(cls, path: Path) -> Recording:
        size, events = read_cast(path)
        chunks: list[bytes] = []
        resizes: list[tuple[int, int, int]] = []
        offset = 0
        for _, code, data in events:
            if code == "o":
                chunks.append(as_bytes(data))
                offset += len(chunks[-1])
            elif code == "r":
                resizes.append((offset, *size_of(data)))
        return cls(path.stem, size["height"], size["width"], b"".join(chunks), tuple(resizes))

    def checkpoints(self) -> list[int]:
        """Offsets just inside every escape sequence, and a stride elsewhere."""
        near = {
            i + k
            for i in range(len(self.data))
            if self.data[i] == 0x1B
            for k in range(1, AFTER_ESC + 1)
        }
        return sorted(
            o for o in near | set(range(0, len(self.data), STRIDE)) if o <= len(self.data)
        )

    def model(self) -> ScreenModel:
        return ScreenModel(self.rows, self.cols, answer=lambda _: None)

    def feed(self, model: ScreenModel, start: int, end: int) -> None:
        """Feed data[start:end], resizing where the recording did."""
        for offset, rows, cols in self.resizes:
            if start <= offset < end:
                model.feed(self.data[start:offset])
                model.resize(rows, cols)
                start = offset
        model.feed(self.data[start:end])


RECORDINGS = {c.stem: Recording.load(c) for c in CASTS}


@pytest.mark.parametrize("name", sorted(RECORDINGS))
def test_transcript_read_at_every_cut(name: str) -> None:
    rec = RECORDINGS[name]
    model = rec.model()
    done = 0
    with cpu_deadline(60, f"reading {name} at every cut"):
        for n, offset in enumerate(rec.checkpoints()):
            rec.feed(model, done, offset)
            done = offset
            read(model.snapshot(), api_error=n % API_ERROR_EVERY == 0)
    assert done >= len(rec.data) - STRIDE


@pytest.mark.parametrize("name", sorted(RECORDINGS))
def test_transcript_cut_short_then_another_session(name: str) -> None:
    # The stream ends mid-sequence (a crash, a dropped backlog); then other output follows.
    rec, other = RECORDINGS[name], RECORDINGS["startup_idle"]
    inside = [o for o in rec.checkpoints() if rec.data[o - 1 : o] == b"\x1b"]
    cuts = inside[:: max(1, len(inside) // MAX_CUTS)]
    with cpu_deadline(60, f"{name} cut short {len(cuts)} times"):
        for offset in cuts:
            model = rec.model()
            rec.feed(model, 0, offset)
            model.feed(other.data)
            read(model.snapshot())


@given(st.sampled_from(sorted(RECORDINGS)), st.integers(0, 20_000), st.integers(0, 20_000))
@settings(max_examples=60, deadline=10_000)
def test_transcript_with_a_piece_dropped_from_the_middle(name: str, i: int, j: int) -> None:
    rec = RECORDINGS[name]
    start, end = sorted((i % (len(rec.data) + 1), j % (len(rec.data) + 1)))
    model = rec.model()
    with cpu_deadline(10):
        model.feed(rec.data[:start])
        model.feed(rec.data[end:])
        read(model.snapshot())


# -- zero-width characters ----------------------------------------------------------------

ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufe0e\ufe0f"


@given(st.text(st.sampled_from("ab ⚠👨あ" + ZERO_WIDTH), max_size=60))
@settings(max_examples=200, deadline=2000)
def test_no_text_is_lost_around_zero_width_characters(text: str) -> None:
    model = ScreenModel(3, 200)
    model.feed(text.encode() + b"\r\nend")
    shown = model.snapshot().text().split("\n")
    visible = text.translate(dict.fromkeys(map(ord, ZERO_WIDTH))).rstrip()
    assert shown[0].translate(dict.fromkeys(map(ord, ZERO_WIDTH))).rstrip() == visible
    assert shown[1] == "end"
