"""In-band state reports (Codex's OSC 7501) reach the screen snapshot, however the agent's
output is cut into chunks."""

from __future__ import annotations

import pytest

from ptysup.terminal.screen import ScreenFeeder, ScreenModel

REPORTS = (
    b"\x1b[?2026hworking...\x1b]7501;state=working:app=codex\x1b\\drawn"
    b"\x1b]0;title\x07\x1b]7501;state=done:app=codex\x07more\x1b]7501;state=idle:app=codex\x1b\\"
)


def _fed(chunks: list[bytes], osc: int | None = 7501) -> tuple[ScreenModel, list[str]]:
    model = ScreenModel(5, 40)
    seen: list[str] = []
    real = model.signal

    def note(payload: str) -> None:
        seen.append(payload)
        real(payload)

    model.signal = note  # type: ignore[method-assign]  # hear every report, in order
    feeder = ScreenFeeder(model, on_update=lambda: None, signal_osc=osc)
    for chunk in chunks:
        feeder.put(chunk)
    return model, seen


def test_every_report_is_read_in_order_and_the_snapshot_holds_the_last() -> None:
    model, seen = _fed([REPORTS])
    assert seen == ["state=working:app=codex", "state=done:app=codex", "state=idle:app=codex"]
    assert model.snapshot().signal == "state=idle:app=codex"


@pytest.mark.parametrize("cut", range(1, len(REPORTS)))
def test_a_report_split_across_two_chunks_is_still_read(cut: int) -> None:
    _, seen = _fed([REPORTS[:cut], REPORTS[cut:]])
    assert seen == ["state=working:app=codex", "state=done:app=codex", "state=idle:app=codex"]


def test_without_a_signal_osc_nothing_is_read() -> None:
    model, seen = _fed([REPORTS], osc=None)
    assert seen == [] and model.snapshot().signal == ""


def test_other_oscs_are_not_reports() -> None:
    _, seen = _fed([b"\x1b]75010;x\x07\x1b]750;y\x07\x1b]7501;z\x07"])
    assert seen == ["z"]
