"""The escape-key parser, byte by byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from ptysup.cli.commandline import parse_args
from ptysup.config import RunConfig
from ptysup.terminal.keys import EscapeKeys, KeyCommand, describe, parse_escape_key

P = b"\x1d"  # Ctrl-]
M, C = KeyCommand.MENU, KeyCommand.CANCEL


def _feed_all(chunks: list[bytes]) -> tuple[bytes, list[KeyCommand]]:
    keys = EscapeKeys(P)
    out, commands = b"", list[KeyCommand]()
    for chunk in chunks:
        got = keys.feed(chunk)
        out += got.forward
        commands += got.commands
    return out, commands


def test_typing_without_the_prefix_passes_through_unchanged() -> None:
    data = "hello \x1b[A\x03 wörld\r".encode()
    got = EscapeKeys(P).feed(data)
    assert got.forward == data and got.commands == ()


@pytest.mark.parametrize(
    ("key", "command"),
    [
        (b"s", KeyCommand.STOP),
        (b".", KeyCommand.STOP),
        (b"S", KeyCommand.STOP),
        (b"p", KeyCommand.TOGGLE),
        (b"r", KeyCommand.RESUME),
    ],
)
def test_prefix_and_command_key_become_a_command_and_nothing_is_forwarded(
    key: bytes, command: KeyCommand
) -> None:
    assert _feed_all([b"ab" + P + key + b"cd"]) == (b"abcd", [M, command])


def test_prefix_and_its_command_key_split_across_reads() -> None:
    assert _feed_all([b"ab" + P, b"scd"]) == (b"abcd", [M, KeyCommand.STOP])
    assert _feed_all([P, b"", b"p"]) == (b"", [M, KeyCommand.TOGGLE])


def test_every_split_of_a_stream_gives_the_same_result() -> None:
    stream = b"x" + P + b"p" + b"yy" + P + P + b"z" + P + b"q" + P + b"r"
    whole = _feed_all([stream])
    assert whole == (
        b"xyy" + P + b"z" + P + b"q",
        [M, KeyCommand.TOGGLE, M, C, M, C, M, KeyCommand.RESUME],
    )
    for cut in range(len(stream) + 1):
        assert _feed_all([stream[:cut], stream[cut:]]) == whole, cut
    assert _feed_all([stream[i : i + 1] for i in range(len(stream))]) == whole


def test_prefix_twice_sends_it_once_to_the_agent() -> None:
    assert _feed_all([P + P + b"s"]) == (P + b"s", [M, C])


def test_unknown_key_after_the_prefix_forwards_both() -> None:
    assert _feed_all([P + b"x"]) == (P + b"x", [M, C])
    assert _feed_all([P, b"\x1b[A"]) == (P + b"\x1b[A", [M, C])


def test_ctrl_c_is_never_taken() -> None:
    assert _feed_all([b"\x03", P + b"\x03"]) == (b"\x03" + P + b"\x03", [M, C])


def test_kitty_keyboard_protocol_form_of_the_prefix() -> None:
    assert _feed_all([b"\x1b[93;5u" + b"s"]) == (b"", [M, KeyCommand.STOP])
    assert _feed_all([b"\x1b[93;5u\x1b[93;5u"]) == (P, [M, C])


# What tmux sent on stdin a tenth of a second after Claude Code was continued (Ctrl-Z),
# between a person's Ctrl-] and `s`; and what a terminal says unasked.
REPLIES = [
    b"\x1bP>|tmux 3.3a\x1b\\",  # the terminal's name (XTVERSION)
    b"\x1b[?1;2c",  # device attributes
    b"\x1b[>0;95;0c",  # secondary device attributes
    b"\x1b[12;40R",  # the cursor's place
    b"\x1b[I",  # focus in, focus out (mode 1004)
    b"\x1b[O",
    b"\x1b[?997;1n",  # the theme changed (mode 2031)
    b"\x1b[?2004;1$y",  # a mode's state (DECRPM)
    b"\x1b[?1u",  # the kitty keyboard protocol's flags
    b"\x1b]11;rgb:0000/0000/0000\x1b\\",  # a colour, ended by ST or BEL
    b"\x1b]10;rgb:ffff/ffff/ffff\x07",
]


@pytest.mark.parametrize("reply", REPLIES)
def test_a_terminal_reply_between_prefix_and_command_key_goes_to_the_agent(reply: bytes) -> None:
    assert _feed_all([P, reply, b"s"]) == (reply, [M, KeyCommand.STOP])
    assert _feed_all([b"a" + P + reply + reply + b"pb"]) == (
        b"a" + reply + reply + b"b",
        [M, KeyCommand.TOGGLE],
    )


def test_after_ctrl_z_every_split_of_the_replies_keeps_the_escape_key() -> None:
    replies = b"".join(REPLIES)
    stream = P + replies + b"s"
    # A read that ends with a reply's ESC alone ends with the person's Esc key as far as
    # anyone can tell: it goes to the agent at once (see the next test).
    lone_esc = {len(P) + replies.index(reply) + 1 for reply in REPLIES}
    for cut in sorted(set(range(len(stream) + 1)) - lone_esc):
        assert _feed_all([stream[:cut], stream[cut:]]) == (replies, [M, KeyCommand.STOP]), cut


def test_keys_after_the_prefix_that_only_look_like_a_reply_cancel_it() -> None:
    # The person's Esc reaches the agent at once; a key with modifiers is a key.
    assert _feed_all([P, b"\x1b"]) == (P + b"\x1b", [M, C])
    assert _feed_all([P, b"\x1b[1;5A", b"s"]) == (P + b"\x1b[1;5As", [M, C])
    # A reply cut short and never finished is the person's typing after all.
    assert _feed_all([P, b"\x1b[?1;", b"x"]) == (P + b"\x1b[?1;x", [M, C])


def test_a_pending_prefix_survives_an_empty_read() -> None:
    keys = EscapeKeys(P)
    assert keys.feed(P).commands == (M,)
    assert keys.feed(b"").forward == b""
    assert keys.feed(b"r").commands == (KeyCommand.RESUME,)


@pytest.mark.parametrize(
    ("text", "byte"),
    [("ctrl-]", P), ("C-]", P), ("^]", P), ("Ctrl+G", b"\x07"), ("^g", b"\x07"), ("none", None)],
)
def test_parse_escape_key(text: str, byte: bytes | None) -> None:
    assert parse_escape_key(text) == byte


@pytest.mark.parametrize("text", ["x", "ctrl-c", "^[", "ctrl-m", "ctrl-ab", "alt-x", "^"])
def test_bad_escape_keys_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_escape_key(text)


def test_describe() -> None:
    assert describe(P) == "Ctrl-]"
    assert describe(b"\x07") == "Ctrl-G"


def test_escape_key_option_env_and_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    default = parse_args(["t"], {})
    assert isinstance(default, RunConfig) and default.escape_key == P
    by_option = parse_args(["t", "--escape-key", "^g"], {})
    assert isinstance(by_option, RunConfig) and by_option.escape_key == b"\x07"
    by_env = parse_args(["t"], {"PTYSUP_ESCAPE_KEY": "none"})
    assert isinstance(by_env, RunConfig) and by_env.escape_key is None
    (tmp_path / ".ptysup.yaml").write_text("escape-key: ctrl-b\n")
    by_file = parse_args(["t"], {})
    assert isinstance(by_file, RunConfig) and by_file.escape_key == b"\x02"


def test_a_bad_escape_key_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert parse_args(["t", "--escape-key", "ctrl-c"], {}) == 2
    err = capsys.readouterr().err
    assert err.startswith("ptysup: --escape-key:") and err.count("\n") == 1
