"""Recorded Claude Code sessions replayed through the screen model: the detector must agree.

Each `fixtures/transcripts/NAME.cast` (asciicast v2, made by scripts/record_transcript.py)
holds the real output of Claude Code and markers `[t, "m", "expect:STATE[+FLAG...]"]`
where the recording script knew the state. Flags: `api_error` (an API error line is on
screen), `input` (the input box holds text); a flag left out must be false.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ptysup.agents.claude.profile import ClaudeProfile
from ptysup.agents.events import ScreenState
from ptysup.terminal.record import as_bytes, read_cast, size_of
from ptysup.terminal.screen import ScreenModel, ScreenSnapshot

TRANSCRIPTS = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
CASTS = sorted(TRANSCRIPTS.glob("*.cast"))
EXPECT = "expect:"


@dataclass(frozen=True)
class Marker:
    """One marker of a recording: what it expects, what the detector read there."""

    where: str  # "NAME.cast marker N at T s"
    expected: str  # "ready+api_error"
    observed: str


def reading(snap: ScreenSnapshot) -> str:
    """What ClaudeProfile reads on SNAP, written like a marker: `ready+api_error+input`."""
    profile = ClaudeProfile()
    flags = {
        "api_error": profile.api_error(snap) is not None,
        "input": profile.input_has_text(snap),
    }
    return "+".join([profile.screen_state(snap).value, *(k for k, on in flags.items() if on)])


def replay(cast: Path, piece: int | None = None) -> Iterator[Marker]:
    """Feed the recorded output (in its recorded chunks, or in PIECE-byte pieces) and the
    resizes to a ScreenModel; at each marker, read the screen."""
    size, events = read_cast(cast)
    assert size["version"] == 2
    screen = ScreenModel(size["height"], size["width"])
    for t, code, data in events:
        if code == "o":
            output = as_bytes(data)
            step = piece or len(output)
            for start in range(0, len(output), step):
                screen.feed(output[start : start + step])
        elif code == "r":
            screen.resize(*size_of(data))
        elif code == "m":
            assert data.startswith(EXPECT), f"{cast.name}: unknown marker {data!r}"
            yield Marker(
                f"{cast.name} marker at {t}s", data[len(EXPECT) :], reading(screen.snapshot())
            )


@pytest.mark.parametrize("cast", CASTS, ids=[c.stem for c in CASTS])
def test_detector_reads_recorded_screens(cast: Path) -> None:
    markers = list(replay(cast))
    assert markers, f"{cast.name} has no expect markers"
    for marker in markers:
        assert marker.observed == marker.expected, marker.where


@pytest.mark.parametrize("cast", CASTS, ids=[c.stem for c in CASTS])
def test_seven_byte_pieces_read_the_same(cast: Path) -> None:
    # 7-byte pieces split UTF-8 sequences (❯, ─, braille) and escape sequences.
    assert list(replay(cast, piece=7)) == list(replay(cast))


def test_recordings_cover_every_state() -> None:
    expected = {m.expected.split("+")[0] for cast in CASTS for m in replay(cast)}
    assert expected >= {
        s.value for s in (ScreenState.READY, ScreenState.WORKING, ScreenState.DIALOG)
    }
