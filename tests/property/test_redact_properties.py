"""The redactor on any text: idempotent, and a secret planted anywhere never survives, even
in a line that a terminal (or the agent) wrapped over several rows of its screen."""

from __future__ import annotations

import os
import sys

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from ptysup.redact import Redactor
from ptysup.supervisor.prompt import PromptContext, build_prompt
from ptysup.terminal.pty_ import AgentProcess
from ptysup.terminal.screen import ScreenModel
from tests.property.guard import cpu_deadline
from tests.property.strategies import any_text, token_text

ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0234567"


def body(alphabet: str, size: int) -> st.SearchStrategy[str]:
    return st.text(st.sampled_from(alphabet), min_size=size, max_size=size)


# (the secret as it appears, the part of it that must not survive)
secrets = st.one_of(
    body(ALNUM + "_-", 40).map(lambda b: ("sk-ant-api03-" + b, b)),
    body(ALNUM + "_-", 60).map(lambda b: ("sk-proj-" + b, b)),
    body(ALNUM, 48).map(lambda b: ("sk-" + b, b)),
    st.tuples(st.sampled_from("pousr"), body(ALNUM, 36)).map(lambda t: (f"gh{t[0]}_{t[1]}", t[1])),
    body(ALNUM + "_", 82).map(lambda b: ("github_pat_" + b, b)),
    st.tuples(st.sampled_from(["AKIA", "ASIA"]), body(UPPER, 16)).map(
        lambda t: (t[0] + t[1], t[1])
    ),
    body(ALNUM + "/+", 40).map(lambda b: (f"aws_secret_access_key = {b}", b)),
    body(ALNUM + "._-", 30).map(lambda b: (f"Authorization: Bearer 9{b}", "9" + b)),
    body(ALNUM + "+/", 64).map(
        lambda b: (f"-----BEGIN EC PRIVATE KEY-----\n{b}\n-----END EC PRIVATE KEY-----", b)
    ),
)
PIECES = ["sk-", "sk-ant-", "ghp_", "AKIA", "Bearer ", "bearer", "[REDACTED:", "]", "=", " "]
texts = st.one_of(any_text(), token_text(PIECES))
SEPARATORS = st.sampled_from([" ", "\n", "\t", '"', "'", "=", ": ", ", ", "(", ")", "`"])


@given(texts)
@settings(max_examples=500, deadline=2000)
@example("Bearer sk-ant-" + "a" * 30)
@example("ghp_" + "A" * 36 + "sk-ant-" + "b" * 30)
def test_redaction_is_idempotent(text: str) -> None:
    redact = Redactor.with_extra([r"corp-\d+", "RED"])
    with cpu_deadline(2):
        once = redact(text)
    assert redact(once) == once


@given(texts, SEPARATORS, secrets, SEPARATORS, texts)
@settings(max_examples=500, deadline=2000)
# Found by this test: in one pass, the bearer pattern took the name for the token.
@example("BEARER", " ", ("aws_secret_access_key = " + "0" * 40, "0" * 40), " ", "")
def test_a_planted_secret_never_survives(
    before: str, left: str, secret: tuple[str, str], right: str, after: str
) -> None:
    planted, hidden = secret
    assume(hidden not in before and hidden not in after)
    with cpu_deadline(2):
        out = Redactor()(before + left + planted + right + after)
    assert hidden not in out
    assert "[REDACTED:" in out


@given(st.text(st.characters(categories=("L", "N", "Zs", "P")), max_size=500))
@settings(max_examples=300, deadline=2000)
def test_text_without_secret_prefixes_is_returned_unchanged(text: str) -> None:
    lowered = text.lower()
    if not any(p in lowered for p in ("sk-", "gh", "akia", "asia", "bearer", "aws_", "-----")):
        assert Redactor()(text) == text


# -- a secret an agent prints through a real PTY, in a line the terminal or the agent wraps

WORDS = st.lists(st.sampled_from(["the", "key", "is", "here:", "and", "done.", "●", "`"]))
FRAGMENT = 8  # no run of this many characters of a secret may reach the supervisor


def printed_screen(text: str, cols: int) -> str:
    """What a child on a real PTY of `cols` columns leaves on the screen model after
    writing `text` (newlines become CRLF there, as for any program)."""
    child = AgentProcess.spawn(
        [sys.executable, "-c", "import os, sys; sys.stdout.write(os.environ['TEXT'])"],
        cwd=None,
        env={**os.environ, "TEXT": text},
        size=(40, cols),
    )
    model = ScreenModel(40, cols)
    try:
        while data := child.read():
            model.feed(data)
    finally:
        child.close()
    return model.snapshot().text()


def broken_like_claude_code(line: str, cols: int) -> str:
    """`line` broken at the screen's width by the agent itself, as Claude Code does with
    a long word: `● ` before the first row, two spaces before the others."""
    rows, rest = [], "● " + line
    while len(rest) > cols:
        rows.append(rest[:cols])
        rest = "  " + rest[cols:]
    return "\n".join([*rows, rest])


@pytest.mark.parametrize("cols", [40, 80, 120, 200])
@given(WORDS, secrets, WORDS, st.booleans(), st.data())
@settings(max_examples=15, deadline=None)
def test_a_secret_wrapped_on_screen_never_reaches_the_prompt(
    cols: int,
    before: list[str],
    secret: tuple[str, str],
    after: list[str],
    by_agent: bool,
    data: st.DataObject,
) -> None:
    planted, hidden = secret
    first = len(planted.split("\n")[0])
    # Where the secret starts on its row: far enough right that it goes on to the next.
    lead = data.draw(st.integers(max(0, cols - first + 1), cols - 1), label="lead")
    words = (" ".join(before).ljust(lead)[: lead - 1] + " ")[-lead:] if lead else ""
    line = " ".join([words + planted, *after])
    fragments = [hidden[i : i + FRAGMENT] for i in range(len(hidden) - FRAGMENT + 1)]
    assume(not any(f in line.replace(planted, "") for f in fragments))
    if by_agent:
        line = broken_like_claude_code(line, cols)
    screen = printed_screen(line + "\n\nnext line", cols)
    assert "next line" in screen
    prompt = build_prompt(
        PromptContext(task="t", iteration=1, max_iter=5, elapsed_s=0, screen=Redactor()(screen))
    )
    assert not [f for f in fragments if f in prompt], prompt
    assert "[REDACTED:" in prompt
