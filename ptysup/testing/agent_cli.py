"""The `install`, `path` and `env` commands of each pinned agent's env module
(`python -m ptysup.testing.claude_env ...`, `... codex_env ...`)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path


def install_or_path(
    command: str,
    label: str,
    module: str,
    install: Callable[[], Path],
    find: Callable[[], Path | None],
) -> int:
    """`install`: install the pinned agent and print its binary; `path`: print the binary
    in use. LABEL names the agent and its version in the messages."""
    if command == "install":
        try:
            print(install())
        except (OSError, subprocess.CalledProcessError) as exc:
            print(f"ptysup: cannot install {label}: {exc}", file=sys.stderr)
            return 1
        return 0
    found = find()
    if found is None or not found.exists():
        name = label.rsplit(" ", 1)[0]
        print(f"ptysup: {name} not found; run `python -m {module} install`", file=sys.stderr)
        return 1
    print(found)
    return 0


def shell_path() -> str:
    """PATH for the shell that evals the `env` lines: it runs `ptysup` next, this
    interpreter's own (a fresh clone's .venv/bin is on no PATH), so the recipe works
    without activating the venv."""
    return os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


def print_exports(env: Mapping[str, str], stripped: tuple[str, ...]) -> None:
    """The `export` lines of ENV, after an `unset` of the outer shell's variables with the
    STRIPPED prefixes: a real account or endpoint must not leak in."""
    stray = sorted(k for k in os.environ if k.startswith(stripped) and k not in env)
    if stray:
        print(f"unset {' '.join(stray)}")
    for name in sorted(env):
        print(f"export {name}={shlex.quote(env[name])}")
