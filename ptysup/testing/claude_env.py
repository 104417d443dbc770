"""The pinned Claude Code binary and a private, offline environment to run it in.

`python -m ptysup.testing.claude_env install` installs the pinned version under
`.tools/claude-code`; `... path` prints the binary that tests will use.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ptysup.testing import envcli
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
    outer = os.environ if base is None else base
    env = {k: v for k, v in outer.items() if not k.startswith(_STRIPPED_PREFIXES)}
    env.update(
        ANTHROPIC_BASE_URL=base_url,
        ANTHROPIC_API_KEY=api_key,
        CLAUDE_CONFIG_DIR=str(config_dir),
        DISABLE_TELEMETRY="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        # Without it an HTTP 500 is retried 11 times over about three minutes.
        CLAUDE_CODE_MAX_RETRIES="0",
    )
    if claude_bin is not None:
        rest = env.get("PATH", os.defpath)
        env["PATH"] = os.pathsep.join([str(claude_bin.parent), rest])
    return env


@dataclass(frozen=True)
class ClaudeEnv:
    """A private Claude Code config dir and the environment that points claude at it."""

    config_dir: Path
    env: Mapping[str, str]
    claude_bin: Path | None

    def argv(self, *args: str) -> list[str]:
        """The command line for the pinned binary (or plain `claude`) with ARGS."""
        return [str(self.claude_bin) if self.claude_bin else "claude", *args]


@contextmanager
def claude_env(
    base_url: str,
    project_dirs: Sequence[Path | str],
    claude_bin: Path | None = None,
    base: Mapping[str, str] | None = None,
) -> Iterator[ClaudeEnv]:
    """A ClaudeEnv in a temp dir that is removed on exit; CLAUDE_BIN defaults to find_claude()."""
    binary = claude_bin if claude_bin is not None else find_claude()
    with tempfile.TemporaryDirectory(prefix="ptysup-claude-") as tmp:
        config_dir = Path(tmp) / "config"
        write_config(config_dir, project_dirs)
        env = make_env(base_url, config_dir, binary, base)
        yield ClaudeEnv(config_dir=config_dir, env=env, claude_bin=binary)


def main(argv: Sequence[str] | None = None) -> int:
    """`install` installs the pinned Claude Code; `path` prints the binary in use."""
    parser = argparse.ArgumentParser(prog="python -m ptysup.testing.claude_env")
    parser.add_argument("command", choices=["install", "path", "env"])
    parser.add_argument("--url", help="env: the fake model's base URL")
    parser.add_argument("--project", type=Path, action="append", help="env: a folder to trust")
    parser.add_argument("--config-dir", type=Path, help="env: default a new temp dir")
    parser.add_argument(
        "--prefix", type=Path, default=TOOLS_DIR, help="install: where (default .tools/)"
    )
    args = parser.parse_args(argv)
    if args.command == "env":
        return _print_env(args.url, args.project or [], args.config_dir)
    return envcli.install_or_path(CLAUDE, args.command, args.prefix, "Claude Code", find_claude)


def _print_env(url: str | None, projects: Sequence[Path], config_dir: Path | None) -> int:
    """`env`: write a private config dir and print the `export` lines for a shell."""
    if not url:
        print("ptysup: env needs --url (the fake model's base URL)", file=sys.stderr)
        return 2
    config_dir = config_dir or Path(tempfile.mkdtemp(prefix="ptysup-claude-"))
    write_config(config_dir, projects)
    env = make_env(url, config_dir, find_claude(), base=envcli.shell_path())
    return envcli.print_exports(env, _STRIPPED_PREFIXES)


if __name__ == "__main__":
    sys.exit(main())
