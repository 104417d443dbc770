"""aider: its notifications command for turn ends, its screen for the prompt and dialogs.

Observed with aider 0.86.2 (in tmux, against the fake model):
- it has no hooks; `--notifications-command CMD` runs CMD (through the shell, its output
  captured) once after each reply of the model, when it first waits for input again: at
  a `(Y)es/(N)o` confirmation if the reply asks one, else at its next prompt. It runs
  before the prompt is drawn, and carries nothing: ptysup's command line feeds the hook
  client a payload of its own, and the screen, once settled, tells a turn end from a
  confirmation;
- the prompt is `diff> ` (the edit format's name, `multi` added in multi-line mode, or
  `> ` alone), drawn under a full-width rule, the files in the chat listed between them;
  typed text goes on in lines that repeat the prompt, and the cursor stays in it;
- a confirmation is a line such as `Create new file? (Y)es/(N)o [Yes]: ` with the cursor
  at its end; its default is Yes, so a bare Enter approves: ptysup answers `n` and Enter;
- Ctrl+C stops a reply or empties the prompt, and prints `^C again to exit`: a second one
  within 2 s ends aider. `/clear` drops the chat history, `/exit` quits;
  `--restore-chat-history` reloads `.aider.chat.history.md`.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ptysup.agents.events import HookEvent, ScreenState
from ptysup.agents.firstrun import Blocker
from ptysup.agents.profile import BaseProfile, Hooks, Launch
from ptysup.agents.questions import Ask
from ptysup.terminal.inject import LEADERS

if TYPE_CHECKING:  # the screen model (pyte) loads after the agent started
    from ptysup.terminal.screen import ScreenSnapshot

NOTIFICATION = "Notification"  # what the notifications command reports
NOTIFICATION_TYPE = "aider_waits"
NOTIFY_FLAG = "--notifications-command"
# The run's hook token, in aider's environment: aider writes its command line, the
# notifications command with it, into its chat history, a file in the project.
RESTORE_FLAG = "--restore-chat-history"
SANE_TERM = "xterm-256color"
# The switches an unattended start needs, each left out when the person gave it or its
# opposite on the command line (they win over a config file's): no question about
# .gitignore, no model warning (a local or unknown model asks to open its
# documentation), no release notes, no analytics opt-in, no update check; and the input
# ptysup types into: the prompt_toolkit prompt (a bare `input()` would take a pasted
# message line by line), where Enter submits (in multi-line mode it breaks the line).
SWITCHES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("--no-gitignore", ("--gitignore",)),
    ("--no-show-model-warnings", ("--show-model-warnings",)),
    ("--no-show-release-notes", ("--show-release-notes",)),
    ("--analytics-disable", ("--analytics", "--no-analytics")),
    ("--no-check-update", ("--check-update", "--just-check-update")),
    ("--fancy-input", ("--no-fancy-input",)),
    ("--no-multiline", ("--multiline",)),
)

# What aider keeps in the repository's top for itself (0.86.2): its chat and input
# histories (the chat's holds its command line, ptysup's notifications command with it),
# the model's log if asked for, its repository map's cache. ptysup passes --no-gitignore,
# so aider never adds them to .gitignore (it would ask first): ptysup's commits leave them.
OWN_FILES = (
    "**/.aider.chat.history.md",
    "**/.aider.input.history",
    "**/.aider.llm.history",
    "**/.aider.tags.cache.v*/**",
)

_RULE = re.compile(r"^─{10,}\s*$")
_PROMPT = re.compile(r"^(?:[a-z-]+(?: multi)?|multi)?> ?(.*)$")
_CONFIRM = re.compile(r"\[(?:Yes|No)\]:\s*$")  # the default's answer ends the question
_ASKS = re.compile(r"\(Y\)es/\(N\)o")

_AGENT = "aider"
_SEE = "see docs/agents.md, aider"
CONFIRMATION = Blocker(
    "confirmation",
    "answer it once by running `aider` in this folder (or give the flag that skips it), "
    "or start ptysup in a terminal",
    _AGENT,
    _SEE,
)


class AiderProfile(BaseProfile):
    """aider's prompt_toolkit terminal UI."""

    name = "aider"
    uses_hooks = True  # its notifications command, through the hook channel
    dismiss_key: bytes = b"n\r"  # "No" to a confirmation (its default is Yes)
    draws_after_stop = True  # its notification command runs before its prompt is drawn
    dismiss_reported = True  # it has no approval hook: its confirmations are its screen's
    paste_only = False  # it reads a line: keys typed before its prompt wait in the line
    clear_input_keys: tuple[bytes, ...] = (b"\x03",)  # Ctrl+C drops the prompt's text
    exit_command: str | None = "/exit"
    clear_command: str | None = "/clear"
    interrupt_key: bytes | None = b"\x03"  # Ctrl+C stops the model's reply
    # `{` alone (or `{tag`) on the first line starts its multi-line input; a leading
    # space makes each of them text (aider strips only line ends).
    command_leaders: tuple[str, ...] = (*LEADERS, "{")
    # Its first notification comes with the model's first reply, not before.
    first_hook: str | None = NOTIFICATION

    def __init__(self, session_id: str | None = None, reopen: bool = False) -> None:
        # aider has no conversation id: this one only names the run's notifications.
        self.session_id = session_id or str(uuid.uuid4())
        self.reopen = reopen

    def argv(self, base: Sequence[str], notify: str | None) -> list[str]:
        """aider's command line with the first-run switches the person did not give, the
        chat history restored when a run is resumed, and NOTIFY (ptysup's notifications
        command, before the person's own if they gave one)."""
        argv, theirs = _without_notify(base)
        given = {a.split("=", 1)[0] for a in argv[1:]}
        for flag, opposites in SWITCHES:
            if flag not in given and not given.intersection(opposites):
                argv.append(flag)
        if self.reopen and RESTORE_FLAG not in given and "--no-restore-chat-history" not in given:
            argv.append(RESTORE_FLAG)
        if notify is not None:
            command = notify if theirs is None else f"{notify}; {theirs}"
            argv += ["--notifications", NOTIFY_FLAG, command]
        elif theirs is not None:
            argv += [NOTIFY_FLAG, theirs]
        return argv

    def notify_command(self, hooks: Hooks) -> str:
        """The shell command aider runs when it waits: the hook client, fed a payload that
        names the event and this run's session (aider gives none). The command names only
        the hook channel's private address file: aider keeps it in its chat history."""
        payload = {
            "hook_event_name": NOTIFICATION,
            "notification_type": NOTIFICATION_TYPE,
            "session_id": self.session_id,
        }
        client = hooks.command()
        return f"printf '%s' {shlex.quote(json.dumps(payload))} | {client}"

    def launch(
        self, base: Sequence[str], env: Mapping[str, str], hooks: Hooks | None, private: Path
    ) -> Launch:
        """The command line with the first-run switches and the notifications command, in
        an environment with a TERM aider draws its prompt in: with TERM
        dumb or unset (CI runners) it falls back to a bare `input()`, with no rule and no
        bracketed paste, whereas ptysup's terminal is an xterm's."""
        notify = self.notify_command(hooks) if hooks is not None else None
        fixed = dict(env)
        if fixed.get("TERM", "dumb") in ("", "dumb"):
            fixed["TERM"] = SANE_TERM
        return Launch(self.argv(base, notify), fixed)

    def hook(self, event: HookEvent) -> HookEvent | None:
        """aider's notification is its turn's end: a Stop. Whether it waits at its prompt
        or at a confirmation, its screen tells once it settled (see AgentSession)."""
        if event.name != NOTIFICATION:
            return None
        payload = {**event.payload, "hook_event_name": "Stop"}
        return HookEvent("Stop", payload, event.ts, event.reply)

    def ask(self, event: HookEvent) -> Ask | None:
        """aider has no question tool: its questions are on its screen."""
        return None

    def screen_state(self, snap: ScreenSnapshot) -> ScreenState:
        """A confirmation or the prompt where the cursor is; anything else is aider at work
        (starting, streaming a reply, applying edits)."""
        if confirmation(snap) is not None:
            return ScreenState.DIALOG
        if _prompt_lines(snap) is not None:
            return ScreenState.READY
        return ScreenState.WORKING if snap.text().strip() else ScreenState.UNKNOWN

    def input_has_text(self, snap: ScreenSnapshot) -> bool:
        """Whether the prompt shows typed or pasted text."""
        return bool(self.input_text(snap))

    def input_text(self, snap: ScreenSnapshot) -> str | None:
        """The prompt's text, every line of it; None when the prompt is not on screen."""
        lines = _prompt_lines(snap)
        if lines is None:
            return None
        texts = []
        for line in lines:
            m = _PROMPT.match(line)
            texts.append((m.group(1) if m else line).rstrip())
        return "\n".join(texts).strip()

    def api_error(self, snap: ScreenSnapshot) -> str | None:
        """aider retries API errors itself and shows them as it goes: none is read here."""
        return None

    def blocker(self, snap: ScreenSnapshot) -> Blocker | None:
        """A confirmation on screen before the first prompt, named by its question: a
        first-run question no switch was given for (no git repository, no API key...)."""
        asked = confirmation(snap)
        if asked is None:
            return None
        return dataclasses.replace(CONFIRMATION, name=f'confirmation "{asked}"')


