from __future__ import annotations

from ptysup.terminal.inject import PASTE_END, PASTE_START, Typist, as_message, clean


def test_clean_keeps_text_newlines_and_tabs() -> None:
    assert clean("fix a.py\n\tthen b.py — ünïcode ✓") == "fix a.py\n\tthen b.py — ünïcode ✓"


def test_clean_turns_carriage_returns_into_newlines() -> None:
    assert clean("one\r\ntwo\rthree") == "one\ntwo\nthree"


def test_clean_removes_controls_and_escape_sequences() -> None:
    hostile = (
        "a\x03b\x04c\x1b[31mred\x1b[0m\x1b]0;title\x07d\x1b[201~e\x9b2Jf\x85g\x7fh\x1bPdcs\x1b\\i"
        "\x1b[?2004lj\x1bck\x00l"
    )
    assert clean(hostile) == "abcreddefghijkl"


def test_as_message_neutralises_slash_and_shell_commands() -> None:
    assert as_message("/exit") == " /exit"
    assert as_message("!rm -rf /") == " !rm -rf /"
    assert as_message("\n\nplain\n") == "plain"


def test_typist_pastes_then_submits_in_a_separate_write() -> None:
    writes: list[bytes] = []
    pauses: list[float] = []
    typist = Typist(writes.append, pauses.append, submit_pause_s=0.1)
    typist.paste("line 1\nline 2")  # the session waits for it to show, then:
    typist.enter()
    assert writes == [PASTE_START + b"line 1\nline 2" + PASTE_END, b"\r"]
    assert pauses == [0.1]


def test_typist_types_commands_as_keys() -> None:
    writes: list[bytes] = []
    Typist(writes.append, lambda s: None).command("/clear")
    assert writes == [b"/clear", b"\r"]
