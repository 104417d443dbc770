"""Any other CLI agent: no hooks; a turn ends when its screen has been quiet a while."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ptysup.agents.events import HookEvent, ScreenState
from ptysup.agents.firstrun import Blocker
from ptysup.agents.profile import Hooks, Launch
from ptysup.agents.questions import Ask
from ptysup.terminal.inject import GUARD, LEADERS

if TYPE_CHECKING:  # the screen model (pyte) loads after the agent started
    from ptysup.terminal.screen import ScreenSnapshot


class GenericProfile:
    """An agent ptysup knows nothing about: output means working, quiet means done."""

    name = "generic"
    uses_hooks = False
    ready_hook: str | None = None  # the screen alone tells it is ready
    dismiss_key: bytes = b""
    dismiss_reported = True  # never dismisses anything
    clear_input_keys: tuple[bytes, ...] = ()
    exit_command: str | None = None
    # Nothing is known about a generic agent's commands: it is never typed `/clear` (bash
    # would run it), and its turns are not interrupted, only the agent ended.
    clear_command: str | None = None
    clear_starts_session = False
    interrupt_key: bytes | None = None
    interrupt_presses = 1  # one press stops the turn
    interrupt_armed: str | None = None
    suspend_notice: bytes | None = None  # a program that suspends itself goes on at once
    signal_osc: int | None = None
    command_leaders: tuple[str, ...] = LEADERS
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
        """No hooks are wired into a generic agent."""
        return None

    def ask(self, event: HookEvent) -> Ask | None:
        """A generic agent's questions are on its screen only."""
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
        """Nothing is known about this agent's error messages."""
        return None

    def blocker(self, snap: ScreenSnapshot) -> Blocker | None:
        """Nothing is known about this agent's dialogs."""
        return None
