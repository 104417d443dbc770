"""The pinned Gemini CLI and a private, offline environment to run it in.

`python -m ptysup.testing.gemini_env install` installs the pinned version under
`.tools/gemini-cli`; `... path` prints the binary that tests will use; `... env --url URL`
prints the `export` lines of a private home pointed at a fake model.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ptysup.testing import envcli
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
    outer = os.environ if base is None else base
    env = {k: v for k, v in outer.items() if not k.startswith(_STRIPPED_PREFIXES)}
    env.update(
        GOOGLE_GEMINI_BASE_URL=base_url,
        GEMINI_API_KEY=api_key,
        GEMINI_CLI_HOME=str(home),
    )
    if gemini_bin is not None:
        rest = env.get("PATH", os.defpath)
        env["PATH"] = os.pathsep.join([str(gemini_bin.parent), rest])
    return env


@dataclass(frozen=True)
class GeminiEnv:
    """A private Gemini CLI home and the environment that points gemini at it."""

    home: Path
    env: Mapping[str, str]
    gemini_bin: Path | None

    def argv(self, *args: str) -> list[str]:
        """The command line for the pinned binary (or plain `gemini`) with ARGS."""
        return [str(self.gemini_bin) if self.gemini_bin else "gemini", *args]


@contextmanager
def gemini_env(
    base_url: str, gemini_bin: Path | None = None, base: Mapping[str, str] | None = None
) -> Iterator[GeminiEnv]:
    """A GeminiEnv in a temp dir that is removed on exit; GEMINI_BIN defaults to find_gemini()."""
    binary = gemini_bin if gemini_bin is not None else find_gemini()
    with tempfile.TemporaryDirectory(prefix="ptysup-gemini-") as tmp:
        home = Path(tmp) / "home"
        write_config(home)
        env = make_env(base_url, home, binary, base)
        yield GeminiEnv(home=home, env=env, gemini_bin=binary)


def main(argv: Sequence[str] | None = None) -> int:
    """`install` installs the pinned Gemini CLI; `path` prints the binary in use."""
    parser = argparse.ArgumentParser(prog="python -m ptysup.testing.gemini_env")
    parser.add_argument("command", choices=["install", "path", "env"])
    parser.add_argument("--url", help="env: the fake model's base URL")
    parser.add_argument("--home", type=Path, help="env: GEMINI_CLI_HOME; default a new temp dir")
    parser.add_argument(
        "--prefix", type=Path, default=GEMINI.prefix, help="install: where (default .tools/)"
    )
    args = parser.parse_args(argv)
    if args.command == "env":
        return _print_env(args.url, args.home)
    return envcli.install_or_path(GEMINI, args.command, args.prefix, "Gemini CLI", find_gemini)


def _print_env(url: str | None, home: Path | None) -> int:
    """`env`: write a private home and print the `export` lines for a shell."""
    if not url:
        print("ptysup: env needs --url (the fake model's base URL)", file=sys.stderr)
        return 2
    home = home or Path(tempfile.mkdtemp(prefix="ptysup-gemini-"))
    write_config(home)
    env = make_env(url, home, find_gemini(), base=envcli.shell_path())
    return envcli.print_exports(env, _STRIPPED_PREFIXES)


if __name__ == "__main__":
    sys.exit(main())
