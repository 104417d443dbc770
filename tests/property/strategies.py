"""Hypothesis strategies shared by the property tests."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

# Lone surrogates are what a non-UTF-8 command line turns into; Hypothesis leaves them out
# of text unless asked.
_SURROGATE = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
_CONTROL = st.characters(max_codepoint=0x9F)


def any_text(max_size: int = 300) -> st.SearchStrategy[str]:
    """Any str: all of Unicode, controls and lone surrogates weighted up."""
    return st.text(st.one_of(st.characters(), _CONTROL, _SURROGATE), max_size=max_size)


def token_text(pieces: Sequence[str], max_size: int = 60) -> st.SearchStrategy[str]:
    """Text glued from `pieces` (and a few random characters): hits the parsers' edges."""
    return st.lists(
        st.one_of(st.sampled_from(list(pieces)), st.characters()), max_size=max_size
    ).map("".join)


# Escape sequences whole, cut short, nested and malformed; bytes that are not UTF-8.
TERMINAL_PIECES: tuple[bytes, ...] = (
    b"\x1b", b"\x1b[", b"\x1b]", b"\x1bP", b"\x1b(", b"\x1b#", b"\x1b%", b"[", b"]", b"?",
    b";", b"0", b"1", b"9", b"99999", b"m", b"H", b"J", b"K", b"h", b"l", b"r", b"@", b"P",
    b"L", b"M", b"X", b"c", b"g", b"\x07", b"\x9b", b"\x9d", b"\x9c", b"\x1b\\",
    b"\x1b[200~", b"\x1b[201~", b"\x1b]0;\xe2\x9c\xb3 Claude Code\x07", b"\x1b[?2004h",
    b"\x1b[38;5;174m", b"\x1b[38;2;1;2;3m", b"\x1b[1;2r", b"\x1b[6n", b"\x1b[c",
    b"\xe2\x94\x80" * 12, b"\xe2\x9d\xaf ", b"\xe2\x9c\xb3", b"\xe2\xa0\x8b", b"Esc to cancel",
    b"\xe2\x9d\xaf 1.", b"API Error: 529", b"rate limit resets 3pm", b"esc to interrupt",
    b"\xef\xbc\xa1", b"\xf0\x9f\x98\x80", b"\xcc\x81", b"\xff", b"\xc3", b"\xe2\x94", b"\x00",
    b"\r", b"\n", b"\r\n", b"\x08", b"\t", b"\x0e", b"\x0f", b" ", b"text", b"\x7f",
)  # fmt: skip


def terminal_bytes(max_size: int = 80) -> st.SearchStrategy[bytes]:
    """Byte streams mixing terminal pieces and random bytes."""
    return st.lists(
        st.one_of(st.sampled_from(TERMINAL_PIECES), st.binary(min_size=1, max_size=8)),
        max_size=max_size,
    ).map(b"".join)
