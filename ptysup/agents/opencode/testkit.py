"""opencode in the tests and the demo: its pinned release and a private, offline home
pointed at the fake model (`python -m ptysup.testing.kit opencode install|path|env`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from ptysup.agents.release import OfflineHome, Release, Setup, offline_env

RELEASE = Release("opencode-ai", "1.18.33", "opencode", "opencode")
PROVIDER = "fake"
MODEL = "fake-model"
TEST_API_KEY = "sk-fake-opencode"
# Names the private home in the environment, so the tests find what a run left running
# (opencode itself ignores it).
HOME_MARKER = "OPENCODE_PTYSUP_TEST_HOME"  # not PTYSUP_: ptysup warns of those it does not know

# Outer variables that would point the child at another config, data dir or account.
_STRIPPED_PREFIXES = ("OPENCODE_", "XDG_")


def config(base_url: str, approvals: bool = True) -> dict[str, object]:
    """The global opencode.json: the fake model as an OpenAI-compatible provider (built
    in, nothing is downloaded), the same model for titles, no update or sharing, and with
    APPROVALS, approvals asked for edits and shell commands (by default opencode runs
    them: the demo does)."""
    model = {"name": "Fake Model", "tool_call": True, "limit": {"context": 200000, "output": 8000}}
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "Fake",
        "options": {"baseURL": f"{base_url.rstrip('/')}/v1", "apiKey": TEST_API_KEY},
        "models": {MODEL: model},
    }
    made: dict[str, object] = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "model": f"{PROVIDER}/{MODEL}",
        "small_model": f"{PROVIDER}/{MODEL}",
        "provider": {PROVIDER: provider},
    }
    if approvals:
        made["permission"] = {"bash": "ask", "edit": "ask"}
    return made


def xdg(home: Path) -> dict[str, str]:
    """The XDG directories of the private home (opencode keeps everything under them)."""
    parts = {"CONFIG": "config", "DATA": "data", "CACHE": "cache", "STATE": "state"}
    return {f"XDG_{key}_HOME": str(home / sub) for key, sub in parts.items()}


def write_config(home: Path, base_url: str, approvals: bool = True) -> None:
    """Fill HOME so opencode starts straight at its input box with the fake model."""
    folder = home / "config" / "opencode"
    folder.mkdir(parents=True, exist_ok=True)
    text = json.dumps(config(base_url, approvals), indent=2)
    (folder / "opencode.json").write_text(text, encoding="utf-8")


def make_env(
    home: Path, opencode_bin: Path | None = None, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment for running opencode offline with its XDG directories in HOME."""
    variables = {**xdg(home), HOME_MARKER: str(home)}
    return offline_env(base, _STRIPPED_PREFIXES, opencode_bin, variables)


def fill(
    home: Path, setup: Setup, base: Mapping[str, str] | None, binary: Path | None
) -> dict[str, str]:
    """Write the home for SETUP and give the environment that runs opencode there."""
    write_config(home, setup.base_url, setup.approvals)
    return make_env(home, binary, base)


HOME = OfflineHome("opencode", _STRIPPED_PREFIXES, fill, "HOME")
