"""What the agent side reports to the run loop: plain, immutable values."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Protocol

from ptysup.terminal.keys import KeyCommand
from ptysup.terminal.pty_ import ExitStatus


class ScreenState(str, enum.Enum):
    """What the agent's screen says it is doing."""

    UNKNOWN = "unknown"
    READY = "ready"  # waiting for the person's input
    WORKING = "working"
    DIALOG = "dialog"  # a permission, trust or question dialog waits for an answer


@dataclass(frozen=True)
class ScreenUpdate:
    """The agent printed something; the screen now reads as `state`."""

    state: ScreenState
    ts: float


class Reply(Protocol):
    """How a hook that waits (a request) gets its answer; only the first send counts."""

    def send(self, text: str) -> bool: ...


# The hooks ptysup listens to, in its vocabulary: Stop/StopFailure end a turn;
# UserPromptSubmit confirms that an injected message started one; the tool hooks describe
# what the agent did. An agent whose hooks bear these names (Claude Code, Qwen Code) is
# given them all.
HOOK_NAMES = (
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "Notification",
    "Stop",
    "StopFailure",
    "SessionEnd",
)


@dataclass(frozen=True)
class HookEvent:
    """An agent's hook fired, named in ptysup's vocabulary (Claude Code's: Stop,
    StopFailure, UserPromptSubmit, …; each profile's `hook` translates its agent's own).

    A hook that waits for ptysup's answer (a request) carries `reply`: whoever takes the
    event must send one, even an empty one, or the agent waits for the hook's timeout.
    """

    name: str
    payload: dict[str, Any] = field(hash=False)
    ts: float
    reply: Reply | None = field(default=None, hash=False, compare=False)


@dataclass(frozen=True)
class AgentExit:
    """The agent's side of the PTY closed."""

    status: ExitStatus | None
    ts: float


@dataclass(frozen=True)
class StopRequest:
    """ptysup got SIGINT, SIGTERM or SIGHUP."""

    signum: int
    ts: float


@dataclass(frozen=True)
class PersonCommand:
    """The person pressed ptysup's escape key and a command key (or paused/resumed)."""

    command: KeyCommand
    ts: float


@dataclass(frozen=True)
class HaltRequest:
    """ptysup must end the run now: what it does can no longer be recorded."""

    reason: str
    ts: float


AgentEvent = ScreenUpdate | HookEvent | AgentExit | StopRequest | PersonCommand | HaltRequest


class TurnEndKind(str, enum.Enum):
    """Why a turn counts as ended."""

    STOP = "stop"  # Claude Code's Stop hook
    API_ERROR = "api_error"  # StopFailure hook, or an API error on screen
    SCREEN = "screen"  # the screen went back to ready without a hook (e.g. Esc)
    QUIET = "quiet"  # no output for --idle seconds (agents without hooks)
    STALLED = "stalled"  # nothing ended the turn within --turn-timeout
    DIALOG = "dialog"  # an approval dialog opened, and no person is there to answer it
    RESUMED = "resumed"  # no turn: a resumed run asks the supervisor what comes next


@dataclass(frozen=True)
class TurnEnd:
    """A turn ended; `detail` is the last message or error when known."""

    kind: TurnEndKind
    detail: str = ""
    dialog: bool = False  # a dialog was open as the turn ended (no one answered it)


class AgentExited(Exception):
    """The agent ended while the run still needed it."""

    def __init__(self, status: ExitStatus | None) -> None:
        super().__init__(status.describe() if status else "agent exited")
        self.status = status


class Interrupted(Exception):
    """ptysup was asked to stop by a signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.signum = signum


class PersonStopped(Exception):
    """The person stopped the run with ptysup's escape key."""


class Halted(Exception):
    """The run was halted (HaltRequest); the message says why."""


class TimeUp(Exception):
    """The run's time budget (--max-time) ran out while waiting on the agent."""


class CostUp(Exception):
    """The agent's own spend used up what the cost budget (--max-cost) had left."""


def time_left(deadline: float | None, now: float) -> float | None:
    """Seconds until `deadline` (None: no time budget); raises TimeUp once it has passed."""
    if deadline is None:
        return None
    left = deadline - now
    if left <= 0:
        raise TimeUp()
    return left
