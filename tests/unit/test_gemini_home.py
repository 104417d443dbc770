"""Where Gemini CLI reads ptysup's settings: its system settings file only where root owns
it and every folder above it, else a home of the run's own (issue 30: Gemini CLI skipped
the file under /tmp, and skips it for every user but root)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

from ptysup.agents.gemini import home, settings
from ptysup.agents.gemini.profile import GeminiProfile
from ptysup.cli.doctor import run_checks
from ptysup.config import RunConfig


def test_a_system_settings_file_is_read_only_where_root_owns_every_folder_above() -> None:
    # As Gemini CLI 0.61 checks it (isFileAndDirectorySecureSync): root owns each folder
    # and the file, and no group or other user may write to any of them.
    assert home.skipped_because(Path("/etc/ptysup/s.json"), uid=1000) == (
        "only a file root owns is read, and this user is not root"
    )
    under_tmp = Path(tempfile.mkdtemp(dir="/tmp"))  # 0700, in world-writable /tmp
    try:
        found = home.skipped_because(under_tmp / "s.json", uid=0)
        assert found == "/tmp is group- or world-writable"
    finally:
        under_tmp.rmdir()
    if os.geteuid() == 0 and Path("/etc").stat().st_uid == 0:
        assert home.skipped_because(Path("/etc/ptysup/s.json")) is None


def _person(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    person = tmp_path / "person" / ".gemini"
    (person / "policies").mkdir(parents=True)
    (person / "oauth_creds.json").write_text("{}")
    mine = {"type": "command", "name": "mine", "command": "true"}
    theirs = {"ui": {"theme": "dark"}, "hooks": {"AfterAgent": [{"hooks": [mine]}]}}
    (person / "settings.json").write_text(json.dumps(theirs))
    return person, {"GEMINI_CLI_HOME": str(person.parent), "PATH": "/bin"}


def test_a_home_of_the_runs_own_links_the_persons_folder_and_merges_its_settings(
    tmp_path: Path,
) -> None:
    person, env = _person(tmp_path)
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    made = home.make(private, env, settings.settings("ptysup-hook"))
    gemini = made / ".gemini"
    assert (gemini / "oauth_creds.json").readlink() == person / "oauth_creds.json"
    # Sessions and history go on in the person's folder (a resume finds them there).
    assert (gemini / "tmp").readlink() == person / "tmp" and (person / "tmp").is_dir()
    assert (gemini / "history").readlink() == person / "history"
    merged = json.loads((gemini / "settings.json").read_text())
    assert merged["ui"] == {"theme": "dark"}  # the person's settings kept
    assert merged["security"]["folderTrust"] == {"enabled": False}
    commands = [h["command"] for g in merged["hooks"]["AfterAgent"] for h in g["hooks"]]
    assert commands == ["true", "ptysup-hook"]  # the person's hook still runs, first
    assert json.loads((person / "settings.json").read_text())["ui"] == {"theme": "dark"}


@pytest.mark.parametrize("secure", [True, False])
def test_the_agent_gets_the_system_file_where_it_is_read_else_the_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, secure: bool
) -> None:
    _, env = _person(tmp_path)
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    monkeypatch.setattr(home, "skipped_because", lambda path: None if secure else "a reason")
    launch = GeminiProfile().launch(["gemini"], env, None, private)
    if secure:
        assert launch.env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"].startswith(str(private))
        assert launch.env["GEMINI_CLI_HOME"] == env["GEMINI_CLI_HOME"]
    else:
        assert "GEMINI_CLI_SYSTEM_SETTINGS_PATH" not in launch.env
        assert launch.env["GEMINI_CLI_HOME"] == str(private / "gemini-home")


def test_doctor_says_where_gemini_cli_reads_ptysups_settings(tmp_path: Path) -> None:
    config = RunConfig(task="t", agent_cmd=("gemini",))
    env = {"PATH": "", "XDG_STATE_HOME": str(tmp_path), "HOME": str(tmp_path)}
    (check,) = [c for c in run_checks(config, env, tmp_path) if c.name == "hooks"]
    assert check.ok
    assert "a home of the run's own" in check.detail
    assert "Gemini CLI would skip a system settings file here" in check.detail
    claude = RunConfig(task="t", agent_cmd=("claude",))
    assert not [c for c in run_checks(claude, env, tmp_path) if c.name == "hooks"]
