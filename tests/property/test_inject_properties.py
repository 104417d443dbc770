"""The text cleaner on any input: never raises, and nothing in its output acts on a terminal."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ptysup.terminal.inject import as_message, clean
from tests.property.guard import cpu_deadline
from tests.property.strategies import TERMINAL_PIECES, any_text, token_text

# Every C0 and C1 control, DEL included, but newline and tab.
FORBIDDEN = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
SURROGATE = re.compile("[\ud800-\udfff]")
PIECES = [p.decode("utf-8", "surrogateescape") for p in TERMINAL_PIECES] + ["/", "!", "\x85"]
texts = st.one_of(any_text(), token_text(PIECES), st.binary().map(lambda b: b.decode("latin-1")))


def assert_inert(text: str) -> None:
    """Only printable text, newlines and tabs: no control, no escape sequence, encodable."""
    bad = FORBIDDEN.search(text)
    assert bad is None, f"control {bad.group()!r} at {bad.start()} in {text!r}"
    assert SURROGATE.search(text) is None
    text.encode("utf-8")  # what the typist writes


@given(texts)
@settings(max_examples=500, deadline=2000)
@example("\x1b]0;title")  # an OSC cut before its terminator
@example("\x1b[")  # a CSI cut after its introducer
@example("\x9b31m\x9d0;x\x9c")  # 8-bit CSI, OSC, ST
@example("a\x1b\x1b[31mb")
@example("\udcff\udcfe task from a latin-1 command line")
def test_cleaned_text_is_inert(text: str) -> None:
    with cpu_deadline(2):
        out = clean(text)
    assert_inert(out)
    assert clean(out) == out


@given(st.text(st.characters(exclude_categories=("Cc", "Cs"))))
@settings(max_examples=300, deadline=2000)
def test_text_without_controls_is_kept_as_it_is(text: str) -> None:
    assert clean(text) == text


@given(texts)
@settings(max_examples=500, deadline=2000)
@example("/exit")
@example("\n\n!rm -rf ~")
@example("\x03/clear")
@example("\x1b[31m/exit")
@example("use C:\\temp\\\n")
def test_a_message_is_inert_and_never_a_command(text: str) -> None:
    with cpu_deadline(2):
        message = as_message(text)
    assert_inert(message)
    assert not message.startswith(("/", "!"))
    assert not message.endswith("\\")  # `\` + Enter would insert a newline, not submit
    assert message == message.strip("\n")
    assert as_message(message) == message


@pytest.mark.parametrize("unit", ["\x1b]", "\x1b[1;", "\x9b1;", "\x1bP", "\x1b", "\r\n", "\x1b[?"])
def test_cleaning_a_megabyte_is_linear(unit: str) -> None:
    # Sequences opened and never ended are the worst case for the escape regex.
    with cpu_deadline(2, f"cleaning 1 MiB of {unit!r}"):
        assert_inert(clean(unit * ((1 << 20) // len(unit))))


def test_a_trailing_backslash_gets_a_space_so_enter_submits() -> None:
    assert as_message("use C:\\temp\\") == "use C:\\temp\\ "
    assert as_message("a \\\\") == "a \\\\ "
    assert as_message("a \\ b") == "a \\ b"
