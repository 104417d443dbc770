"""What the run loop needs to know about one kind of agent."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ptysup.agents.events import HookEvent, ScreenState
from ptysup.agents.firstrun import Blocker
from ptysup.agents.questions import Ask
from ptysup.terminal.inject import GUARD, LEADERS

if TYPE_CHECKING:  # the screen model (pyte) loads after the agent started
    from ptysup.terminal.screen import ScreenSnapshot


class Hooks(Protocol):
    """The run's hook channel, as a profile wires it into its agent."""

    def command(self, wait: float | None = None) -> str:
        """The shell command line a hook runs; with `wait` it waits for ptysup's reply. It
        names no secret: agents print and keep their hook commands."""
        ...

    def address(self) -> tuple[str, str]:
        """The socket's path and the run's token, for a client that is not the command."""
        ...


@dataclass(frozen=True)
class Unanswered:
    """The prompt a killed part left unanswered at the end of the agent's saved conversation
    (reopened, the agent would join the next message to it as one)."""

    prompt: str
    # It was taken out of the saved conversation with the agent's own rewind; False when
    # it was all the conversation held (nothing answered to reopen: a new one starts).
    dropped: bool


@dataclass(frozen=True)
class Launch:
    """How the agent is started: its command line and its whole environment."""

    argv: list[str]
    env: dict[str, str]


class AgentProfile(Protocol):
    """The only place that knows a particular agent's screens and hooks."""

    name: str
    uses_hooks: bool
    # The hook by which the agent says it takes keys (opencode drops what is typed before
    # its terminal UI is up, and its screen cannot tell): then ready needs it too.
    ready_hook: str | None
    exit_command: str | None  # typed to end the agent gracefully, if it has one
    dismiss_key: bytes  # closes a dialog without approving it
    # Approves the dialog the screen reads as one, for a person who saw its exact text
    # elsewhere (the control page); ptysup never presses it itself. None: not offered.
    approve_key: bytes | None
    # Whether the agent tells its model that an approval dismissed with `dismiss_key` was
    # refused (Claude Code, Codex, Qwen Code and opencode do, as the tool's result); if not
    # (Gemini CLI drops the call), the instruction ptysup types next says so.
    dismiss_reported: bool
    # Whether the agent may draw its turn's last frame after its turn-end hook came, the
    # screen already reading as waiting (Claude Code: once the Stop hook exited): then the
    # turn end waits for a quiet screen too (settle.py). Else (Gemini CLI has drawn its
    # reply when AfterAgent runs) only for the screen to read as waiting.
    draws_after_stop: bool
    # A line the agent shows while its hooks still run after a turn end's (Gemini CLI's
    # `Executing Hooks:`), if it has one: the turn's final frame is the first without it.
    hooks_running: re.Pattern[str] | None
    clear_input_keys: tuple[bytes, ...]  # empties a non-empty input box
    clear_command: str | None  # starts a fresh conversation (budget stop, abort), if any
    # The fresh conversation's SessionStart hook comes at once (Claude Code), so it confirms
    # the clear; else (Codex: with the next prompt) the emptied input box does.
    clear_starts_session: bool
    interrupt_key: bytes | None  # stops the turn it is working on, if it has such a key
    interrupt_presses: int  # how often, as separate presses (opencode: Esc twice)
    # What the screen shows once a press armed the interrupt, where it takes several: the
    # next press waits for it (opencode: `esc again to interrupt`).
    interrupt_armed: str | None
    # Printed when the agent suspended itself (Ctrl-Z) and waits for a SIGCONT, if it does.
    suspend_notice: re.Pattern[bytes] | None
    # The OSC number of the state reports the agent writes into its terminal (Codex: 7501),
    # if it writes any: the last one's payload is the screen snapshot's `signal`.
    signal_osc: int | None
    # A message that starts with one of `command_leaders` would be the agent's own command
    # (`/clear`, `!rm`): `command_guard` goes in front so that it reads as text.
    command_leaders: tuple[str, ...]
    command_guard: str
    # Text goes in only as a bracketed paste, never as keys: the agent reads typed keys as
    # its own syntax (Gemini CLI: `!` shell mode, `?` help). Ready waits until the agent
    # switched bracketed paste on.
    paste_only: bool
    # What the input box shows in place of a large paste, if the agent folds one.
    paste_placeholder: re.Pattern[str] | None
    # The hook the agent sends first once ptysup's hooks reach it, before any turn can
    # end (SessionStart; opencode's Ready; aider's notification, its turn end): none by
    # a turn end means they do not reach it. None for an agent without hooks.
    first_hook: str | None

    def launch(
        self, base: Sequence[str], env: Mapping[str, str], hooks: Hooks | None, private: Path
    ) -> Launch:
        """The agent's command line and environment, ptysup's hooks wired in (`hooks` is
        None for a profile without them). `private`: a 0700 directory of this run's only,
        with no group- or world-writable parent, removed when the run ends."""
        ...

    def hook(self, event: HookEvent) -> HookEvent | None:
        """The agent's own hook in ptysup's vocabulary (Claude Code's names and payload
        keys), or None to ignore it. A waiting hook keeps its `reply`."""
        ...

    def ask(self, event: HookEvent) -> Ask | None:
        """The question in a translated, waiting hook, if it is the agent asking one."""
        ...

    def screen_state(self, snap: ScreenSnapshot) -> ScreenState:
        """Read the agent's state off its screen."""
        ...

    def input_has_text(self, snap: ScreenSnapshot) -> bool:
        """Whether typed text is visible in the agent's input (so Enter will submit it)."""
        ...

    def input_text(self, snap: ScreenSnapshot) -> str | None:
        """The text in the agent's input box as shown, if it can be read off the screen."""
        ...

    def api_error(self, snap: ScreenSnapshot) -> str | None:
        """The API error or usage-limit message on screen, if any."""
        ...

    def blocker(self, snap: ScreenSnapshot) -> Blocker | None:
        """A first-run screen or dialog on screen that only a person can answer, if any."""
        ...


