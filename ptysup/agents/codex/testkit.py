"""Codex CLI in the tests and the demo: its pinned release and a private, offline
CODEX_HOME pointed at the fake model (`python -m ptysup.testing.kit codex install|path|env`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from ptysup.agents.release import OfflineHome, Release, Setup, offline_env

# 0.171.0, the newest, runs in the latest lane; the pin moves with Claude Code's.
RELEASE = Release("@openai/codex", "0.169.0", "codex", "codex")
MODEL = "fake-model"
PROVIDER = "ptysup-fake"
# The provider's `env_key`: Codex sends its value as the bearer token.
API_KEY_VAR = "FAKE_MODEL_API_KEY"
TEST_API_KEY = "sk-fake-codex"

# Outer variables with these prefixes would leak a real account or endpoint (OPENAI_API_KEY,
# OPENAI_BASE_URL) or another Codex's home into the child.
_STRIPPED_PREFIXES = ("OPENAI_", "CODEX_")


def _toml(value: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's, for the text written here)."""
    return json.dumps(value, ensure_ascii=False)


def config_toml(base_url: str, project_dirs: Iterable[Path | str]) -> str:
    """The config.toml that points Codex at the fake model and starts it at its input box.

    `wire_api = "responses"`: Codex (0.169, 0.171) rejects `chat`. No retries: a scripted error is
    shown at once (Codex would retry a 500 several times, with backoff). The projects are
    trusted (else a git repo opens on "Trust this folder?"), the update check is off, and
    so is the login-shell snapshot.
    """
    lines = [
        f"model = {_toml(MODEL)}",
        f"model_provider = {_toml(PROVIDER)}",
        'approval_policy = "on-request"',
        'sandbox_mode = "workspace-write"',
        "check_for_update_on_startup = false",
        "",
        f"[model_providers.{PROVIDER}]",
        'name = "ptysup fake model"',
        f"base_url = {_toml(base_url.rstrip('/') + '/v1')}",
        'wire_api = "responses"',
        f"env_key = {_toml(API_KEY_VAR)}",
        "request_max_retries = 0",
        "stream_max_retries = 0",
        "",
        # Codex snapshots the person's login shell at start (bash -l): a ~/.bashrc that
        # starts background jobs (pyenv's rehash) leaves them running, with CODEX_HOME in
        # their environment, a moment after Codex is gone. Not Codex's own processes, and
        # not wanted in a private, offline test home.
        "[features]",
        "shell_snapshot = false",
    ]
    for project in project_dirs:
        lines += ["", f"[projects.{_toml(str(Path(project).resolve()))}]"]
        lines.append('trust_level = "trusted"')
    return "\n".join(lines) + "\n"


def write_config(codex_home: Path, base_url: str, project_dirs: Iterable[Path | str]) -> None:
    """Fill CODEX_HOME so Codex starts straight at its input box, talking to BASE_URL."""
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(config_toml(base_url, project_dirs), encoding="utf-8")


def make_env(
    codex_home: Path,
    codex_bin: Path | None = None,
    base: Mapping[str, str] | None = None,
    api_key: str = TEST_API_KEY,
) -> dict[str, str]:
    """The environment for running codex offline with the config in CODEX_HOME."""
    variables = {"CODEX_HOME": str(codex_home), API_KEY_VAR: api_key}
    return offline_env(base, _STRIPPED_PREFIXES, codex_bin, variables)


def fill(
    codex_home: Path, setup: Setup, base: Mapping[str, str] | None, binary: Path | None
) -> dict[str, str]:
    """Write CODEX_HOME for SETUP and give the environment that runs codex there."""
    write_config(codex_home, setup.base_url, setup.projects)
    return make_env(codex_home, binary, base)


HOME = OfflineHome("Codex CLI", _STRIPPED_PREFIXES, fill, "CODEX_HOME", projects=True)
