"""The private Gemini CLI home: what its first start finds there."""

from __future__ import annotations

import json
from pathlib import Path

from ptysup.testing.kit import agent_env


def test_the_private_home_skips_the_auth_dialog_and_updates(tmp_path: Path) -> None:
    with agent_env("gemini", "http://127.0.0.1:9", binary=tmp_path / "gemini") as ge:
        settings = json.loads((ge.home / ".gemini" / "settings.json").read_text())
        assert ge.env["GEMINI_CLI_HOME"] == str(ge.home)
        assert ge.argv("-p", "") == [str(tmp_path / "gemini"), "-p", ""]
    assert not ge.home.exists()
    assert settings["security"] == {"auth": {"selectedType": "gemini-api-key"}}
    assert settings["general"] == {"enableAutoUpdate": False, "enableAutoUpdateNotification": False}
    assert settings["privacy"] == {"usageStatisticsEnabled": False}
