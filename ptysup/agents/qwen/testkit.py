"""Qwen Code in the tests and the demo: its pinned release and a private, offline home
pointed at the fake model (`python -m ptysup.testing.kit qwen install|path|env`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from ptysup.agents.release import OfflineHome, Release, Setup, offline_env

RELEASE = Release("@qwen-code/qwen-code", "0.24.4", "qwen", "qwen-code")
MODEL = "fake-model"
TEST_API_KEY = "sk-fake-qwen"

# Outer variables that would leak a real account or endpoint into the child (OPENAI_API_KEY,
# OPENAI_BASE_URL, DASHSCOPE_API_KEY), or point it at another home or settings file.
_STRIPPED_PREFIXES = ("OPENAI_", "QWEN_", "DASHSCOPE_")


# The user settings of the private home: the key comes from the environment (no auth
# dialog), the approval mode is asked for ("auto", the default, would have a classifier
# model judge each tool call), no follow-up suggestion pre-filled in the input box, none of
# the welcome-back, feedback or auto-mode notices, no update check or usage statistics, no
# background memory agents (model calls after every turn), and its own grep: npm installs
# the bundled ripgrep without its execute bit, and the fallback's notice fills the screen.
SETTINGS: Mapping[str, object] = {
    "security": {"auth": {"selectedType": "openai"}},
    "ui": {
        "autoModeAcknowledged": True,
        "enableFollowupSuggestions": False,
        "enableWelcomeBack": False,
        "enableUserFeedback": False,
    },
    "tools": {"approvalMode": "default", "useRipgrep": False},
    "memory": {
        "enableManagedAutoMemory": False,
        "enableManagedAutoDream": False,
        "enableAutoSkill": False,
    },
    "general": {"enableAutoUpdate": False},
    "privacy": {"usageStatisticsEnabled": False},
}


def write_config(home: Path) -> None:
    """Fill HOME so Qwen Code (its config in HOME/.qwen) starts straight at its input box."""
    config = home / ".qwen"
    config.mkdir(parents=True, exist_ok=True)
    (config / "settings.json").write_text(json.dumps(SETTINGS, indent=2), encoding="utf-8")


def make_env(
    base_url: str,
    home: Path,
    qwen_bin: Path | None = None,
    base: Mapping[str, str] | None = None,
    api_key: str = TEST_API_KEY,
) -> dict[str, str]:
    """The environment for running qwen offline against BASE_URL (its `/v1` added), with
    HOME and QWEN_HOME in the private home."""
    variables = {
        "OPENAI_BASE_URL": f"{base_url.rstrip('/')}/v1",
        "OPENAI_API_KEY": api_key,
        "OPENAI_MODEL": MODEL,
        "HOME": str(home),
        "QWEN_HOME": str(home / ".qwen"),
    }
    return offline_env(base, _STRIPPED_PREFIXES, qwen_bin, variables)


def fill(
    home: Path, setup: Setup, base: Mapping[str, str] | None, binary: Path | None
) -> dict[str, str]:
    """Write the home and give the environment that runs qwen there."""
    write_config(home)
    return make_env(setup.base_url, home, binary, base)


HOME = OfflineHome("Qwen Code", _STRIPPED_PREFIXES, fill, "HOME")
