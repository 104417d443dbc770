"""A pinned agent's private home in a temp dir, and the offline environment that points
the agent at it: what every `*_env` module shares; each writes its own config there."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ptysup.testing.pins import Pin


def offline_env(
    outer: Mapping[str, str] | None,
    stripped: tuple[str, ...],
    binary: Path | None,
    variables: Mapping[str, str],
) -> dict[str, str]:
    """OUTER (default os.environ) without its variables with a STRIPPED prefix (a real
    account or endpoint must not leak in), with VARIABLES set and BINARY's folder first
    on PATH."""
    source = os.environ if outer is None else outer
    env = {k: v for k, v in source.items() if not k.startswith(stripped)}
    env.update(variables)
    if binary is not None:
        rest = env.get("PATH", os.defpath)
        env["PATH"] = os.pathsep.join([str(binary.parent), rest])
    return env


@dataclass(frozen=True)
class AgentEnv:
    """A private config home and the environment that points the agent at it."""

    home: Path  # CLAUDE_CONFIG_DIR, GEMINI_CLI_HOME or CODEX_HOME
    env: Mapping[str, str]
    binary: Path | None
    command: str  # the launcher's name, run from PATH when no binary was found

    def argv(self, *args: str) -> list[str]:
        """The command line for the pinned binary (or the plain command) with ARGS."""
        return [str(self.binary) if self.binary else self.command, *args]


@contextmanager
def private_env(
    pin: Pin, binary: Path | None, fill: Callable[[Path, Path | None], dict[str, str]]
) -> Iterator[AgentEnv]:
    """An AgentEnv in a temp dir that is removed on exit. BINARY defaults to the pin's
    `find()`; FILL(home, binary) writes the agent's config into the home and returns its
    environment."""
    found = binary if binary is not None else pin.find()
    with tempfile.TemporaryDirectory(prefix=f"ptysup-{pin.name}-") as tmp:
        home = Path(tmp) / "home"
        yield AgentEnv(home=home, env=fill(home, found), binary=found, command=pin.bin_name)
