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
