"""Whether an agent saved a conversation it can reopen, read from the agent's own files.

An agent starts its conversation's file before the first message is in it (Claude Code
writes its metadata first, Gemini CLI its header, Qwen Code and Codex nothing until the
prompt is sent). A run killed in that second has nothing to reopen, and reopening it ends
the agent at once ("No conversation found", "No saved session found"), on every resume.
So a conversation counts as saved only once a message of it is on disk.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ptysup.userfile import open_regular


def home(env: Mapping[str, str], variable: str, default: str) -> Path:
    """The agent's folder: `variable` if set, else `default` under the person's home."""
    given = env.get(variable)
    if given:
        return Path(given)
    return Path(env.get("HOME") or "~").expanduser() / default


def records(text: str) -> Iterator[dict[str, Any]]:
    """The JSON objects among TEXT's lines (an agent's JSONL file), in order: a line that
    is no JSON object (cut by a kill, or too deep for Python) is skipped."""
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(record, dict):
            yield record


def holds_message(files: Iterable[Path], kinds: frozenset[str]) -> bool:
    """Whether one of `files` (JSONL) has a line whose `type` is one of `kinds`; each is
    read only up to the first such line."""
    return any(_holds(path, kinds) for path in files)


def _holds(path: Path, kinds: frozenset[str]) -> bool:
    try:
        with os.fdopen(open_regular(path), "rb") as lines:  # a FIFO there would block
            return any(_kind(line) in kinds for line in lines)
    except OSError:
        return False


def _kind(line: bytes) -> Any:
    try:
        entry = json.loads(line)
    except (ValueError, RecursionError):  # a line cut by the kill, or no JSON ptysup can read
        return None
    return entry.get("type") if isinstance(entry, dict) else None


def header(path: Path) -> Mapping[str, Any]:
    """A JSONL file's first line, when it is an object (else empty)."""
    try:
        with os.fdopen(open_regular(path), "rb") as lines:
            entry = json.loads(lines.readline())
    except (OSError, ValueError, RecursionError):
        return {}
    return entry if isinstance(entry, dict) else {}
