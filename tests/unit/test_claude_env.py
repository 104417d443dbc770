"""The private Claude Code config dir: what its first start finds there."""

from __future__ import annotations

import json
from pathlib import Path

from ptysup.testing.kit import agent_env


def test_config_dir_skips_first_run_screens(tmp_path: Path) -> None:
    project = tmp_path / "project"
    with agent_env("claude", "http://127.0.0.1:9", [project], tmp_path / "claude") as ce:
        config = json.loads((ce.home / ".claude.json").read_text())
        settings = json.loads((ce.home / "settings.json").read_text())
        assert ce.env["CLAUDE_CONFIG_DIR"] == str(ce.home)
        assert ce.argv("-p") == [str(tmp_path / "claude"), "-p"]
    assert not ce.home.exists()
    assert config["hasCompletedOnboarding"] is True and config["theme"] == "dark"
    assert config["customApiKeyResponses"]["approved"] == ["sk-ant-test"]
    assert config["projects"] == {str(project.resolve()): {"hasTrustDialogAccepted": True}}
    assert settings == {
        "disableDeepLinkRegistration": "disable",
        "permissions": {"disableAutoMode": "disable"},  # 2.1.332's own default is "auto"
    }
