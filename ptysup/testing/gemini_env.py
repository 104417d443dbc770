"""The pinned Gemini CLI and a private, offline environment to run it in.

`python -m ptysup.testing.gemini_env install` installs the pinned version under
`.tools/gemini-cli`; `... path` prints the binary that tests will use; `... env --url URL`
prints the `export` lines of a private home pointed at a fake model.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ptysup.testing.pins import GEMINI

GEMINI_CLI_VERSION = GEMINI.version
PACKAGE = GEMINI.package
TOOLS_DIR = GEMINI.prefix
TEST_API_KEY = "fake-gemini-key"
BIN_ENV_VAR = GEMINI.bin_env

# Outer variables that would leak a real account or endpoint into the child, or point it at
# another settings file or home.
_STRIPPED_PREFIXES = ("GEMINI_", "GOOGLE_")


def local_bin(prefix: Path = TOOLS_DIR) -> Path:
    """Where `npm install --prefix PREFIX` puts the `gemini` launcher."""
    return GEMINI.local_bin(prefix)


def installed_version(prefix: Path = TOOLS_DIR) -> str | None:
    """The Gemini CLI version installed under PREFIX, from its package.json, or None."""
    package_json = prefix / "node_modules" / "@google" / "gemini-cli" / "package.json"
    try:
        version = json.loads(package_json.read_text(encoding="utf-8")).get("version")
    except (OSError, ValueError):
        return None
    return version if isinstance(version, str) else None


def find_gemini() -> Path | None:
    """$PTYSUP_GEMINI_BIN, else the project-local pinned install, else `gemini` on PATH."""
    configured = os.environ.get(BIN_ENV_VAR)
    if configured:
        return Path(configured)
    local = local_bin()
    if local.exists():
        return local
    found = shutil.which("gemini")
    return Path(found) if found else None


def npm_install(package: str, version: str, prefix: Path, binary: Path) -> Path:
    """`npm install PACKAGE@VERSION` under PREFIX (the one place an agent is installed);
    BINARY is the launcher it must leave behind."""
    npm = shutil.which("npm")
    if npm is None:
        raise FileNotFoundError(f"npm is needed to install {package} and is not on PATH")
    prefix.mkdir(parents=True, exist_ok=True)
    argv = [npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix)]
    subprocess.run([*argv, f"{package}@{version}"], check=True, stdout=sys.stderr)
    if not binary.exists():
        raise FileNotFoundError(f"npm install finished but {binary} is missing")
    return binary


def install_gemini(prefix: Path = TOOLS_DIR) -> Path:
    """Install the pinned Gemini CLI under PREFIX unless it is already there."""
    binary = local_bin(prefix)
    if installed_version(prefix) == GEMINI_CLI_VERSION and binary.exists():
        return binary
    return npm_install(PACKAGE, GEMINI_CLI_VERSION, prefix, binary)


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
        "--prefix", type=Path, default=TOOLS_DIR, help="install: where (default .tools/)"
    )
    args = parser.parse_args(argv)
    if args.command == "env":
        return _print_env(args.url, args.home)
    if args.command == "install":
        try:
            print(install_gemini(args.prefix.resolve()))
        except (OSError, subprocess.CalledProcessError) as exc:
            print(f"ptysup: cannot install Gemini CLI {GEMINI_CLI_VERSION}: {exc}", file=sys.stderr)
            return 1
        return 0
    found = find_gemini()
    if found is None or not found.exists():
        print(
            "ptysup: Gemini CLI not found; run `python -m ptysup.testing.gemini_env install`",
            file=sys.stderr,
        )
        return 1
    print(found)
    return 0


def _print_env(url: str | None, home: Path | None) -> int:
    """`env`: write a private home and print the `export` lines for a shell."""
    if not url:
        print("ptysup: env needs --url (the fake model's base URL)", file=sys.stderr)
        return 2
    home = home or Path(tempfile.mkdtemp(prefix="ptysup-gemini-"))
    write_config(home)
    outer_path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = make_env(url, home, find_gemini(), base={"PATH": outer_path})
    stray = sorted(k for k in os.environ if k.startswith(_STRIPPED_PREFIXES) and k not in env)
    if stray:  # a real account or endpoint of the outer shell must not leak in
        print(f"unset {' '.join(stray)}")
    for name in sorted(env):
        print(f"export {name}={shlex.quote(env[name])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
