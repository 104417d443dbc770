"""The private Claude Code environment and the pinned-binary lookup."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ptysup.testing import claude_env
from ptysup.testing.claude_env import CLAUDE_CODE_VERSION, TOOLS_DIR


def test_env_replaces_outer_claude_and_anthropic_variables(tmp_path: Path) -> None:
    outer = {
        "PATH": "/usr/bin",
        "HOME": "/home/x",
        "ANTHROPIC_AUTH_TOKEN": "real",
        "ANTHROPIC_MODEL": "opus",
        "CLAUDECODE": "1",
        "CLAUDE_CODE_USE_BEDROCK": "1",
    }
    binary = tmp_path / "bin" / "claude"

    env = claude_env.make_env("http://127.0.0.1:9", tmp_path, binary, base=outer)

    assert env == {
        "PATH": f"{tmp_path / 'bin'}:/usr/bin",
        "HOME": "/home/x",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "CLAUDE_CONFIG_DIR": str(tmp_path),
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }


def test_config_dir_skips_first_run_screens(tmp_path: Path) -> None:
    project = tmp_path / "project"
    with claude_env.claude_env("http://127.0.0.1:9", [project], tmp_path / "claude") as ce:
        config = json.loads((ce.home / ".claude.json").read_text())
        settings = json.loads((ce.home / "settings.json").read_text())
        assert ce.env["CLAUDE_CONFIG_DIR"] == str(ce.home)
        assert ce.argv("-p") == [str(tmp_path / "claude"), "-p"]
    assert not ce.home.exists()
    assert config["hasCompletedOnboarding"] is True and config["theme"] == "dark"
    assert config["customApiKeyResponses"]["approved"] == ["sk-ant-test"]
    assert config["projects"] == {str(project.resolve()): {"hasTrustDialogAccepted": True}}
    assert settings == {"disableDeepLinkRegistration": "disable"}


def test_find_claude_prefers_the_configured_binary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PTYSUP_CLAUDE_BIN", "/opt/claude")
    assert claude_env.find_claude() == Path("/opt/claude")
    monkeypatch.delenv("PTYSUP_CLAUDE_BIN")
    found = claude_env.find_claude()
    if claude_env.local_bin().exists():
        assert found == claude_env.local_bin()


def test_pinned_version_is_read_from_package_json(tmp_path: Path) -> None:
    package = tmp_path / "node_modules" / "@anthropic-ai" / "claude-code"
    package.mkdir(parents=True)
    assert claude_env.installed_version(tmp_path) is None
    (package / "package.json").write_text(json.dumps({"version": CLAUDE_CODE_VERSION}))
    assert claude_env.installed_version(tmp_path) == CLAUDE_CODE_VERSION
    assert TOOLS_DIR.name == "claude-code" and TOOLS_DIR.parent.name == ".tools"


def test_path_command_exits_1_without_claude(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(claude_env, "find_claude", lambda: None)
    assert claude_env.main(["path"]) == 1
    assert "ptysup:" in capsys.readouterr().err
