"""The spinning detector on any text: slow progress is never spinning, and what changes
by itself (spinners, timers, token counters, ids) never hides a repeat."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ptysup.run.repeats import RepeatDetector, normalise
from tests.property.guard import cpu_deadline
from tests.property.strategies import any_text

texts = any_text(200)


@given(texts)
@settings(max_examples=300, deadline=2000)
def test_normalise_never_raises_nor_hangs(text: str) -> None:
    with cpu_deadline(2):
        out = normalise(text)
    assert isinstance(out, str) and out == out.strip()


@given(st.lists(st.tuples(texts, texts), min_size=1, max_size=12))
@settings(max_examples=200, deadline=2000)
def test_files_changing_every_round_is_never_spinning(rounds: list[tuple[str, str]]) -> None:
    n = iter(range(1000))
    detector = RepeatDetector(2, fingerprint=lambda: f"state {next(n)}")
    with cpu_deadline(5):
        assert all(detector.observe(i, a) is None for i, a in rounds)


@given(texts, st.lists(st.integers(0, 10**6), min_size=1, max_size=12, unique=True))
@settings(max_examples=200, deadline=2000)
def test_a_different_answer_each_round_is_never_spinning(base: str, counts: list[int]) -> None:
    detector = RepeatDetector(2)
    # The same instruction; each answer says how far it got, in a line of its own.
    with cpu_deadline(5):
        assert all(detector.observe("go on", f"{base}\nchecked {c} files") is None for c in counts)


decorations = st.sampled_from(
    [
        "\n✻ Worked for {n}s",
        "\n⠙ Thinking… ({n}s · ↓ {n}.{n}k tokens)",
        " in {n}ms",
        " (cost ${n}.{n})",
        ' "request_id":"req_{n}abc"',
        " at 1{n}:0{n}",
    ]
)


@given(texts, decorations, st.lists(st.integers(1, 9), min_size=3, max_size=3))
@settings(max_examples=200, deadline=2000)
def test_spinners_timers_and_counters_never_hide_a_repeat(
    answer: str, decoration: str, numbers: list[int]
) -> None:
    detector = RepeatDetector(3)
    # The same answer, its timer, counter or id another each time.
    answer = "Result: " + answer.replace("\r", " ")
    seen = [detector.observe("try again", answer + decoration.format(n=n)) for n in numbers]
    assert seen[-1] is not None and detector.exhausted(seen[-1])
