"""Claude Code: hooks for exact turn ends, its screen for readiness and dialogs."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping, Sequence
from glob import escape as glob_escape
from pathlib import Path
from typing import TYPE_CHECKING

from ptysup.agents import saved
from ptysup.agents.claude.paste import unwrap_pastes
from ptysup.agents.events import HOOK_NAMES, HookEvent, ScreenState
from ptysup.agents.firstrun import Blocker, claude_blocker
from ptysup.agents.profile import BaseProfile, Hooks, Launch
from ptysup.agents.questions import ASK_TOOL, Ask, ask_from

if TYPE_CHECKING:  # the screen model (pyte) loads after the agent started
    from ptysup.terminal.screen import ScreenSnapshot

# The hooks ptysup listens to: its vocabulary is Claude Code's names.
HOOKS = HOOK_NAMES
# A command line that already picks the conversation keeps its choice.
_SESSION_FLAGS = {"--session-id", "--resume", "-r", "--continue", "-c", "--fork-session"}
_MESSAGES = frozenset({"user", "assistant"})  # a transcript's lines that are messages
_TOOL_HOOKS = {"PostToolUse", "PostToolUseFailure", "PermissionRequest"}
# The question tool, answered by a PreToolUse hook that waits for ptysup's reply. ptysup
# replies on every way out (and a dead ptysup closes the socket), so the long wait only
# bounds a hung ptysup; Claude Code's own hook timeout is set a little longer.
ASK_WAIT_S = 86_400

# Observed with Claude Code 2.1.x: the terminal title starts with ✳ whenever it waits for
# the person, and cycles braille spinner glyphs while it works.
_WAITING_GLYPH = "✳"
_BRAILLE = re.compile(r"^[\u2800-\u28ff]")
_RULE = re.compile(r"^\s*─{10,}\s*$")
_DIALOG_CHOICE = re.compile(r"❯\s*1\.")
# The spinner while the Stop hook runs: `✶ Cascading… (running stop hook · 0s · ↓ 11 tokens)`.
_STOP_HOOK = re.compile(r"…\s+\(running stop hook")
# One search per keyword, no leading `.*`: that alternation took quadratic time per line.
_ERROR_AT = re.compile(r"API Error:|Context limit reached", re.IGNORECASE)
_LIMIT = re.compile(r"\b(?:rate limit|usage limit|limit reached|overloaded)\b", re.IGNORECASE)
_RESET = re.compile(r"reset", re.IGNORECASE)
_USAGE_LIMIT = re.compile(r"\busage limit\b", re.IGNORECASE)
_MAX_WRAP = 3  # lines an error message may wrap onto
_NEW_BLOCK = frozenset("●⎿❯─╭│╰✢✳✶✻✽")


def settings_json(hook_command: str) -> str:
    """The --settings JSON that makes Claude Code report every hook to ptysup, and its
    status line data (the session's cost): the client prints nothing, so Claude Code
    draws no status line and its screen is as without ptysup."""
    entry = [{"type": "command", "command": hook_command}]
    hooks: dict[str, list[dict[str, object]]] = {
        name: [{"matcher": "*", "hooks": entry} if name in _TOOL_HOOKS else {"hooks": entry}]
        for name in HOOKS
    }
    # The hook client's optional last argument makes it a request that waits for a reply.
    ask = {"type": "command", "command": f"{hook_command} {ASK_WAIT_S}", "timeout": ASK_WAIT_S + 60}
    hooks["PreToolUse"] = [{"matcher": ASK_TOOL, "hooks": [ask]}]
    status_line = {"type": "command", "command": hook_command}
    return json.dumps({"hooks": hooks, "statusLine": status_line}, separators=(",", ":"))


class ClaudeProfile(BaseProfile):
    """Claude Code's TUI."""

    name = "claude"
    uses_hooks = True
    dismiss_key: bytes = b"\x1b"  # Esc: rejects a dialog, never approves it
    # Enter: the dialog reads as one only with its cursor on 1. (Yes), which Enter picks.
    approve_key: bytes | None = b"\r"
    dismiss_reported = True  # "The user doesn't want to proceed with this tool use"
    draws_after_stop = True  # the ✳ title and "Worked for" line come once the Stop hook exited
    clear_input_keys: tuple[bytes, ...] = (b"\x1b", b"\x1b")  # Esc twice clears the input box
    # The trailing space closes the slash-command menu that typing `/exit` opens (2.1.197):
    # Claude Code exits without drawing again, so the menu was left on the person's screen.
    # Enter still runs /exit.
    exit_command: str | None = "/exit "
    clear_command: str | None = "/clear"
    clear_starts_session = True
    interrupt_key: bytes | None = b"\x1b"  # Esc while working ends the turn
    # Ctrl-Z: Claude Code leaves raw mode, prints this, stops itself and resumes on SIGCONT
    # (observed with 2.1.197: "has been suspended."; 2.1.332: "is suspended. Run `fg` to
    # bring it back."). Under ptysup the stop is dropped (its process group has no parent in
    # the session: orphaned), so it waits, keyboard off, for a `fg` no shell gives.
    suspend_notice: re.Pattern[bytes] | None = re.compile(
        rb"Claude Code (?:has been|is) suspended\."
    )
    paste_only = True  # `!` typed into an empty box switches it to shell mode
    paste_placeholder: re.Pattern[str] | None = re.compile(r"\[Pasted text #\d+[^\]]*\]")
    first_hook: str | None = "SessionStart"  # its SessionStart comes at start

    def __init__(self, session_id: str | None = None, resume: bool = False) -> None:
        # ptysup picks the conversation's id, so that a resumed run reopens the same one
        # (`--resume <id>`; `--continue` would take the newest session in the directory).
        self.session_id = session_id
        self.resume = resume

    def launch(
        self, base: Sequence[str], env: Mapping[str, str], hooks: Hooks | None, private: Path
    ) -> Launch:
        """Claude Code's command line (`argv`), in the environment as given."""
        return Launch(self.argv(base, hooks.command() if hooks else None), dict(env))

    def hook(self, event: HookEvent) -> HookEvent | None:
        """Claude Code's hooks are ptysup's vocabulary as they are, but for a prompt's
        pasted text, whose wrapper newer releases add is taken off (so an instruction
        ptysup typed is known as its own, not taken for the person's)."""
        prompt = event.payload.get("prompt")
        if event.name != "UserPromptSubmit" or not isinstance(prompt, str):
            return event
        unwrapped = unwrap_pastes(prompt)
        if unwrapped == prompt:
            return event
        return HookEvent(event.name, {**event.payload, "prompt": unwrapped}, event.ts, event.reply)

    def ask(self, event: HookEvent) -> Ask | None:
        """AskUserQuestion, answered through the waiting PreToolUse hook."""
        return ask_from(event)

    def argv(self, base: Sequence[str], hook_command: str | None) -> list[str]:
        """Claude Code's command line with ptysup's hooks added through --settings, and
        the conversation's session id (new, or the one to resume)."""
        argv = list(base)
        if hook_command is not None:
            # Launch options are not restored by --resume: they are passed every time.
            argv += ["--settings", settings_json(hook_command)]
        if self.session_id is not None and not _SESSION_FLAGS.intersection(base):
            argv += ["--resume" if self.resume else "--session-id", self.session_id]
        return argv

    def screen_state(self, snap: ScreenSnapshot) -> ScreenState:
        """Dialog first (its title also says 'waiting'), then the title glyph, then the box."""
        lines = snap.lines
        if any("Esc to cancel" in line for line in lines) and any(
            _DIALOG_CHOICE.search(line) for line in lines
        ):
            return ScreenState.DIALOG
        title = snap.title.lstrip()
        # Claude Code 2.1.197 writes the ✳ title in its own write a few ms before the
        # repaint that removes the spinner and its `esc to interrupt` hint (recorded at
        # every turn end and just before a permission dialog is drawn): while the hint is
        # still on screen the turn is not over yet. Nor while the spinner says the Stop
        # hook runs (it has no hint then): on a loaded machine the title came up to 0.3 s
        # before the frame that ends the turn (fixtures/transcripts/stop_hook_loaded.cast).
        interruptible = any("esc to interrupt" in line or _STOP_HOOK.search(line) for line in lines)
        if title.startswith(_WAITING_GLYPH) and not interruptible:
            return ScreenState.READY
        if _BRAILLE.match(title) or interruptible:
            return ScreenState.WORKING
        if _input_text(lines) == "":
            return ScreenState.READY
        return ScreenState.UNKNOWN

    def input_has_text(self, snap: ScreenSnapshot) -> bool:
        """Whether the input box shows typed or pasted text (the paste has landed)."""
        return bool(_input_text(snap.lines))

    def input_text(self, snap: ScreenSnapshot) -> str | None:
        """The input box's text, every line of it when the box's closing rule is on screen."""
        return _input_text(snap.lines, whole=True)

    def api_error(self, snap: ScreenSnapshot) -> str | None:
        """The last API error / usage-limit message on screen, with the lines it wrapped
        onto (a reset time is often on the next one)."""
        lines = snap.lines
        for i in range(len(lines) - 1, -1, -1):
            found = _error_on(lines[i])
            if found:
                wrapped = itertools.takewhile(_continues, lines[i + 1 : i + 1 + _MAX_WRAP])
                return " ".join([found.strip(" ●⎿"), *(w.strip() for w in wrapped)])
        return None

    def blocker(self, snap: ScreenSnapshot) -> Blocker | None:
        """A first-run screen (trust, API key, onboarding, login) or another dialog."""
        return claude_blocker(snap.lines)


def conversation_saved(session_id: str, env: Mapping[str, str]) -> bool:
    """Whether Claude Code saved a message of conversation `session_id`, so `--resume` can
    reopen it.

    Claude Code 2.1.197 writes `<config dir>/projects/<folder>/<id>.jsonl` a moment after
    the first prompt, its metadata first (`ai-title`, `mode`, `permission-mode`,
    `last-prompt`) and the prompt (a `user` line) about 0.1 s later. Seen for real: killed
    at the model's first request, the file held metadata alone, and `--resume` ended Claude
    Code at once ("No conversation found"), on every resume."""
    projects = saved.home(env, "CLAUDE_CONFIG_DIR", ".claude") / "projects"
    found = projects.glob(f"*/{glob_escape(session_id)}.jsonl")
    return saved.holds_message(found, _MESSAGES)


def _input_text(lines: Sequence[str], whole: bool = False) -> str | None:
    """The text in the input box (a `❯` line right under a full-width rule), or None.
    `whole`: with the lines after it, up to the box's closing rule (if it is on screen:
    otherwise they could be the footer).

    The live box is the lowest one: after Ctrl-Z, Claude Code 2.1.197 redraws its whole
    screen below its suspend notice, and the old, empty box stays on screen above it
    (recorded: an interrupted prompt put back in the new box was read as an empty box,
    and /exit was typed after it)."""
    for i in range(len(lines) - 2, -1, -1):
        above, below = lines[i], lines[i + 1]
        if _RULE.match(above) and below.lstrip().startswith("❯"):
            first = below.lstrip()[1:].strip()
            if first in _PLACEHOLDERS:
                return ""
            rest = lines[i + 2 :]
            end = next((n for n, line in enumerate(rest) if _RULE.match(line)), None)
            if not whole or end is None:
                return first
            return "\n".join([first, *(line.strip() for line in rest[:end])]).strip()
    return None


# What the empty input box shows, dimmed, until a key is pressed (2.1.332; the screen
# model keeps no attributes, so it is known by its words): after an API error, and while
# a message the person sent during the turn waits its turn. Read as text, the first was
# "cleared" with Esc Esc, which opens 2.1.332's Rewind menu on an empty box, and the next
# instruction never showed in the box; the second was taken for the person typing, and
# the decision waited for them.
_PLACEHOLDERS = frozenset({"Resend your message to try again", "Press up to edit queued messages"})


def _continues(line: str) -> bool:
    """Whether a screen line goes on with the message above it: indented text, not a blank,
    a new item (● ⎿), the input box or a spinner."""
    text = line.strip()
    return line.startswith(" ") and bool(text) and text[0] not in _NEW_BLOCK


def _error_on(line: str) -> str | None:
    """The API error or usage-limit text on one line, or None."""
    limit = _LIMIT.search(line)
    if limit and (_RESET.search(line, limit.end()) or _USAGE_LIMIT.search(line, limit.start())):
        return line
    m = _ERROR_AT.search(line)
    return line[m.start() :] if m else None
