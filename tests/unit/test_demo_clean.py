"""`scripts/demo.sh --clean` removes the sample projects demos left behind, nothing else;
`--help` explains the demo and creates nothing."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from ptysup.testing.demo import PREFIX, clean, main


def test_clean_removes_only_demo_folders(tmp_path: Path) -> None:
    (tmp_path / f"{PREFIX}abc" / ".ptysup").mkdir(parents=True)
    (tmp_path / "other").mkdir()
    assert clean(tmp_path) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["other"]


@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_help_explains_the_demo_and_creates_no_sample_project(
    flag: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where a sample project would go
    assert main(["--no-recording", flag]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Usage: scripts/demo.sh") and "--clean" in out
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_demo_agent_is_refused_before_anything_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert main(["--agent", "nosuch", "--max-iter", "3"]) == 2
    assert (
        "unknown agent 'nosuch': the demo runs claude, codex, aider, gemini, qwen or opencode"
        in capsys.readouterr().err
    )
    assert list(tmp_path.iterdir()) == []


def test_clean_leaves_other_users_demo_folders_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The temp dir is shared: as root, rmtree would remove anybody's demo.
    if os.geteuid() != 0:
        pytest.skip("needs root to give a folder to another user")
    theirs = tmp_path / f"{PREFIX}theirs"
    theirs.mkdir()
    os.chown(theirs, os.getuid() + 4242, os.getgid())
    mine = tmp_path / f"{PREFIX}mine"
    mine.mkdir()
    assert clean(tmp_path) == 0
    assert [p.name for p in tmp_path.iterdir()] == [theirs.name]
    err = capsys.readouterr().err
    assert "left 1 demo folder(s) of other users alone" in err
    assert err.endswith(f"removed 1 demo folder(s) from {tmp_path}\n")
