"""Screens that keep Claude Code from ever reaching its input box without a person.

Observed with Claude Code 2.1.197 started without a terminal on ptysup's side, offline:
- a folder never trusted: "Quick safety check: Is this a project you created or one you
  trust?" with `❯ 1. Yes, I trust this folder` / `2. No, exit`;
- an ANTHROPIC_API_KEY not approved yet: "Detected a custom API key in your environment …
  Do you want to use this API key?" with `❯ 2. No (recommended)` preselected;
- an empty config dir (no `.claude.json`): the onboarding's "Welcome to Claude Code" box,
  whose connection check fails offline ("Unable to connect to Anthropic services …
  ENOTFOUND") and exits with status 1;
- no key and no login: the input box is ready (with "Not logged in · Run /login" under
  it, drawn a moment later), and the first prompt ends in a StopFailure hook with
  `authentication_failed`: that is an error ptysup never waits out (see waits.py).

ptysup never answers any of them: it names the screen and the fix.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_CLAUDE_JSON = "~/.claude.json (or $CLAUDE_CONFIG_DIR/.claude.json)"
_SEE = 'see README "Running in CI"'


@dataclass(frozen=True)
class Blocker:
    """A screen that waits for a person: what it is, and how to get past it for good."""

    name: str
    fix: str
    agent: str = "Claude Code"
    see: str = _SEE  # where the docs say more

    def describe(self) -> str:
        """One line naming the screen and the fix."""
        return f"{self.agent} is waiting on its {self.name}; {self.fix}; {self.see}"


class AgentBlocked(TimeoutError):
    """The agent cannot become ready without a person answering `blocker`."""

    def __init__(self, blocker: Blocker) -> None:
        super().__init__(blocker.describe())
        self.blocker = blocker


TRUST = Blocker(
    "folder trust dialog",
    "run `claude` once in this folder and choose 'Yes, I trust this folder' "
    f'(or set projects["<this folder>"].hasTrustDialogAccepted: true in {_CLAUDE_JSON})',
)
API_KEY = Blocker(
    "API-key approval dialog",
    "approve the key once by running `claude` with the same ANTHROPIC_API_KEY and "
    f"answering Yes (or add its last 20 characters to customApiKeyResponses.approved in "
    f"{_CLAUDE_JSON})",
)
ONBOARDING = Blocker(
    "first-run onboarding",
    "run `claude` once in a terminal to finish onboarding "
    f"(or set hasCompletedOnboarding: true in {_CLAUDE_JSON})",
)
ONBOARDING_OFFLINE = Blocker(
    "first-run onboarding, whose connection check failed (Unable to connect to Anthropic services)",
    ONBOARDING.fix,
)
LOGIN = Blocker(
    "login screen",
    "set ANTHROPIC_API_KEY for the run, or run `claude` once and /login",
)
DIALOG = Blocker(
    "dialog",
    "answer it once by running `claude` in this folder, or start ptysup in a terminal and "
    "answer it there",
)

# Checked in this order: the first matching text names the screen.
_SCREENS: tuple[tuple[re.Pattern[str], Blocker], ...] = (
    (re.compile(r"Yes, I trust this folder|Is this a project you created or one you trust"), TRUST),
    (re.compile(r"Detected a custom API key|Do you want to use this API key\?"), API_KEY),
    (re.compile(r"Unable to connect to Anthropic services"), ONBOARDING_OFFLINE),
    (re.compile(r"Select login method"), LOGIN),
    (re.compile(r"Choose the text style|Welcome to Claude Code v\d"), ONBOARDING),
)
_CHOICE = re.compile(r"❯\s*\d+\.")


def first_screen(
    lines: Sequence[str], screens: Sequence[tuple[re.Pattern[str], Blocker]]
) -> Blocker | None:
    """The first of an agent's SCREENS (a text, the screen it shows) found in LINES."""
    text = "\n".join(lines)
    return next((blocker for pattern, blocker in screens if pattern.search(text)), None)


def claude_blocker(lines: Sequence[str]) -> Blocker | None:
    """The first-run screen or dialog Claude Code shows in `lines`, or None."""
    screen = first_screen(lines, _SCREENS)
    if screen is not None:
        return screen
    text = "\n".join(lines)
    if "Esc to cancel" in text and _CHOICE.search(text):
        return DIALOG
    return None
