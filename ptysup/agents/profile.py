"""What the run loop needs to know about one kind of agent."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from ptysup.agents.events import ScreenState
from ptysup.agents.firstrun import Blocker

if TYPE_CHECKING:  # the screen model (pyte) loads after the agent started
    from ptysup.terminal.screen import ScreenSnapshot


class AgentProfile(Protocol):
    """The only place that knows a particular agent's screens and hooks."""

    name: str
    uses_hooks: bool
    exit_command: str | None  # typed to end the agent gracefully, if it has one
    dismiss_key: bytes  # closes a dialog without approving it
    clear_input_keys: tuple[bytes, ...]  # empties a non-empty input box
    clear_command: str | None  # starts a fresh conversation (budget stop, abort), if any
    interrupt_key: bytes | None  # stops the turn it is working on, if it has such a key
    # Printed when the agent suspended itself (Ctrl-Z) and waits for a SIGCONT, if it does.
    suspend_notice: bytes | None

    def argv(self, base: Sequence[str], hook_command: str | None) -> list[str]:
        """The command line to start the agent with (hooks wired in, if it has them)."""
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
