"""Claude Code in the tests and the demo: its pinned release and a private, offline config
dir pointed at the fake model (`python -m ptysup.testing.kit claude install|path|env`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from ptysup.agents.claude.paste import unwrap_pastes
from ptysup.agents.release import OfflineHome, Release, Setup, offline_env

# 2.1.332 is the newest release and runs in the latest lane (scripts/test-lane.sh latest);
# the pin moves to it once the whole suite passes there (docs/agents.md: one test still
# fails on it), 2.1.197 becoming the compatibility lane.
RELEASE = Release("@anthropic-ai/claude-code", "2.1.197", "claude", "claude-code")
TEST_API_KEY = "sk-ant-test"

# Outer variables with these prefixes would leak a real account, a real endpoint, or the
# "running inside Claude Code" flag (CLAUDECODE) into the child.
_STRIPPED_PREFIXES = ("ANTHROPIC_", "CLAUDE")


def claude_json(
    project_dirs: Iterable[Path | str], api_key: str = TEST_API_KEY
) -> dict[str, object]:
    """The `.claude.json` that skips onboarding, the API-key dialog and folder trust."""
    # Claude Code (2.1.197, 2.1.332) looks up the key's last 20 characters in `approved`.
    return {
        "hasCompletedOnboarding": True,
        "theme": "dark",
        "customApiKeyResponses": {"approved": [api_key[-20:]], "rejected": []},
        "projects": {
            str(Path(d).resolve()): {"hasTrustDialogAccepted": True} for d in project_dirs
        },
    }


# Without disableDeepLinkRegistration, the first interactive start writes
# ~/.local/share/applications/claude-code-url-handler.desktop into the real home
# (observed with 2.1.197), whatever CLAUDE_CONFIG_DIR says. Auto mode is off: it is
# 2.1.332's default (its own classifier model approves the tool calls it judges low-risk,
# so no dialog is drawn), where 2.1.197 asked before an edit or a command; a dialog is
# what ptysup escalates and never approves, in the tests and in CI. (Asking for
# `defaultMode: "default"` instead drew a "Make auto mode your default permission mode?"
# dialog at start, under ptysup, that took the task.)
SETTINGS: Mapping[str, object] = {
    "disableDeepLinkRegistration": "disable",
    "permissions": {"disableAutoMode": "disable"},
}


def write_config(
    config_dir: Path, project_dirs: Iterable[Path | str], api_key: str = TEST_API_KEY
) -> None:
    """Fill CONFIG_DIR so Claude Code starts straight at its input box."""
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / ".claude.json").write_text(
        json.dumps(claude_json(project_dirs, api_key), indent=2), encoding="utf-8"
    )
    (config_dir / "settings.json").write_text(json.dumps(SETTINGS, indent=2), encoding="utf-8")


def make_env(
    base_url: str,
    config_dir: Path,
    claude_bin: Path | None = None,
    base: Mapping[str, str] | None = None,
    api_key: str = TEST_API_KEY,
) -> dict[str, str]:
    """The environment for running claude offline against BASE_URL."""
    variables = {
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": api_key,
        "CLAUDE_CONFIG_DIR": str(config_dir),
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        # Without it an HTTP 500 is retried 11 times over about three minutes.
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }
    return offline_env(base, _STRIPPED_PREFIXES, claude_bin, variables)


def fill(
    config_dir: Path, setup: Setup, base: Mapping[str, str] | None, binary: Path | None
) -> dict[str, str]:
    """Write the config dir for SETUP and give the environment that runs claude there."""
    key = TEST_API_KEY if setup.api_key is None else setup.api_key
    write_config(config_dir, setup.projects, key)
    return make_env(setup.base_url, config_dir, binary, base, key)


HOME = OfflineHome(
    "Claude Code", _STRIPPED_PREFIXES, fill, "CLAUDE_CONFIG_DIR", True, unwrap_pastes
)
