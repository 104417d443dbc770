"""What changed in the files between two snapshots, in words the supervisor reads. Pure:
git's output in, `Change`s out, and `Change`s in, a bounded list out."""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

MAX_LISTED = 15  # files named in one list; the rest are counted
MAX_PATH = 200  # characters of a path shown (a longer one is cut in the middle)


class Kind(enum.Enum):
    """How a file changed."""

    ADDED = "A"
    MODIFIED = "M"
    DELETED = "D"
    TYPE = "T"  # a file became a link, or the other way round


@dataclass(frozen=True)
class Change:
    """One file that differs: how, and by how many lines (None: binary, not counted)."""

    path: str
    kind: Kind
    added: int | None = None
    deleted: int | None = None


def parse(name_status: bytes, numstat: bytes) -> list[Change]:
    """`git diff-tree -r -z --no-renames` output, `--name-status` and `--numstat`, as
    Changes in git's order."""
    kinds: dict[str, Kind] = {}
    fields = name_status.split(b"\0")
    for code, raw in zip(fields[0::2], fields[1::2], strict=False):  # a trailing NUL
        if code:
            kinds[_text(raw)] = _kind(code.decode(errors="replace"))
    counts: dict[str, tuple[int | None, int | None]] = {}
    for record in numstat.split(b"\0"):
        parts = record.split(b"\t", 2)
        if len(parts) == 3:
            counts[_text(parts[2])] = (_count(parts[0]), _count(parts[1]))
    return [Change(path, kind, *counts.get(path, (None, None))) for path, kind in kinds.items()]


def _text(raw: bytes) -> str:
    # A name that is not UTF-8 keeps its bytes as surrogates, so it still names the file.
    return raw.decode("utf-8", errors="surrogateescape")


def _kind(code: str) -> Kind:
    try:
        return Kind(code[:1])
    except ValueError:
        return Kind.MODIFIED  # anything else git may say (U, X) is a change of the file


def _count(raw: bytes) -> int | None:
    return int(raw) if raw.isdigit() else None  # "-": a binary file


def render(
    changes: Sequence[Change],
    protected: Collection[str] = (),
    untracked: Collection[str] = (),
    limit: int = MAX_LISTED,
    is_test: Callable[[str], bool] = lambda _: False,
) -> list[str]:
    """One line per file (at most `limit`, then how many more): `M calc.py (+2 -1)`,
    protected files, test files (`is_test`: a new conftest.py changes how the tests run)
    and files git does not track said so. Protected files first: they are what the
    supervisor must not miss."""
    ordered = sorted(changes, key=lambda c: c.path not in protected)
    lines = [
        _line(c, c.path in protected, c.path in untracked, is_test(c.path)) for c in ordered[:limit]
    ]
    if len(ordered) > limit:
        lines.append(f"… and {len(ordered) - limit} more")
    return lines


def _line(change: Change, protected: bool, untracked: bool, test: bool) -> str:
    notes = []
    if change.kind is Kind.ADDED:
        notes.append("new, untracked" if untracked else "new")
    elif change.kind is Kind.DELETED:
        notes.append("deleted")
    if protected:
        notes.append("PROTECTED: it defines done")
    elif test:
        notes.append("a test file")
    stat = _stat(change)
    tail = f" [{', '.join(notes)}]" if notes else ""
    return f"{change.kind.value} {_shown(change.path)}{stat}{tail}"


def _stat(change: Change) -> str:
    if change.added is None or change.deleted is None:
        return " (binary)" if change.kind is not Kind.DELETED else ""
    parts = [f"+{change.added}"] * bool(change.added) + [f"-{change.deleted}"] * bool(
        change.deleted
    )
    return f" ({' '.join(parts)})" if parts else ""


def _shown(path: str) -> str:
    text = path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if len(text) <= MAX_PATH:
        return text
    half = (MAX_PATH - 1) // 2
    return text[:half] + "…" + text[-half:]


def totals(changes: Iterable[Change]) -> str:
    """`3 files (+20 -4)`: how many files and lines changed."""
    listed = list(changes)
    added = sum(c.added or 0 for c in listed)
    deleted = sum(c.deleted or 0 for c in listed)
    files = f"{len(listed)} file" + ("s" if len(listed) != 1 else "")
    return f"{files} (+{added} -{deleted})"
