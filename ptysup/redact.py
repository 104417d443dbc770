"""Hiding secrets (API keys, tokens, private keys) in what ptysup logs, prints and sends.

    redact = Redactor.with_extra(config.redact)   # ValueError for a bad user regex
    redact("key sk-ant-api03-…")                  # 'key [REDACTED:anthropic-key]'

Two combined regexes find the built-in kinds (bearer tokens in the second scan), and
text that holds none of their literal prefixes is ruled out by a few substring checks.
Markers already in the text are left whole, so redacting twice changes nothing.

Text of several lines is also read as a terminal shows it: a line that fills the width
may go on at the start of the next (Claude Code breaks a long key over several rows), so
a secret is looked for in the lines joined there too (see `_Rows`), and one that spans
rows is hidden whole, the line break with it. The width is the widest line's, which a
marker can shorten: redacting such text again may hide a little more, never less.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

from ptysup.textwidth import columns

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


class _Hidden(NamedTuple):
    """A secret in a text: where (end excluded) and of what kind."""

    start: int
    end: int
    kind: str


_Pass = tuple[re.Pattern[str], tuple[str, ...] | None]  # (regex, its trigger literals)


class Redactor:
    """A str → str function that replaces secrets with `[REDACTED:<kind>]`."""

    def __init__(self, extra: Sequence[re.Pattern[str]] = ()) -> None:
        self._passes: tuple[_Pass, ...] = (
            *_PASSES,
            *((pattern, None) for pattern in extra),
        )

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
        """`text` with every secret replaced by its marker, in its lines as written and
        in its lines joined where a terminal may have wrapped them."""
        hidden = self._hidden(text)
        if "\n" in text:
            for view in _Rows(text).views():
                hidden += map(view.original, self._hidden(view.text))
        return _replace(text, _merged(hidden))

    def _hidden(self, text: str) -> list[_Hidden]:
        """Every secret in `text`, as the passes find them one after the other: each
        pass looks only between markers (those in the text and those of earlier passes)."""
        lowered = text.lower()
        free = _between_markers(text)
        hidden: list[_Hidden] = []
        for pattern, triggers in self._passes:
            if triggers is not None and not any(t in lowered for t in triggers):
                continue
            left: list[tuple[int, int]] = []
            for start, end in free:
                found = list(_matches(pattern, text[start:end], start, triggers is not None))
                edges = [start, *(x for h in found for x in (h.start, h.end)), end]
                left += zip(edges[::2], edges[1::2], strict=True)
                hidden += found
            free = left
        return hidden


def _between_markers(text: str) -> list[tuple[int, int]]:
    """The stretches of `text` outside markers (a user's regex may match in one)."""
    edges = [0, *(x for m in _MARKERS.finditer(text) for x in m.span()), len(text)]
    return list(zip(edges[::2], edges[1::2], strict=True))


def _matches(pattern: re.Pattern[str], piece: str, offset: int, builtin: bool) -> Iterator[_Hidden]:
    """What `pattern` hides in `piece` (which starts at `offset`): the kept name before a
    value stays, an empty match of a user's regex (`x*`, `\\b`) hides nothing."""
    for m in pattern.finditer(piece):
        if builtin:
            assert m.lastgroup is not None
            groups = m.groupdict()
            keep = next((len(groups[g]) for g in _KEEP if groups.get(g)), 0)
            yield _Hidden(offset + m.start() + keep, offset + m.end(), _KIND_OF[m.lastgroup])
        elif m.end() > m.start():
            yield _Hidden(offset + m.start(), offset + m.end(), CUSTOM)


def _merged(hidden: list[_Hidden]) -> list[_Hidden]:
    """Overlapping secrets as one (of the kind of the first), in order."""
    out: list[_Hidden] = []
    for h in sorted(hidden):
        if out and h.start < out[-1].end:
            out[-1] = out[-1]._replace(end=max(out[-1].end, h.end))
        else:
            out.append(h)
    return out


def _replace(text: str, hidden: list[_Hidden]) -> str:
    """`text` with each hidden stretch (in order, apart) replaced by its marker."""
    out, at = [], 0
    for h in hidden:
        out += [text[at : h.start], MARKER.format(kind=h.kind)]
        at = h.end
    out.append(text[at:])
    return "".join(out)


# What frames a terminal row's text: blanks, box drawing and block elements, and Claude
# Code's `⎿` before a tool's output.
_FRAME_CHARS = frozenset([*map(chr, range(0x2500, 0x25A0)), "\u23bf"])
# A row whose text ends this close to the widest row filled it (a box's border and its
# padding come after the text).
_SLACK = 3
# Built-in secrets start with one of these: a row that does is read as a new start too,
# so a word at the end of the row above does not hide the secret's beginning.
_TOKEN = re.compile(r"[A-Za-z0-9_\-./+=~]+")  # the characters of a secret (and a name)
_STARTS = ("sk-", "gh", "github_pat_", "akia", "asia", "-----begin", "aws_secret", "bearer")


class _View(NamedTuple):
    """A text with some stretches replaced (by a space or nothing)."""

    text: str
    pieces: list[tuple[int, int]]  # the original's stretches that are kept
    starts: list[int]  # where each of them starts in `text`

    def original(self, h: _Hidden) -> _Hidden:
        """Where a secret found in the view is in the original (the replaced stretches it
        spans with it)."""
        return h._replace(start=self._at(h.start), end=self._at(h.end - 1) + 1)

    def _at(self, at: int) -> int:
        n = bisect.bisect_right(self.starts, at) - 1
        start, end = self.pieces[n]
        return min(start + at - self.starts[n], end)  # in a separator: where it was cut


class _Join(NamedTuple):
    """Where a row may go on in the next: the break with the frame and indent around it."""

    cut_from: int
    cut_to: int
    full: bool  # the row filled the width: a word may go on (else the next word did not fit)
    fresh: bool  # the next row starts like a secret


class _Rows:
    """A text's lines as a terminal shows them: where a line may go on in the next, and
    the views of the text joined there."""

    def __init__(self, text: str) -> None:
        self._text = text
        rows, at = [], 0
        for line in text.split("\n"):
            rows.append((at, at + len(line)))
            at += len(line) + 1
        body = [_body(text, a, b) for a, b in rows]
        width = max(columns(text[a:b].rstrip()) for a, b in rows) - _SLACK
        self._joins: list[_Join] = []
        for (a, _), left, right in zip(rows, body, body[1:], strict=False):
            if left[1] == left[0] or right[1] == right[0]:
                continue  # a blank row (or one of frame alone) ends a line
            end = columns(text[a : left[1]])
            head = text[right[0] : right[1]]
            word = _TOKEN.match(head)  # the first word of the next row, as a secret has it
            if end >= width or end + 1 + (word.end() if word else 0) > width:
                fresh = head[:11].lower().startswith(_STARTS)
                self._joins.append(_Join(left[1], right[0], end >= width, fresh))

    def views(self) -> Iterator[_View]:
        """The text joined where a line may go on: full rows as one word (a key broken
        over rows), then as words (`Bearer` at the end of a row, its token on the next),
        then as one word but for a row that starts like a secret (a word at the end of
        the row above would hide the secret's start). None if no line goes on."""
        if not self._joins:
            return
        yield self._view(self._joins, "")
        yield self._view(self._joins, " ")
        if any(j.full and j.fresh for j in self._joins):
            yield self._view([j for j in self._joins if not (j.full and j.fresh)], "")

    def _view(self, joins: list[_Join], glue: str) -> _View:
        """The text with each join cut out: `glue` where a full row went on, a space
        where the next word did not fit."""
        edges = [0, *(x for j in joins for x in (j.cut_from, j.cut_to)), len(self._text)]
        pieces = list(zip(edges[::2], edges[1::2], strict=True))
        seps = [glue if j.full else " " for j in joins] + [""]
        starts, length = [], 0
        for (a, b), sep in zip(pieces, seps, strict=True):
            starts.append(length)
            length += b - a + len(sep)
        text = "".join(self._text[a:b] + sep for (a, b), sep in zip(pieces, seps, strict=True))
        return _View(text, pieces, starts)


def _body(text: str, start: int, end: int) -> tuple[int, int]:
    """The row's text within its frame (an empty span for a row of frame alone)."""
    while start < end and (text[start].isspace() or text[start] in _FRAME_CHARS):
        start += 1
    while end > start and (text[end - 1].isspace() or text[end - 1] in _FRAME_CHARS):
        end -= 1
    return start, end


def redact_strings(value: Any, redact: Callable[[str], str]) -> Any:
    """`value` (JSON-like: dicts, lists, strings, numbers) with every string redacted."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_strings(v, redact) for v in value]
    if isinstance(value, dict):
        return {k: redact_strings(v, redact) for k, v in value.items()}
    return value
