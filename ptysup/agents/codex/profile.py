"""Codex CLI: hooks given on its command line, its in-band state report, its screen.

Observed with Codex CLI 0.169.0 (see docs/agents.md for the whole list):
- hooks: `-c 'hooks.EVENT=[...]'` options add ptysup's hooks to whatever the person
  configured; each needs trust, which `--dangerously-bypass-hook-trust` grants (else the
  "Hooks need review" dialog opens). Payloads are Claude Code's: `hook_event_name`,
  `session_id`, `source`, `prompt`, `tool_name`/`tool_input`/`tool_response`,
  `last_assistant_message`. There is no StopFailure: an API error ends the turn with no
  Stop, the screen tells.
- `SessionStart` comes with the first prompt of a conversation, not when Codex starts,
  and after /clear or /new only with the next prompt (source `clear`).
- OSC 7501 `state=<idle|working|done|error|blocked>:app=codex[:kind=permission|question]`
  in its output at every change; an Esc-interrupted turn goes working → idle, an API
  error working → error, both with no Stop. Nothing is reported before a first-run
  dialog is answered.
- the default background daemon outlives the TUI: `--no-daemon` keeps everything in the
  one process; TERM=dumb makes it refuse to start.
- `request_user_input` is "unavailable in Default mode" (it answers the model so without
  a picker) but its PreToolUse hook runs first, and a deny's reason reaches the model as
  the tool's output: that is how the supervisor's answer gets there. `updatedInput`
  changes only the questions, never the tool's answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from glob import escape as glob_escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ptysup.agents import saved
from ptysup.agents.codex.judge import is_codex
from ptysup.agents.events import HookEvent, ScreenState
from ptysup.agents.firstrun import Blocker, first_screen
from ptysup.agents.profile import BaseProfile, Hooks, Launch
from ptysup.agents.questions import Ask, ask_from

__all__ = ["CodexProfile", "is_codex"]

if TYPE_CHECKING:  # the screen model (pyte) loads after the agent started
    from ptysup.terminal.screen import ScreenSnapshot

ASK_TOOL = "request_user_input"
SIGNAL_OSC = 7501
# The hooks ptysup listens to (Codex's names are Claude Code's).
HOOKS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "PermissionRequest", "Stop")
# ptysup replies to a question on every way out (a dead ptysup closes the socket), so the
# long wait only bounds a hung ptysup; Codex's own timeout for the hook is a little longer.
ASK_WAIT_S = 86_400
NO_DAEMON = "--no-daemon"
BYPASS_HOOK_TRUST = "--dangerously-bypass-hook-trust"
SUBCOMMANDS = frozenset({"resume", "fork", "exec", "e", "review", "login", "logout", "mcp"})
SANE_TERM = "xterm-256color"

_BOX = "› "  # the composer's prompt glyph; sent prompts in the transcript show it too
# The composer's placeholders (grey) when it is empty (from the 0.169 binary's strings).
_PLACEHOLDERS = frozenset({"Ask Codex to do anything", "Ask a follow-up question"})
_DIALOG = re.compile(
    r"Press enter to confirm or esc to cancel|Would you like to run the following command\?"
    r"|Would you like to make the following edits\?|enter to submit answer"
)
_CHOICE = re.compile(r"^›\s*\d+\.")
_WORKING = "esc to interrupt"
# The reports of a Codex waiting for input: after start or an interrupt, after a turn, and
# after a turn that ended on an API error (no Stop hook then).
_WAITING = frozenset({"idle", "done", "error"})
_ERROR = "■ "
_INTERRUPTED = "■ Conversation interrupted"

_SEE = 'see docs "Agents"'
TRUST = Blocker(
    "folder trust dialog",
    "run `codex` once in this folder and choose 'Trust and continue' (or add "
    '[projects."<this folder>"] trust_level = "trusted" to ~/.codex/config.toml)',
    agent="Codex",
    see=_SEE,
)
HOOK_REVIEW = Blocker(
    "hook review dialog",
    "review the hooks once by running `codex` and /hooks",
    agent="Codex",
    see=_SEE,
)
LOGIN = Blocker(
    "sign-in screen",
    "run `codex login` once, or configure a model provider with an API key",
    agent="Codex",
    see=_SEE,
)
DIALOG = Blocker(
    "dialog",
    "start ptysup in a terminal and answer it there",
    agent="Codex",
    see=_SEE,
)
_SCREENS: tuple[tuple[re.Pattern[str], Blocker], ...] = (
    (re.compile(r"Trust this folder\?"), TRUST),
    (re.compile(r"Hooks need review"), HOOK_REVIEW),
    (re.compile(r"Sign in with ChatGPT"), LOGIN),
)


def hook_options(command: str, ask_command: str) -> list[str]:
    """The `-c` options that make Codex report every hook ptysup uses to COMMAND, and
    send its questions to ASK_COMMAND (which waits for the supervisor's answer)."""
    options: list[str] = []
    for name in HOOKS:
        handler = f"{{type={_toml('command')},command={_toml(command)}}}"
        options += ["-c", f"hooks.{name}=[{{hooks=[{handler}]}}]"]
    ask = (
        f"{{matcher={_toml(ASK_TOOL)},hooks=[{{type={_toml('command')},"
        f"command={_toml(ask_command)},timeout={ASK_WAIT_S + 60}}}]}}"
    )
    return [*options, "-c", f"hooks.PreToolUse=[{ask}]"]


def _toml(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(text, ensure_ascii=False)


def parse_signal(payload: str) -> dict[str, str]:
    """OSC 7501's `state=working:app=codex:kind=permission` as fields."""
    fields: dict[str, str] = {}
    for part in payload.split(":"):
        key, sep, value = part.partition("=")
        if sep:
            fields[key.strip()] = value.strip()
    return fields


class CodexAnswers:
    """How Codex's question hook carries an answer: only as a deny whose reason the model
    reads as the tool's output ("Tool call blocked by PreToolUse hook: <reason>")."""

    def answer(self, tool_input: Mapping[str, Any], answers: Mapping[str, str]) -> str:
        """The hook's output that gives the model ANSWERS (question text → answer)."""
        said = "; ".join(f"{question!r}: {answer}" for question, answer in answers.items())
        return self.deny(f"The user answered (no picker was shown): {said}")

    def deny(self, reason: str) -> str:
        """The hook's output that refuses the question; the model reads REASON."""
        out = {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        }
        return json.dumps(out, ensure_ascii=False)


CODEX_ANSWERS = CodexAnswers()


def conversation_saved(session_id: str, env: Mapping[str, str]) -> bool:
    """Whether Codex saved conversation `session_id`, so `codex resume <id>` can reopen it:
    `<CODEX_HOME>/sessions/<y>/<m>/<d>/rollout-<time>-<id>.jsonl` with a message in it.
    Codex picks the id at its first prompt; a run killed before ptysup learnt it still has
    ptysup's own, which Codex never saw: seen with 0.169.0, `codex resume <that id>`
    ended at once ("No saved session found with ID …"), exit 1."""
    sessions = saved.home(env, "CODEX_HOME", ".codex") / "sessions"
    found = sessions.glob(f"*/*/*/rollout-*-{glob_escape(session_id)}.jsonl")
    return saved.holds_message(found, frozenset({"response_item"}))


class CodexProfile(BaseProfile):
    """Codex CLI's TUI."""

    name = "codex"
    uses_hooks = True
    signal_osc: int | None = SIGNAL_OSC
    dismiss_key: bytes = b"\x1b"  # Esc: "No, and tell Codex what to do differently"
    dismiss_reported = True  # the call's output reads "aborted by user"
    # Ctrl-C empties a composer with text (Ctrl-U only the line the cursor is on).
    clear_input_keys: tuple[bytes, ...] = (b"\x03",)
    exit_command: str | None = "/exit"
    clear_command: str | None = "/clear"
    interrupt_key: bytes | None = b"\x1b"
    paste_only = True
    paste_placeholder: re.Pattern[str] | None = re.compile(r"\[Pasted Content \d+ chars\]")
    first_hook: str | None = "SessionStart"  # with the first prompt

    def __init__(self, session_id: str | None = None, reopen: bool = False) -> None:
        # Codex picks the conversation's id itself: ptysup learns it from SessionStart
        # and reopens it with `codex resume <id>`.
        self.session_id = session_id
        self.reopen = reopen

    def launch(
        self, base: Sequence[str], env: Mapping[str, str], hooks: Hooks | None, private: Path
    ) -> Launch:
        """Codex's command line (`argv`) in the environment as given, with a TERM it
        starts with."""
        hook_command = hooks.command() if hooks is not None else None
        return Launch(self.argv(base, hook_command), self.environment(env))

    def hook(self, event: HookEvent) -> HookEvent | None:
        """Codex's hooks carry Claude Code's names and payload keys already."""
        return event

    def ask(self, event: HookEvent) -> Ask | None:
        """request_user_input, answered through the waiting PreToolUse hook's deny."""
        return ask_from(event, ASK_TOOL, CODEX_ANSWERS)

    def argv(self, base: Sequence[str], hook_command: str | None) -> list[str]:
        """Codex's command line: `resume <id>` when reopening, the person's options, then
        `--no-daemon` and ptysup's hooks (with the trust switch they need)."""
        program, rest = list(base[:1]), list(base[1:])
        has_subcommand = bool(rest) and rest[0] in SUBCOMMANDS
        if self.reopen and self.session_id and not has_subcommand:
            rest = ["resume", self.session_id, *rest]
        argv = [*program, *rest]
        if NO_DAEMON not in argv:
            argv.append(NO_DAEMON)
        if hook_command is not None:
            argv.append(BYPASS_HOOK_TRUST)
            argv += hook_options(hook_command, f"{hook_command} {ASK_WAIT_S}")
        return argv

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """Codex refuses to start its TUI with TERM=dumb (CI runners set it) and needs
        a TERM: a terminal it knows, when the given one is dumb or unset."""
        fixed = dict(env)
        if fixed.get("TERM", "dumb") in ("", "dumb"):
            fixed["TERM"] = SANE_TERM
        return fixed

    def screen_state(self, snap: ScreenSnapshot) -> ScreenState:
        """Codex's own report (OSC 7501) first, then its screen. Ready needs the report:
        Codex draws its input box for a moment before a first-run dialog (folder trust)
        replaces it, and reports `idle` only once it really waits for input."""
        state = parse_signal(snap.signal).get("state")
        if state == "blocked":
            return ScreenState.DIALOG
        if state == "working":
            return ScreenState.WORKING
        lines = snap.lines
        if _dialog_on(lines):
            return ScreenState.DIALOG
        if state is None and any(_WORKING in line for line in lines):
            return ScreenState.WORKING
        if state in _WAITING and _box_row(lines) is not None:
            return ScreenState.READY
        return ScreenState.UNKNOWN

    def input_has_text(self, snap: ScreenSnapshot) -> bool:
        """Whether the composer shows typed or pasted text (not its grey placeholder)."""
        return bool(_input_text(snap))

    def input_text(self, snap: ScreenSnapshot) -> str | None:
        """The composer's text, every line of it; "" when empty, None when not shown."""
        return _input_text(snap, whole=True)

    def api_error(self, snap: ScreenSnapshot) -> str | None:
        """The error Codex printed for the last prompt (`■ exceeded retry limit, last
        status: 429 …`), not an interrupt's `■ Conversation interrupted`."""
        lines = snap.lines
        box = _box_row(lines)
        end = box if box is not None else len(lines)
        prompt = next((i for i in range(end - 1, -1, -1) if lines[i].startswith(_BOX)), -1)
        for line in reversed(lines[prompt + 1 : end]):
            if line.startswith(_ERROR):
                return None if line.startswith(_INTERRUPTED) else line[len(_ERROR) :].strip()
        return None

    def blocker(self, snap: ScreenSnapshot) -> Blocker | None:
        """A first-run screen (folder trust, hook review, sign-in) or another dialog."""
        screen = first_screen(snap.lines, _SCREENS)
        if screen is not None:
            return screen
        return DIALOG if _dialog_on(snap.lines) else None


def _dialog_on(lines: Sequence[str]) -> bool:
    text = "\n".join(lines)
    return bool(_DIALOG.search(text)) and any(_CHOICE.match(line) for line in lines)


def _box_row(lines: Sequence[str]) -> int | None:
    """The composer's row: the lowest `› ` line, unless a dialog's choices are showing."""
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith(_BOX):
            return None if _CHOICE.match(lines[i]) else i
    return None


def _input_text(snap: ScreenSnapshot, whole: bool = False) -> str | None:
    """The composer's text, or None when it is not on screen. Its grey placeholder reads
    as empty (the screen model keeps no colours: it is known by its words)."""
    lines = snap.lines
    row = _box_row(lines)
    if row is None:
        return None
    first = lines[row][len(_BOX) :].rstrip()
    if first in _PLACEHOLDERS:
        return ""
    if not whole:
        return first
    # Below the first line: the text's other lines (indented; a blank line of the text
    # blank too), then a blank line and the footer (model · folder, shortcuts) to the
    # screen's end. A message with blank lines in it (a check's output) goes on past them.
    below = [line.rstrip() for line in lines[row + 1 :]]
    while below and not below[-1]:
        below.pop()
    footer = max((i for i, line in enumerate(below) if not line), default=len(below))
    rest = below[:footer]
    if any(line and not line.startswith("  ") for line in rest):
        rest = rest[: next(i for i, line in enumerate(rest) if line and not line.startswith("  "))]
    return "\n".join([first, *(line[2:] for line in rest)]).strip()
