"""The marker parser on any answer: never raises, never slow, reads what it should."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ptysup.supervisor.parse import Action, Decision, parse
from ptysup.supervisor.runner import MAX_OUTPUT
from ptysup.terminal.inject import clean
from tests.property.guard import cpu_deadline
from tests.property.strategies import any_text, token_text

# Pieces of answers a model (or a broken supervisor) prints around a marker.
PIECES = [
    "[", "]", "COMPLETE", "complete", "ABORT", "Continue", "CONTINUE", "```", "```text\n",
    "**", "*", "_", "`", ">", "#", "-", ":", " ", "  ", "\n", "\t", "\r\n", "\x1b[1m",
    "\x1b[0m", "\x00", "\x9b", "done", "[CONTINUE]", "[ COMPLETE ]", "ünï ✓", "\u2028",
]  # fmt: skip
answers = st.one_of(any_text(), token_text(PIECES))


@given(answers)
@settings(max_examples=400, deadline=2000)
def test_parse_never_raises_and_returns_clean_content(answer: str) -> None:
    with cpu_deadline(2):
        decision = parse(answer)
    assert isinstance(decision, Decision)
    assert decision.action in set(Action)
    assert decision.content == clean(decision.content)  # nothing a terminal would act on
    assert decision.content == decision.content.strip()


@given(st.sampled_from(list(Action)), st.sampled_from(["", " ", "**", "```\n", "\n\t"]), any_text())
@settings(max_examples=300, deadline=2000)
def test_a_marker_at_the_start_decides_whatever_follows(
    action: Action, decor: str, content: str
) -> None:
    decision = parse(f"{decor}[{action.value.upper()}] {content}")
    assert decision.marker
    assert decision.action is action


# The parser before the fix (one combined regex): the reference for what it reads.
_OLD_DECOR = r"[\s*_`>#\-]*"
_OLD_MARKER = re.compile(
    r"\A(?:```[\w-]*\s*)?"
    + _OLD_DECOR
    + r"\[\s*(COMPLETE|ABORT|CONTINUE)\s*\]"
    + _OLD_DECOR
    + r":?",
    re.IGNORECASE,
)
_OLD_FENCE_END = re.compile(r"\s*```\s*\Z")


def old_parse(answer: str) -> Decision:
    text = answer.strip()
    m = _OLD_MARKER.match(text)
    if m is None:
        return Decision(Action.CONTINUE, _OLD_FENCE_END.sub("", text).strip(), marker=False)
    content = text[m.end() :]
    if text.startswith("```"):
        content = _OLD_FENCE_END.sub("", content)
    return Decision(Action(m.group(1).lower()), content.strip().strip("*_").strip())


@given(token_text(PIECES, max_size=40))
@settings(max_examples=1000, deadline=2000)
@example("```python\n[CONTINUE] x\n```")
@example("```__[abort]:: why")
@example("```a b [CONTINUE]")
@example("````")
def test_parse_reads_what_the_old_regex_read(answer: str) -> None:
    # The fix changed how the marker is found, not what is found (on cleaned text).
    assert parse(answer) == old_parse(clean(answer))


SPACES = " " * (MAX_OUTPUT - 8)


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param("```" + SPACES + "x", id="fence-then-spaces"),
        pytest.param("x" + SPACES + "y", id="spaces-inside"),
        pytest.param("```" + "_" * MAX_OUTPUT + "x", id="fence-then-underscores"),
        pytest.param("[" + " " * MAX_OUTPUT + "x", id="bracket-then-spaces"),
        pytest.param("*" * MAX_OUTPUT, id="emphasis"),
        pytest.param("[CONTINUE] " + "x```" * (MAX_OUTPUT // 4), id="fences-in-content"),
    ],
)
def test_a_megabyte_answer_parses_in_linear_time(answer: str) -> None:
    # Before the fix, "```" + 40 000 spaces took 5 s (quadratic): 1 MiB would take hours.
    with cpu_deadline(2, "parsing a 1 MiB answer"):
        parse(answer)
