from __future__ import annotations

import time

import pytest

from ptysup.redact import Redactor

# Shaped like real ones, made up (AWS's documented example key pair included).
ANTHROPIC = "sk-ant-api03-" + "aB3_dE6-gH9" * 8 + "-AAAAAAAA"
OPENAI_PROJECT = "sk-proj-" + "Zx9_Qw-3" * 20
OPENAI_LEGACY = "sk-" + "T3BlbkFJ" * 6
GITHUB_CLASSIC = "ghp_" + "a1B2c3D4e5" * 3 + "F6g7H8"
GITHUB_FINE = "github_pat_11ABCDEFG0" + "abcdEFGH1234" * 6
AWS_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACDp0wQVP1rZx3lt\n"
    "-----END OPENSSH PRIVATE KEY-----"
)

redact = Redactor()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"export KEY={ANTHROPIC}", "export KEY=[REDACTED:anthropic-key]"),
        (f"key: {OPENAI_PROJECT}\n", "key: [REDACTED:openai-key]\n"),
        (f'"{OPENAI_LEGACY}"', '"[REDACTED:openai-key]"'),
        (f"git clone https://{GITHUB_CLASSIC}@github.com/o/r", "git clone https://[REDACTED:github-token]@github.com/o/r"),
        (f"token={GITHUB_FINE}", "token=[REDACTED:github-token]"),
        ("gho_" + "x" * 36, "[REDACTED:github-token]"),
        (f"aws_access_key_id = {AWS_ID}", "aws_access_key_id = [REDACTED:aws-access-key]"),
        ("ASIAY34FZKBOKMUTVV7A,", "[REDACTED:aws-access-key],"),
        (f"aws_secret_access_key = {AWS_SECRET}", "aws_secret_access_key = [REDACTED:aws-secret]"),
        (f'AWS_SECRET_ACCESS_KEY="{AWS_SECRET}"', 'AWS_SECRET_ACCESS_KEY="[REDACTED:aws-secret]"'),
        (f"Aws_Secret_Access_Key:'{AWS_SECRET}'", "Aws_Secret_Access_Key:'[REDACTED:aws-secret]'"),
        (f"Authorization: Bearer {JWT}", "Authorization: Bearer [REDACTED:bearer-token]"),
        ("authorization: bearer abc", "authorization: bearer [REDACTED:bearer-token]"),
        (f"curl -H 'bearer {JWT}' x", "curl -H 'bearer [REDACTED:bearer-token]' x"),
        (f"before\n{PEM}\nafter", "before\n[REDACTED:private-key]\nafter"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow (cut here", "[REDACTED:private-key]"),
        (
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\nxx\n-----END PGP PRIVATE KEY BLOCK----- ok",
            "[REDACTED:private-key] ok",
        ),
    ],
)  # fmt: skip
def test_secrets_are_replaced_by_their_kind(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "def risk_assessment(task): return task.split('-')  # high, through, ghost",
        'class="sk-spinner-fading-circle-container"',
        "the bearer instrument-transferability clause; the bearer of bad news",
        "ASIAN and AKIAN markets; AKIA alone; AKIAIOSFODNN7EXAMPLEX is 21 characters",
        "ghp_short and gh_pr_1234567890 and github_pat_",
        "sk-ant-test is the fake model's key; sk-learn; disk-usage-report-for-2024",
        "-----BEGIN PUBLIC KEY-----\nMFkwEw\n-----END PUBLIC KEY-----",
        "aws_secret_access_key = ${AWS_SECRET}  # from the environment",
        "Authorization: Basic is not a bearer token",
        "[REDACTED:anthropic-key] stays as it is",
        "",
    ],
)
def test_ordinary_code_and_prose_are_left_alone(text: str) -> None:
    assert redact(text) == text


def test_extra_patterns_are_hidden_too() -> None:
    custom = Redactor.with_extra([r"corp-[0-9]{6}", r"(?i)password=\S+"])
    assert custom("id corp-123456, PASSWORD=hunter2 " + AWS_ID) == (
        "id [REDACTED:custom], [REDACTED:custom] [REDACTED:aws-access-key]"
    )