class BaseProfile(AgentProfile):
    """What is assumed of an agent until its profile says otherwise: nothing known about
    it (no hooks, keys or commands; its screen unread), so that an agent's quirk is one
    line in its own profile. Every profile inherits it; the generic one is it alone."""

    name = "generic"
    uses_hooks = False
    ready_hook: str | None = None  # the screen alone tells it is ready
    exit_command: str | None = None
    dismiss_key: bytes = b""
    approve_key: bytes | None = None
    dismiss_reported = True
    draws_after_stop = True  # so the turn end waits for a quiet screen too
    hooks_running: re.Pattern[str] | None = None
    clear_input_keys: tuple[bytes, ...] = ()
    # Nothing is known of an agent's commands until its profile says: it is never typed
    # `/clear` (bash would run it), and its turns are not interrupted, only the agent ended.
    clear_command: str | None = None
    clear_starts_session = False  # the emptied input box confirms a clear
    interrupt_key: bytes | None = None
    interrupt_presses = 1  # one press stops the turn
    interrupt_armed: str | None = None
    suspend_notice: re.Pattern[bytes] | None = (
        None  # a program that suspends itself goes on at once
    )
    signal_osc: int | None = None
    command_leaders: tuple[str, ...] = LEADERS  # a leading space makes them text
    command_guard = GUARD
    paste_only = False  # plain text for an agent that never asks for a paste
    paste_placeholder: re.Pattern[str] | None = None
    first_hook: str | None = None  # no hooks

    def launch(
        self, base: Sequence[str], env: Mapping[str, str], hooks: Hooks | None, private: Path
    ) -> Launch:
        """The command line as the user gave it, in the environment as given."""
        return Launch(list(base), dict(env))

    def hook(self, event: HookEvent) -> HookEvent | None:
        """No hooks are wired in."""
        return None

    def ask(self, event: HookEvent) -> Ask | None:
        """The agent's questions are on its screen only."""
        return None

    def screen_state(self, snap: ScreenSnapshot) -> ScreenState:
        """Unknown: only the timing of output says anything."""
        return ScreenState.UNKNOWN

    def input_has_text(self, snap: ScreenSnapshot) -> bool:
        """Nothing can be read off the screen; assume the text arrived."""
        return True

    def input_text(self, snap: ScreenSnapshot) -> str | None:
        """Nothing can be read off the screen."""
        return None

    def api_error(self, snap: ScreenSnapshot) -> str | None:
        """Nothing is known about the agent's error messages."""
        return None

    def blocker(self, snap: ScreenSnapshot) -> Blocker | None:
        """Nothing is known about the agent's dialogs."""
        return None
