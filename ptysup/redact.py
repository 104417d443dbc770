"""Hiding secrets (API keys, tokens, private keys) in what ptysup logs, prints and sends.

    redact = Redactor.with_extra(config.redact)   # ValueError for a bad user regex
    redact("key sk-ant-api03-…")                  # 'key [REDACTED:anthropic-key]'

Two combined regexes find the built-in kinds (bearer tokens in the second scan), and
text that holds none of their literal prefixes is ruled out by a few substring checks.
Markers already in the text are left whole, so redacting twice changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

MARKER = "[REDACTED:{kind}]"
CUSTOM = "custom"

# Each kind: its name (the regex group, with "_" for "-") and its pattern. Tokens are
# bounded on the left so that a prefix inside a longer word (`risk-…`, `ASIAN`) is no key.
_WORD = r"A-Za-z0-9_\-"
_KINDS: tuple[tuple[str, str], ...] = (
    (
        "private-key",
        # A truncated block (no END line) is hidden to the end: half a key is a secret.
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:.*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*)",
    ),
    ("anthropic-key", rf"(?<![{_WORD}])sk-ant-[{_WORD}]{{20,}}"),
    # Project, service-account and admin keys hold "-" and "_"; the legacy form is plain
    # alphanumerics (so `sk-spinner-fading-circle`, a CSS class, is no key).
    (
        "openai-key",
        rf"(?<![{_WORD}])sk-(?:(?:proj|svcacct|admin)-[{_WORD}]{{20,}}|[A-Za-z0-9]{{20,}})",
    ),
    (
        "github-token",
        rf"(?<![{_WORD}])(?:gh[pousr]_[A-Za-z0-9]{{30,}}|github_pat_[A-Za-z0-9_]{{20,}})",
    ),
    ("aws-access-key", r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
    # Only the value of an assignment or header is hidden: the name before it stays (a
    # `keep_` group), so the reader knows what was there.
    (
        "aws-secret",
        r"(?P<keep_aws>(?i:aws_secret_access_key)[\"']?\s*[:=]\s*[\"']?)[A-Za-z0-9/+=]{20,}",
    ),
)
# A bearer token can be anything, so it is looked for in a second pass, once the kinds
# above are hidden: in one pass, "Bearer aws_secret_access_key = …" took the name for the
# token and left the secret after it.
_BEARER = (
    (
        "bearer-token",
        # After `Authorization: Bearer` anything is the token. After a lone "bearer" it
        # must hold a digit or a symbol: "the bearer instrument-transferability" is prose.
        r"(?P<keep_auth>(?i:authorization:[ \t]*bearer)[ \t]+)[^\s\"']+"
        r"|(?P<keep_bearer>\b(?i:bearer)[ \t]+)(?=[A-Za-z\-]*[0-9._~+/=])[A-Za-z0-9._~+/=\-]{16,}",
    ),
)
_KEEP = ("keep_aws", "keep_auth", "keep_bearer")
_MARKERS = re.compile(r"\[REDACTED:[a-z0-9-]+\]")


def _group(kind: str) -> str:
    return kind.replace("-", "_")


def _combined(kinds: tuple[tuple[str, str], ...]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?P<{_group(k)}>{p})" for k, p in kinds), re.DOTALL)


# Each pass: its regex and the literals (lower case) that text must hold for it to run,
# so that most text is ruled out by a few substring checks.
_PASSES = (
    (
        _combined(_KINDS),
        (
            *("-----begin", "sk-", "github_pat_", "akia", "asia", "aws_secret"),
            *("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
        ),
    ),
    (_combined(_BEARER), ("bearer",)),
)
_KIND_OF = {_group(kind): kind for kind, _ in _KINDS + _BEARER}


class Redactor:
    """A str → str function that replaces secrets with `[REDACTED:<kind>]`."""

    def __init__(self, extra: Sequence[re.Pattern[str]] = ()) -> None:
        self._extra = tuple(extra)

    @classmethod
    def with_extra(cls, patterns: Sequence[str]) -> Redactor:
        """The built-in kinds plus the user's regexes (their matches become `custom`).

        Raises ValueError with a one-line message for a regex that does not compile.
        """
        compiled = []
        for pattern in patterns:
            try:
                compiled.append(re.compile(pattern))
            except re.error as exc:
                raise ValueError(f"invalid redaction regex {pattern!r}: {exc}") from None
        return cls(compiled)

    def __call__(self, text: str) -> str:
        """`text` with every secret replaced by its marker."""
        lowered = text.lower()
        for pattern, triggers in _PASSES:
            if any(t in lowered for t in triggers):
                text = _outside_markers(pattern, _builtin_marker, text)
        for pattern in self._extra:
            text = _outside_markers(pattern, _custom_marker, text)
        return text


def _outside_markers(
    pattern: re.Pattern[str], repl: Callable[[re.Match[str]], str], text: str
) -> str:
    """`pattern.sub(repl, text)`, leaving markers whole (a user's regex may match in one)."""
    if "[REDACTED:" not in text:
        return pattern.sub(repl, text)
    pieces = _MARKERS.split(text)
    out = [pattern.sub(repl, pieces[0])]
    for marker, piece in zip(_MARKERS.findall(text), pieces[1:], strict=True):
        out += [marker, pattern.sub(repl, piece)]
    return "".join(out)


def _builtin_marker(m: re.Match[str]) -> str:
    assert m.lastgroup is not None
    groups = m.groupdict()
    keep = next((groups[g] for g in _KEEP if groups.get(g)), "")
    return keep + MARKER.format(kind=_KIND_OF[m.lastgroup])


def _custom_marker(m: re.Match[str]) -> str:
    # An empty match (`x*`, `\b`) hides nothing; replacing it would litter the text.
    return MARKER.format(kind=CUSTOM) if m.group() else ""


def redact_strings(value: Any, redact: Callable[[str], str]) -> Any:
    """`value` (JSON-like: dicts, lists, strings, numbers) with every string redacted."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_strings(v, redact) for v in value]
    if isinstance(value, dict):
        return {k: redact_strings(v, redact) for k, v in value.items()}
    return value
