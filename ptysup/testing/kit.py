"""A pinned agent in a private, offline home, for the tests and the demo; from the command
line, `python -m ptysup.testing.kit AGENT install|path|env`:

- `install` installs AGENT's pinned release (under .tools/) and prints its launcher;
- `path` prints the binary the tests use ($PTYSUP_<AGENT>_BIN, the pinned install, PATH);
- `env --url URL` writes a private home pointed at the fake model and prints a shell's
  `export` lines for it.

What differs between agents (their pin, their config, their variables) is in each agent's
folder (ptysup/agents/<name>/testkit.py), given here by the registry.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ptysup.agents import registry
from ptysup.agents.release import OfflineHome, Setup
from ptysup.testing.pins import Pin, pin

NAMES: tuple[str, ...] = tuple(agent.name for agent in registry.AGENTS if agent.home)


@dataclass(frozen=True)
class AgentEnv:
    """A private config home and the environment that points the agent at it."""

    home: Path  # CLAUDE_CONFIG_DIR, GEMINI_CLI_HOME, CODEX_HOME…
    env: Mapping[str, str]
    binary: Path | None
    command: str  # the launcher's name, run from PATH when no binary was found

    def argv(self, *args: str) -> list[str]:
        """The command line for the pinned binary (or the plain command) with ARGS."""
        return [str(self.binary) if self.binary else self.command, *args]


def offline_home(name: str) -> OfflineHome:
    """Agent NAME's test home (KeyError for an agent without one)."""
    home = next((agent.home for agent in registry.AGENTS if agent.name == name), None)
    if home is None:
        raise KeyError(name)
    return home


def make_env(
    name: str,
    home: Path,
    setup: Setup,
    binary: Path | None = None,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Write agent NAME's config into HOME for SETUP and give the environment that runs it
    there: BASE (default os.environ) without what would leak a real account in, BINARY's
    folder first on PATH."""
    return offline_home(name).fill(home, setup, base, binary)


@contextmanager
def agent_env(
    name: str,
    base_url: str,
    projects: Sequence[Path | str] = (),
    binary: Path | None = None,
    base: Mapping[str, str] | None = None,
    approvals: bool = True,
) -> Iterator[AgentEnv]:
    """Agent NAME in a private home in a temp dir (removed on exit), pointed at the fake
    model at BASE_URL, trusting PROJECTS. BINARY defaults to the pin's `find()`; BASE is
    the environment it goes on top of (default os.environ); APPROVALS: the agent asks
    before edits and commands (Setup)."""
    chosen = pin(name)
    found = binary if binary is not None else chosen.find()
    setup = Setup(base_url, tuple(Path(p) for p in projects), approvals)
    with tempfile.TemporaryDirectory(prefix=f"ptysup-{name}-") as tmp:
        home = Path(tmp) / "home"
        env = make_env(name, home, setup, found, base)
        yield AgentEnv(home=home, env=env, binary=found, command=chosen.bin_name)


def main(argv: Sequence[str] | None = None) -> int:
    """`AGENT install`, `AGENT path` or `AGENT env --url URL` (see the module's help)."""
    args = _parser().parse_args(argv)
    chosen, home = pin(args.agent), offline_home(args.agent)
    if args.command == "install":
        try:
            print(chosen.install((args.prefix or chosen.prefix).resolve()))
        except (OSError, subprocess.CalledProcessError) as exc:
            print(f"ptysup: cannot install {home.label} {chosen.version}: {exc}", file=sys.stderr)
            return 1
        return 0
    if args.command == "path":
        found = chosen.find()
        if found is None or not found.exists():
            fix = f"python -m ptysup.testing.kit {chosen.name} install"
            print(f"ptysup: {home.label} not found; run `{fix}`", file=sys.stderr)
            return 1
        print(found)
        return 0
    return _print_env(chosen, home, args.url, args.project or [], args.home)


def _parser() -> argparse.ArgumentParser:
    made = argparse.ArgumentParser(prog="python -m ptysup.testing.kit")
    made.add_argument("agent", choices=NAMES)
    made.add_argument("command", choices=["install", "path", "env"])
    made.add_argument("--url", help="env: the fake model's base URL")
    made.add_argument(
        "--project", type=Path, action="append", help="env: a folder to trust (where it asks)"
    )
    made.add_argument(
        "--home",
        type=Path,
        help="env: the agent's private home (its config dir); default a new temp dir",
    )
    made.add_argument(
        "--prefix", type=Path, help="install: where (default .tools/<the pin's folder>)"
    )
    return made


def shell_path() -> dict[str, str]:
    """The PATH for the shell that evals the `export` lines: it runs `ptysup` next, this
    interpreter's own (a fresh clone's .venv/bin is on no PATH), so the recipe works
    without activating the venv."""
    return {"PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}


def _print_env(
    chosen: Pin, home: OfflineHome, url: str | None, projects: Sequence[Path], at: Path | None
) -> int:
    """`env`: write the agent's config into AT (default a new temp dir) and print its
    environment as `export` lines; without a URL, exit 2."""
    if not url:
        print("ptysup: env needs --url (the fake model's base URL)", file=sys.stderr)
        return 2
    at = at or Path(tempfile.mkdtemp(prefix=f"ptysup-{chosen.name}-"))
    setup = Setup(url, tuple(projects))
    env = home.fill(at, setup, shell_path(), chosen.find())
    return print_exports(env, home.stripped)


def print_exports(env: Mapping[str, str], stripped: Sequence[str]) -> int:
    """Print `export` lines for ENV, after an `unset` of the outer shell's variables with
    a STRIPPED prefix that ENV leaves out (a real account or endpoint must not leak in)."""
    stray = sorted(k for k in os.environ if k.startswith(tuple(stripped)) and k not in env)
    if stray:
        print(f"unset {' '.join(stray)}")
    for name in sorted(env):
        print(f"export {name}={shlex.quote(env[name])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