def confirmation(snap: ScreenSnapshot) -> str | None:
    """The confirmation aider waits on, as shown (its question and choices), if any: the
    cursor ends its last line. A long question wraps, so its start may be a few lines up."""
    row = snap.cursor[0]
    if not 0 <= row < len(snap.lines) or not _CONFIRM.search(snap.lines[row].rstrip() + " "):
        return None
    for start in range(row, max(-1, row - 4), -1):
        shown = "".join(line.rstrip() for line in snap.lines[start : row + 1])
        if _ASKS.search(shown):
            return shown
    return None


def _prompt_lines(snap: ScreenSnapshot) -> list[str] | None:
    """The prompt's lines (each starts with the prompt) down to the cursor's, when the
    cursor is in the prompt drawn under aider's rule (the chat's files may sit between;
    with `--no-pretty` the rule is an empty line)."""
    lines, row = snap.lines, snap.cursor[0]
    if not 0 <= row < len(lines) or not _PROMPT.match(lines[row]):
        return None
    first = row
    while first > 0 and _PROMPT.match(lines[first - 1]):
        first -= 1
    above = first - 1
    while above >= 0 and lines[above].strip() and not _RULE.match(lines[above]):
        above -= 1  # the files in the chat, listed under the rule
    if above < 0 < first:
        return None  # text up to the screen's top: no rule or empty line above the prompt
    return list(lines[first : row + 1])


def _without_notify(base: Sequence[str]) -> tuple[list[str], str | None]:
    """BASE without its --notifications-command, and that command (the last one given)."""
    argv: list[str] = []
    theirs = None
    items = iter(base)
    for arg in items:
        if arg == NOTIFY_FLAG:
            theirs = next(items, None)
        elif arg.startswith(NOTIFY_FLAG + "="):
            theirs = arg.split("=", 1)[1]
        else:
            argv.append(arg)
    return argv, theirs
