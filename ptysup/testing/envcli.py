"""What every pinned agent's env module does from the command line: `install` the pinned
release, print the binary in use (`path`), and print a shell's `export` lines (`env`)."""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from ptysup.testing.pins import Pin


def parser(pin: Pin, home_flag: str, home_help: str, projects: bool) -> argparse.ArgumentParser:
    """The command line of PIN's env module: `install`, `path`, or `env --url URL` with the
    private home at HOME_FLAG (and, where PROJECTS, the folders to trust)."""
    made = argparse.ArgumentParser(prog=f"python -m ptysup.testing.{pin.name}_env")
    made.add_argument("command", choices=["install", "path", "env"])
    made.add_argument("--url", help="env: the fake model's base URL")
    if projects:
        made.add_argument("--project", type=Path, action="append", help="env: a folder to trust")
    made.add_argument(home_flag, type=Path, help=f"env: {home_help}; default a new temp dir")
    made.add_argument(
        "--prefix",
        type=Path,
        default=pin.prefix,
        help=f"install: where (default .tools/{pin.folder})",
    )
    return made


def install_or_path(
    pin: Pin, command: str, prefix: Path, label: str, find: Callable[[], Path | None]
) -> int:
    """`install`: install PIN under PREFIX and print its launcher; `path`: print the binary
    the tests use (FIND's). LABEL names the agent in the one error line."""
    module = f"ptysup.testing.{pin.name}_env"
    if command == "install":
        try:
            print(pin.install(prefix.resolve()))
        except (OSError, subprocess.CalledProcessError) as exc:
            print(f"ptysup: cannot install {label} {pin.version}: {exc}", file=sys.stderr)
            return 1
        return 0
    found = find()
    if found is None or not found.exists():
        print(f"ptysup: {label} not found; run `python -m {module} install`", file=sys.stderr)
        return 1
    print(found)
    return 0


def shell_path() -> dict[str, str]:
    """The PATH for the shell that evals the `export` lines: it runs `ptysup` next, this
    interpreter's own (a fresh clone's .venv/bin is on no PATH), so the recipe works
    without activating the venv."""
    return {"PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}


def print_env(
    pin: Pin,
    url: str | None,
    home: Path | None,
    env_for: Callable[[str, Path], Mapping[str, str]],
    stripped: tuple[str, ...],
) -> int:
    """`env`: ENV_FOR(url, home) writes the agent's config into HOME (default a new temp
    dir) and gives its environment, printed as `export` lines; without a URL, exit 2."""
    if not url:
        print("ptysup: env needs --url (the fake model's base URL)", file=sys.stderr)
        return 2
    home = home or Path(tempfile.mkdtemp(prefix=f"ptysup-{pin.name}-"))
    return print_exports(env_for(url, home), stripped)


def print_exports(env: Mapping[str, str], stripped: tuple[str, ...]) -> int:
    """Print `export` lines for ENV, after an `unset` of the outer shell's variables with
    a STRIPPED prefix that ENV leaves out (a real account or endpoint must not leak in)."""
    stray = sorted(k for k in os.environ if k.startswith(stripped) and k not in env)
    if stray:
        print(f"unset {' '.join(stray)}")
    for name in sorted(env):
        print(f"export {name}={shlex.quote(env[name])}")
    return 0
