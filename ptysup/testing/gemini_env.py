"""The pinned Gemini CLI and a private, offline environment to run it in.

`python -m ptysup.testing.gemini_env install` installs the pinned version under
`.tools/gemini-cli`; `... path` prints the binary that tests will use; `... env --url URL`
prints the `export` lines of a private home pointed at a fake model.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from ptysup.testing import envcli
from ptysup.testing.agenthome import AgentEnv, offline_env, private_env
from ptysup.testing.pins import GEMINI

GEMINI_CLI_VERSION = GEMINI.version
TEST_API_KEY = "fake-gemini-key"

# Outer variables that would leak a real account or endpoint into the child, or point it at
# another settings file or home.
_STRIPPED_PREFIXES = ("GEMINI_", "GOOGLE_")


# $PTYSUP_GEMINI_BIN, else the project-local pinned install, else `gemini` on PATH.
find_gemini = GEMINI.find
# The pinned Gemini CLI, installed under .tools/gemini-cli (npm) unless it is there.
install_gemini = GEMINI.install


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


def gemini_env(
    base_url: str, gemini_bin: Path | None = None, base: Mapping[str, str] | None = None
) -> AbstractContextManager[AgentEnv]:
    """A private home (removed on exit) and its environment; GEMINI_BIN defaults to
    find_gemini()."""

    def fill(home: Path, binary: Path | None) -> dict[str, str]:
        write_config(home)
        return make_env(base_url, home, binary, base)

    return private_env(GEMINI, gemini_bin, fill)


def main(argv: Sequence[str] | None = None) -> int:
    """`install` installs the pinned Gemini CLI; `path` prints the binary in use."""
    args = envcli.parser(GEMINI, "--home", "GEMINI_CLI_HOME", projects=False).parse_args(argv)
    if args.command == "env":
        return _print_env(args.url, args.home)
    return envcli.install_or_path(GEMINI, args.command, args.prefix, "Gemini CLI", find_gemini)


def _print_env(url: str | None, home: Path | None) -> int:
    """`env`: write a private home and print the `export` lines for a shell."""

    def env_for(url: str, home: Path) -> dict[str, str]:
        write_config(home)
        return make_env(url, home, find_gemini(), base=envcli.shell_path())

    return envcli.print_env(GEMINI, url, home, env_for, _STRIPPED_PREFIXES)


if __name__ == "__main__":
    sys.exit(main())
