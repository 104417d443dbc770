from __future__ import annotations

import pytest

from ptysup.supervisor.parse import Action, parse


@pytest.mark.parametrize(
    ("answer", "action", "content"),
    [
        ("[COMPLETE] all tests pass", Action.COMPLETE, "all tests pass"),
        ("[ABORT] wrong repo", Action.ABORT, "wrong repo"),
        ("[CONTINUE] run the tests", Action.CONTINUE, "run the tests"),
        ("   \n\t[CONTINUE] indented", Action.CONTINUE, "indented"),
        ("[continue] lower case", Action.CONTINUE, "lower case"),
        ("[Complete]", Action.COMPLETE, ""),
        ("**[CONTINUE]** bold marker", Action.CONTINUE, "bold marker"),
        ("*[ABORT]* italic", Action.ABORT, "italic"),
        ("`[COMPLETE]` code span", Action.COMPLETE, "code span"),
        ("```\n[ABORT] fenced\n```", Action.ABORT, "fenced"),
        (
            "```text\n[CONTINUE] fenced with lang\nline 2\n```",
            Action.CONTINUE,
            "fenced with lang\nline 2",
        ),
        ("[CONTINUE]: with a colon", Action.CONTINUE, "with a colon"),
        ("[ CONTINUE ] spaced", Action.CONTINUE, "spaced"),
        (
            "[CONTINUE] line one\nline two\n\nline four",
            Action.CONTINUE,
            "line one\nline two\n\nline four",
        ),
    ],
)
def test_markers_are_read_at_the_start(answer: str, action: Action, content: str) -> None:
    decision = parse(answer)
    assert decision.marker
    assert decision.action is action
    assert decision.content == content


@pytest.mark.parametrize(
    "answer",
    ["I think the agent should run the tests.", "Note: [COMPLETE] is not at the start"],
)
def test_no_marker_means_continue_with_the_whole_answer(answer: str) -> None:
    decision = parse(answer)
    assert not decision.marker
    assert decision.action is Action.CONTINUE
    assert decision.content == answer


def test_a_marker_later_in_the_text_is_not_a_decision() -> None:
    decision = parse("The agent printed [ABORT] in its log.\n[COMPLETE]")
    assert decision.action is Action.CONTINUE
    assert not decision.marker


@pytest.mark.parametrize(
    "answer",
    ["[ESCALATE] needs a person", "**[escalate]**: needs a person", "[ Escalate ] needs a person"],
)
def test_escalate_is_the_fourth_marker(answer: str) -> None:
    decision = parse(answer)
    assert (decision.action, decision.content, decision.marker) == (
        Action.ESCALATE,
        "needs a person",
        True,
    )
