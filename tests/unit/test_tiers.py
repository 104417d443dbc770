"""The tiers hold (docs/development.md): a test of tests/unit starts no process and opens
no PTY unless it is marked `pty`, and tests/pty's tests are all marked."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]


def test_a_pure_test_that_starts_a_process_fails_saying_where_it_belongs() -> None:
    with pytest.raises(AssertionError, match=r"mark it pytest\.mark\.pty or move it to tests/pty"):
        subprocess.run(["true"], check=True)
    with pytest.raises(AssertionError, match=r"os\.openpty"):
        os.openpty()


@pytest.mark.pty
def test_a_test_marked_pty_may_start_one() -> None:
    assert subprocess.run(["true"], check=True).returncode == 0


def test_every_test_of_tests_pty_is_marked(request: pytest.FixtureRequest) -> None:
    items = request.session.items
    pty = [i for i in items if i.path.parent == TESTS / "pty"]
    assert all(i.get_closest_marker("pty") for i in pty)
    unit = [i for i in items if i.path.parent == TESTS / "unit"]
    assert not any(i.get_closest_marker("e2e") for i in unit)
