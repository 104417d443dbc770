"""The pure tier: a test here starts no process and opens no PTY, unless it is marked
`pty` (then it is the PTY tier's, which tests/pty holds whole: docs/development.md)."""

from __future__ import annotations

import os
import pty
import subprocess
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

# Each way a test could start a process or open a PTY.
STARTS: tuple[tuple[ModuleType, str], ...] = (
    (subprocess, "_fork_exec"),  # what subprocess starts every child with on POSIX
    (os, "fork"),
    (os, "forkpty"),
    (os, "openpty"),
    (os, "posix_spawn"),
    (os, "posix_spawnp"),
    (pty, "fork"),
)


@pytest.fixture(autouse=True)
def no_process(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail a test of the pure tier that starts a process or opens a PTY."""
    if request.node.get_closest_marker("pty") is None:
        for module, name in STARTS:
            monkeypatch.setattr(module, name, _refused(f"{module.__name__}.{name}"))
    yield


def _refused(what: str) -> Any:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(
            f"{what}: a test of tests/unit starts no process; mark it pytest.mark.pty or "
            "move it to tests/pty"
        )

    return refuse
