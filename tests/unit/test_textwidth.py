from __future__ import annotations

import pytest

from ptysup.textwidth import columns, fit


@pytest.mark.parametrize(
    ("text", "width"),
    [
        ("plain", 5),
        ("テスト", 6),
        ("⚠\ufe0f!", 3),  # the selector widens ⚠
        ("👨\u200d👩\u200d👧", 2),  # one character after the joiners
        ("e\u0301", 1),  # a combining mark
        ("a\u200bb", 2),  # a zero-width space
    ],
)
def test_columns_are_counted_as_the_screen_shows_them(text: str, width: int) -> None:
    assert columns(text) == width


def test_fit_cuts_by_columns_and_marks_the_cut() -> None:
    assert fit("ptysup テスト", 20) == "ptysup テスト"
    assert fit("ptysup テストテスト", 12) == "ptysup テス…"  # 11 columns and the mark
    assert fit("ab👨\u200d👩\u200d👧cd", 4) == "ab…"  # a wide character is never split
    assert all(columns(fit("テ" * 50, n)) <= n for n in range(1, 30))


@pytest.mark.parametrize(
    ("text", "width"), [("👍🏽", 2), ("🇺🇸", 2), ("🇺🇸🇫🇷", 4), ("🇺x", 3), ("1️⃣", 2)]
)
def test_a_skin_tone_joins_its_emoji_and_two_regional_indicators_are_a_flag(
    text: str, width: int
) -> None:
    assert columns(text) == width
