"""Output paths and runs in a folder the user cannot enter: one `ptysup:` line, never a
traceback; checked before the agent starts. Run as another local user (root passes
permission bits)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.otheruser import OtherUser, other_user


@pytest.fixture
def user(tmp_path: Path) -> OtherUser:
    return other_user(tmp_path)


@pytest.fixture
def locked(tmp_path: Path) -> Path:
    """A folder only root may enter."""
    path = tmp_path / "locked"
    path.mkdir(mode=0o700)
    return path


def _one_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("ptysup: ")
    return lines[0]


@pytest.mark.parametrize("option", ["--log-file", "--record", "--summary-json"])
def test_run_output_in_a_folder_the_user_cannot_enter(
    user: OtherUser, locked: Path, option: str
) -> None:
    # The agent would leave a file behind if it started: it must not.
    marker = user.home / "agent-started"
    result = user.ptysup(
        [
            option,
            str(locked / "out"),
            "--agent-cmd",
            f"touch {marker}",
            "--supervisor-cmd",
            "true",
            "a task",
        ]
    )
    line = _one_line(result.stderr)
    assert result.returncode == 2
    assert option in line and "Permission denied" in line
    assert not marker.exists()


@pytest.mark.parametrize("subcommand", ["replay", "resume"])
def test_run_in_a_folder_the_user_cannot_enter(
    user: OtherUser, locked: Path, subcommand: str
) -> None:
    result = user.ptysup([subcommand, str(locked / "events.jsonl")])
    line = _one_line(result.stderr)
    assert result.returncode == 2
    assert "Permission denied" in line


def test_doctor_reports_a_log_file_it_cannot_write(user: OtherUser, locked: Path) -> None:
    result = user.ptysup(["doctor", "--log-file", str(locked / "x.jsonl")])
    assert "Traceback" not in result.stderr
    assert result.returncode == 1  # doctor's "something to fix"
    assert f"FIX  --log-file writable: {locked / 'x.jsonl'}: Permission denied" in result.stdout


def test_output_under_a_regular_file(user: OtherUser) -> None:
    plain = user.home / "plain"
    plain.write_text("x")
    result = user.ptysup(["--log-file", str(plain / "log.jsonl"), "--agent-cmd", "true", "t"])
    line = _one_line(result.stderr)
    assert result.returncode == 2 and "Not a directory" in line


def test_a_run_in_a_folder_the_user_cannot_write_names_the_event_log_not_an_option(
    user: OtherUser, tmp_path: Path
) -> None:
    # No --log-file given: the line must not send the person looking for one.
    project = tmp_path / "roots-project"
    project.mkdir(mode=0o755)
    marker = user.home / "agent-started"
    result = subprocess.run(
        user.argv(sys.executable, "-m", "ptysup", "--agent-cmd", f"touch {marker}", "a task"),
        cwd=project,
        env={"PATH": os.environ.get("PATH", os.defpath), "HOME": str(user.home)},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    line = _one_line(result.stderr)
    assert result.returncode == 2 and not marker.exists()
    events = project / ".ptysup" / "runs"
    assert line.startswith(f"ptysup: cannot write the event log {events}/"), line
    assert line.endswith("/events.jsonl: Permission denied")
