"""Gemini CLI in the tests and the demo: its pinned release and a private, offline home
pointed at the fake model (`python -m ptysup.testing.kit gemini install|path|env`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from ptysup.agents.release import OfflineHome, Release, Setup, offline_env

RELEASE = Release("@google/gemini-cli", "0.61.0", "gemini", "gemini-cli")
TEST_API_KEY = "fake-gemini-key"

# Outer variables that would leak a real account or endpoint into the child, or point it at
# another settings file or home.
_STRIPPED_PREFIXES = ("GEMINI_", "GOOGLE_")


# The user settings of the private home: no auth dialog (the key comes from the env), no
# update check or usage statistics (no network). (`general.maxAttempts: 1` is no help:
# 0.61 then falls back to the same model and retries in a tight loop, observed.)
SETTINGS: Mapping[str, object] = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "privacy": {"usageStatisticsEnabled": False},
}


def write_config(home: Path) -> None:
    """Fill HOME (GEMINI_CLI_HOME) so Gemini CLI starts straight at its input box."""
    config = home / ".gemini"
    config.mkdir(parents=True, exist_ok=True)
    (config / "settings.json").write_text(json.dumps(SETTINGS, indent=2), encoding="utf-8")


def make_env(
    base_url: str,
    home: Path,
    gemini_bin: Path | None = None,
    base: Mapping[str, str] | None = None,
    api_key: str = TEST_API_KEY,
) -> dict[str, str]:
    """The environment for running gemini offline against BASE_URL."""
    variables = {
        "GOOGLE_GEMINI_BASE_URL": base_url,
        "GEMINI_API_KEY": api_key,
        "GEMINI_CLI_HOME": str(home),
    }
    return offline_env(base, _STRIPPED_PREFIXES, gemini_bin, variables)


def fill(
    home: Path, setup: Setup, base: Mapping[str, str] | None, binary: Path | None
) -> dict[str, str]:
    """Write the home (GEMINI_CLI_HOME) and give the environment that runs gemini there."""
    write_config(home)
    return make_env(setup.base_url, home, binary, base)


HOME = OfflineHome("Gemini CLI", _STRIPPED_PREFIXES, fill, "GEMINI_CLI_HOME")
