"""RunConfig: every option of a run, resolved once (CLI > environment > defaults)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

DEFAULT_SUPERVISOR_TIMEOUT = 300.0
DEFAULT_IDLE = 3.0
DEFAULT_TURN_TIMEOUT = 300.0
DEFAULT_SUPERVISOR_RETRIES = 2
DEFAULT_SUPERVISOR_BACKOFF = 2.0


class ConfigError(Exception):
    """An option's value is unusable; the message is one line for the person."""


@dataclass(frozen=True)
class RunConfig:
    """Everything one run needs to know."""

    task: str
    max_iter: int = 50
    agent_cmd: tuple[str, ...] = ("claude",)
    supervisor_cmd: tuple[str, ...] = ("claude", "-p")
    supervisor_timeout: float = DEFAULT_SUPERVISOR_TIMEOUT
    supervisor_retries: int = DEFAULT_SUPERVISOR_RETRIES
    supervisor_backoff: float = DEFAULT_SUPERVISOR_BACKOFF
    log_file: Path | None = None
    log_format: str = "text"
    idle: float = DEFAULT_IDLE
    turn_timeout: float = DEFAULT_TURN_TIMEOUT
    cwd: Path = Path(".")
    runs_dir: Path = Path(".ptysup/runs")
    debug: bool = False


def backoff_schedule(first: float, retries: int) -> tuple[float, ...]:
    """Delays before each retry: first, 4×first, 16×first, … capped at 60 s."""
    return tuple(min(first * 4**k, 60.0) for k in range(retries))


def split_command(value: str, option: str) -> tuple[str, ...]:
    """Split a command line like a shell does (it is never run through one)."""
    try:
        argv = tuple(shlex.split(value))
    except ValueError as exc:
        raise ConfigError(f"{option}: {exc}") from exc
    if not argv:
        raise ConfigError(f"{option} is empty")
    return argv
