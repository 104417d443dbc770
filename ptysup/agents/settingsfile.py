"""A settings file ptysup writes for one run on top of the one the person already uses
(Gemini CLI's and Qwen Code's system settings): their settings kept, ptysup's switches
winning, hook lists joined so that the person's own hooks still run."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def write(path: Path, ours: Mapping[str, Any], base: Path | None = None) -> Path:
    """Write OURS merged over the JSON object in BASE (if any) to PATH, readable by the
    person only; PATH."""
    data = merged(read_object(base), ours)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(data, out, indent=2)
    return path


def merged(theirs: Mapping[str, Any], ours: Mapping[str, Any]) -> dict[str, Any]:
    """OURS over THEIRS: nested settings merged key by key, lists (hook lists) joined."""
    out = dict(theirs)
    for key, value in ours.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merged(out[key], value)
        elif isinstance(value, list) and isinstance(out.get(key), list):
            out[key] = [*out[key], *value]
        else:
            out[key] = value
    return out


def read_object(path: Path | None) -> Mapping[str, Any]:
    """The JSON object in PATH; nothing when there is none or it is no JSON object (the
    agent would not have read it either)."""
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
