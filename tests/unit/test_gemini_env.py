"""The private Gemini CLI environment, the pinned-binary lookup and its command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ptysup.testing import gemini_env
from ptysup.testing.pins import GEMINI


def test_env_replaces_outer_gemini_and_google_variables(tmp_path: Path) -> None:
    outer = {
        "PATH": "/usr/bin",
        "HOME": "/home/x",
        "GEMINI_API_KEY": "real",
        "GOOGLE_CLOUD_PROJECT": "prod",
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH": "/etc/gemini.json",
    }
    binary = tmp_path / "bin" / "gemini"
    env = gemini_env.make_env("http://127.0.0.1:9", tmp_path, binary, base=outer)
    assert env == {
        "PATH": f"{tmp_path / 'bin'}:/usr/bin",
        "HOME": "/home/x",
        "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9",
        "GEMINI_API_KEY": gemini_env.TEST_API_KEY,
        "GEMINI_CLI_HOME": str(tmp_path),
    }


def test_the_private_home_skips_the_auth_dialog_and_updates(tmp_path: Path) -> None:
    with gemini_env.gemini_env("http://127.0.0.1:9", tmp_path / "gemini") as ge:
        settings = json.loads((ge.home / ".gemini" / "settings.json").read_text())
        assert ge.env["GEMINI_CLI_HOME"] == str(ge.home)
        assert ge.argv("-p", "") == [str(tmp_path / "gemini"), "-p", ""]
    assert not ge.home.exists()
    assert settings["security"] == {"auth": {"selectedType": "gemini-api-key"}}
    assert settings["general"] == {"enableAutoUpdate": False, "enableAutoUpdateNotification": False}
    assert settings["privacy"] == {"usageStatisticsEnabled": False}


def test_the_installed_version_is_read_from_its_package_json(tmp_path: Path) -> None:
    assert GEMINI.installed_version(tmp_path) is None
    package = tmp_path / "node_modules" / "@google" / "gemini-cli"
    package.mkdir(parents=True)
    (package / "package.json").write_text(json.dumps({"version": GEMINI.version}))
    assert GEMINI.installed_version(tmp_path) == gemini_env.GEMINI_CLI_VERSION == "0.61.0"


def test_path_prefers_the_configured_binary_and_says_when_there_is_none(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PTYSUP_GEMINI_BIN", "/opt/gemini")
    assert gemini_env.find_gemini() == Path("/opt/gemini")
    assert gemini_env.main(["path"]) == 1  # named, but not there
    err = capsys.readouterr().err
    assert err == (
        "ptysup: Gemini CLI not found; run `python -m ptysup.testing.gemini_env install`\n"
    )


def test_env_without_a_url_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert gemini_env.main(["env"]) == 2
    assert capsys.readouterr().err.startswith("ptysup: env needs --url")