def test_an_extra_pattern_never_breaks_a_marker_or_matches_empty() -> None:
    custom = Redactor.with_extra(["RED", "x*", r"\b"])
    once = custom(f"RED {ANTHROPIC} xx")
    assert once == "[REDACTED:custom] [REDACTED:anthropic-key] [REDACTED:custom]"
    assert custom(once) == once


@pytest.mark.parametrize("pattern", ["(unclosed", "[z-a]", "*", "(?P<1>x)"])
def test_an_invalid_extra_pattern_is_a_one_line_value_error(pattern: str) -> None:
    with pytest.raises(ValueError, match="invalid redaction regex") as info:
        Redactor.with_extra(["fine", pattern])
    assert pattern in str(info.value)
    assert "\n" not in str(info.value)


def test_redacting_a_megabyte_is_fast() -> None:
    code = "def f(x):\n    return sorted(x, key=len)  # high through\n" * 20_000
    noisy = ("sk- gh bearer asia akia " * 50_000)[: 1 << 20]
    start = time.process_time()
    assert redact(code) == code
    assert redact(noisy) == noisy
    assert time.process_time() - start < 1.0


RULE = "─" * 40  # a full-width row, as Claude Code draws above and below its input box


def rows(text: str, indent: str = "", width: int = 40) -> str:
    """`text` broken at `width` columns, the rows after the first indented."""
    out = [text[:width]]
    rest = text[width:]
    while rest:
        out.append(indent + rest[: width - len(indent)])
        rest = rest[width - len(indent) :]
    return "\n".join(out)


BOX = f"│ {GITHUB_CLASSIC[:36]} │\n│ {(GITHUB_CLASSIC[36:] + ' done').ljust(36)} │"
TOKEN = "9" + "aZ-_.~+/" * 4  # 33 characters: a soft wrap puts it on a row of its own


@pytest.mark.parametrize(
    ("screen", "expected"),
    [
        # Claude Code breaks a long word at the width and indents the rest by two.
        (
            rows(f"● key: {ANTHROPIC} ok", "  ") + f"\n{RULE}",
            f"● key: [REDACTED:anthropic-key] ok\n{RULE}",
        ),
        # A terminal wraps a program's line at the last column, a box's row at its border.
        (rows(f"x={OPENAI_LEGACY}") + f"\n{RULE}", f"x=[REDACTED:openai-key]\n{RULE}"),
        (BOX, f"│ [REDACTED:github-token]{' done'.ljust(32)} │"),
        # The token of a header that the wrap split from its name, or put on the next row.
        (rows(f"Authorization: Bearer {JWT}"), "Authorization: Bearer [REDACTED:bearer-token]"),
        (
            f"{RULE}\nAuthorization: Bearer\n  {TOKEN}",
            f"{RULE}\nAuthorization: Bearer\n  [REDACTED:bearer-token]",
        ),
        # A word that ends the row above does not hide where the key starts.
        (f"{'word ' * 7}ends\n" + rows(ANTHROPIC), f"{'word ' * 7}ends\n[REDACTED:anthropic-key]"),
        # A line short of the width goes on nowhere: the next line is its own.
        (
            f"k {ANTHROPIC[:30]}\nnext line\n{RULE}",
            f"k [REDACTED:anthropic-key]\nnext line\n{RULE}",
        ),
    ],
)
def test_a_secret_that_a_line_wrap_split_is_hidden_whole(screen: str, expected: str) -> None:
    assert redact(screen) == expected
    assert redact(expected) == expected


# Emoji as Claude Code draws them: ⚠️ (a one-column character and U+FE0F) and 👨‍👩‍👧
# (three emoji joined by U+200D) take two columns each; the widest row is the terminal's.
EMOJI_ROW = "● ⚠️ careful 👨\u200d👩\u200d👧 " + "x" * 24  # 40 columns


def test_a_row_with_emoji_is_as_wide_as_its_columns() -> None:
    screen = f"{EMOJI_ROW}\n" + rows(f"key {ANTHROPIC}", "  ") + "\n"
    assert redact(screen) == f"{EMOJI_ROW}\nkey [REDACTED:anthropic-key]\n"
