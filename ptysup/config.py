"""RunConfig: every option of a run, resolved once (CLI > environment > config file)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ptysup.values import ConfigError as ConfigError
from ptysup.values import command_argv as command_argv
from ptysup.values import duration_seconds as duration_seconds
from ptysup.values import parse_duration as parse_duration
from ptysup.values import split_command as split_command

if TYPE_CHECKING:
    from ptysup.plan.schema import Plan

DEFAULT_SUPERVISOR_TIMEOUT = 300.0
DEFAULT_IDLE = 3.0
DEFAULT_TURN_TIMEOUT = 300.0
DEFAULT_SUPERVISOR_RETRIES = 2
DEFAULT_SUPERVISOR_BACKOFF = 2.0
DEFAULT_VERIFY_TIMEOUT = 600.0
DEFAULT_MAX_WAITS = 5
DEFAULT_WAIT_BASE = 60.0
QUESTIONS = ("supervisor", "person")  # who answers the agent's questions
DEFAULT_NOTIFY_ON = ("escalation", "person", "person_action", "run_end")
DEFAULT_SUPERVISOR_TOOLS = "Read,Grep,Glob"  # read-only: look at the work, never change it
DEFAULT_START_TIMEOUT = 60.0
DEFAULT_MAX_REPEATS = 3  # identical rounds in a row that end a run as an escalation


@dataclass(frozen=True)
class RunConfig:
    """Everything one run needs to know."""

    task: str
    max_iter: int = 50
    agent_cmd: tuple[str, ...] = ("claude",)
    agent: str | None = None  # the agent's kind by name (--agent); None: known by its command
    supervisor_cmd: tuple[str, ...] = ("claude", "-p")
    supervisor_timeout: float = DEFAULT_SUPERVISOR_TIMEOUT
    supervisor_retries: int = DEFAULT_SUPERVISOR_RETRIES
    supervisor_backoff: float = DEFAULT_SUPERVISOR_BACKOFF
    supervisor_model: str | None = None  # None: Claude Code's default
    supervisor_tools: str = DEFAULT_SUPERVISOR_TOOLS
    warm_supervisor: bool = True
    # Another supervisor asked before a [COMPLETE] counts; ("auto",): one of another
    # vendor, picked at the start (ptysup.run.second); None: none.
    second_opinion: tuple[str, ...] | None = None
    log_file: Path | None = None
    log_format: str = "text"
    idle: float = DEFAULT_IDLE
    turn_timeout: float = DEFAULT_TURN_TIMEOUT
    verify: tuple[tuple[str, ...], ...] = ()
    verify_timeout: float = DEFAULT_VERIFY_TIMEOUT
    verify_baseline: bool = True  # run the checks once before the agent starts
    protect: tuple[str, ...] = ()  # --protect pathspecs beyond the default test files; "none"
    max_time: float | None = None
    max_cost: float | None = None
    max_repeats: int = DEFAULT_MAX_REPEATS
    max_waits: int = DEFAULT_MAX_WAITS
    wait_base: float = DEFAULT_WAIT_BASE
    wait: bool = True
    record: Path | None = None
    recording: bool = True
    summary_json: Path | None = None
    redact: tuple[str, ...] = ()
    status: bool = True
    escape_key: bytes | None = b"\x1d"  # Ctrl-]: ptysup's own key in a terminal; None: off
    prompt_template: str | None = None
    cwd: Path = Path(".")
    runs_dir: Path = Path(".ptysup/runs")
    debug: bool = False
    questions: str = "supervisor"
    # Without a terminal, how long an escalation waits for an answer from elsewhere
    # (`ptysup send`, the control page); None: the run ends at once (exit 7).
    escalate_wait: float | None = None
    notify: tuple[tuple[str, ...], ...] = ()
    notify_url: tuple[str, ...] = ()
    notify_on: tuple[str, ...] = DEFAULT_NOTIFY_ON
    plan: Plan | None = None  # --plan, loaded
    start_timeout: float = DEFAULT_START_TIMEOUT  # agent start → ready for input


def backoff_schedule(first: float, retries: int) -> tuple[float, ...]:
    """Delays before each retry: first, 4×first, 16×first, … capped at 60 s."""
    return tuple(min(first * 4**k, 60.0) for k in range(retries))
