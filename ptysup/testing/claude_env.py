"""The pinned Claude Code binary and a private, offline environment to run it in.

`python -m ptysup.testing.claude_env install` installs the pinned version under
`.tools/claude-code`; `... path` prints the binary that tests will use.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from ptysup.testing import envcli
from ptysup.testing.agenthome import AgentEnv, offline_env, private_env
from ptysup.testing.pins import CLAUDE

CLAUDE_CODE_VERSION = CLAUDE.version
PACKAGE = CLAUDE.package
TOOLS_DIR = CLAUDE.prefix
TEST_API_KEY = "sk-ant-test"
BIN_ENV_VAR = CLAUDE.bin_env

# Outer variables with these prefixes would leak a real account, a real endpoint, or the
# "running inside Claude Code" flag (CLAUDECODE) into the child.
_STRIPPED_PREFIXES = ("ANTHROPIC_", "CLAUDE")


def local_bin(prefix: Path = TOOLS_DIR) -> Path:
    """Where `npm install --prefix PREFIX` puts the `claude` launcher."""
    return CLAUDE.local_bin(prefix)


def installed_version(prefix: Path = TOOLS_DIR) -> str | None:
    """The Claude Code version installed under PREFIX, from its package.json, or None."""
    return CLAUDE.installed_version(prefix)


def find_claude() -> Path | None:
    """$PTYSUP_CLAUDE_BIN, else the project-local pinned install, else `claude` on PATH."""
    return CLAUDE.find()


def install_claude(prefix: Path = TOOLS_DIR) -> Path:
    """Install the pinned Claude Code under PREFIX unless it is already there."""
    return CLAUDE.install(prefix)


def claude_json(
    project_dirs: Iterable[Path | str], api_key: str = TEST_API_KEY
) -> dict[str, object]:
    """The `.claude.json` that skips onboarding, the API-key dialog and folder trust."""
    # Claude Code 2.1.197 looks up the key's last 20 characters in `approved`.
    return {
        "hasCompletedOnboarding": True,
        "theme": "dark",
        "customApiKeyResponses": {"approved": [api_key[-20:]], "rejected": []},
        "projects": {
            str(Path(d).resolve()): {"hasTrustDialogAccepted": True} for d in project_dirs
        },
    }


# Without this, the first interactive start writes
# ~/.local/share/applications/claude-code-url-handler.desktop into the real home
# (observed with 2.1.197), whatever CLAUDE_CONFIG_DIR says.
SETTINGS: Mapping[str, object] = {"disableDeepLinkRegistration": "disable"}


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


def claude_env(
    base_url: str,
    project_dirs: Sequence[Path | str],
    claude_bin: Path | None = None,
    base: Mapping[str, str] | None = None,
) -> AbstractContextManager[AgentEnv]:
    """A private config dir (removed on exit) and its environment; CLAUDE_BIN defaults to
    find_claude()."""

    def fill(config_dir: Path, binary: Path | None) -> dict[str, str]:
        write_config(config_dir, project_dirs)
        return make_env(base_url, config_dir, binary, base)

    return private_env(CLAUDE, claude_bin, fill)


def main(argv: Sequence[str] | None = None) -> int:
    """`install` installs the pinned Claude Code; `path` prints the binary in use."""
    parser = envcli.parser(CLAUDE, "--config-dir", "CLAUDE_CONFIG_DIR", projects=True)
    args = parser.parse_args(argv)
    if args.command == "env":
        return _print_env(args.url, args.project or [], args.config_dir)
    return envcli.install_or_path(CLAUDE, args.command, args.prefix, "Claude Code", find_claude)


def _print_env(url: str | None, projects: Sequence[Path], config_dir: Path | None) -> int:
    """`env`: write a private config dir and print the `export` lines for a shell."""

    def env_for(url: str, config_dir: Path) -> dict[str, str]:
        write_config(config_dir, projects)
        return make_env(url, config_dir, find_claude(), base=envcli.shell_path())

    return envcli.print_env(CLAUDE, url, config_dir, env_for, _STRIPPED_PREFIXES)


if __name__ == "__main__":
    sys.exit(main())
