"""A run's private directory for agent files: 0700 all the way from the state directory
(Gemini CLI skips a settings file with a group- or world-writable parent), gone after."""

from __future__ import annotations

import stat
from pathlib import Path

from ptysup.agents.private import agents_dir, private_dir, remove_left


def test_it_lives_in_the_state_directory_with_no_writable_parent_and_goes_after(
    tmp_path: Path,
) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    with private_dir("run1", env) as path:
        assert path.parent == agents_dir(env) == tmp_path / "state" / "ptysup" / "agents"
        for d in (path, path.parent, path.parent.parent):
            mode = stat.S_IMODE(d.stat().st_mode)
            assert mode & 0o022 == 0, (d, oct(mode))
        assert stat.S_IMODE(path.stat().st_mode) == 0o700
        (path / "settings.json").write_text("{}")
    assert not path.exists()


def test_without_xdg_state_home_it_is_under_home(tmp_path: Path) -> None:
    assert agents_dir({"HOME": str(tmp_path)}) == tmp_path / ".local/state/ptysup/agents"


def test_a_killed_parts_directory_is_removed_by_the_next_part_only(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path)}
    left = agents_dir(env) / "run1-abc"
    other = agents_dir(env) / "run2-def"
    left.mkdir(parents=True)
    other.mkdir()
    assert remove_left("run1", env) == [str(left)]
    assert not left.exists() and other.exists()


def test_an_unwritable_state_directory_falls_back_to_a_temporary_one(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with private_dir("run1", {"XDG_STATE_HOME": str(blocker)}) as path:
        assert path.is_dir() and stat.S_IMODE(path.stat().st_mode) == 0o700
    assert not path.exists()
