"""Qwen Code: its Stop hook for exact turn ends, its screen for readiness and dialogs.

Observed with Qwen Code 0.24.4 (in tmux, against the fake model):
- hooks carry Claude Code's names and payloads (`Stop` with `last_assistant_message`,
  `PermissionRequest`, `Notification` `idle_prompt`/`permission_prompt`, …); a tool's
  result is followed by a `UserPromptSubmit` with an empty prompt (the continuation, not
  a prompt), and `PreToolUse` comes only after a dialog was answered;
- the question tool `ask_user_question` goes through `PermissionRequest`, whose output
  (`hookSpecificOutput.decision`) can allow or deny the call;
- the input box is the line starting `> ` between two full-width rules; empty, it shows
  the placeholder `Type your message or @path/to/file`; typed text ends in a zero-width
  space (the cursor) and goes on in lines indented by two spaces; it stays on screen
  while a turn runs (text typed then steers the turn);
- while a turn runs, a spinner line ends in `(1s · esc to cancel)`, and the terminal
  title starts with a spinner glyph (`◐︎ Qwen - <folder>`); a dialog (an approval:
  `Allow execution of: 'echo'?`, `Apply this change?`; a question) replaces the input box,
  its first choice marked `› 1.` or `❯ 1.`, and the title starts `✳︎`;
- Esc cancels a turn, and at a dialog picks "No, suggest changes"; Ctrl+C empties a
  non-empty input box; `/quit` exits and prints `qwen --resume <id>`.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from glob import escape as glob_escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ptysup.agents import saved
from ptysup.agents.events import HookEvent, ScreenState
from ptysup.agents.firstrun import Blocker, first_screen
from ptysup.agents.profile import BaseProfile, Hooks, Launch
from ptysup.agents.questions import Ask, ask_from
from ptysup.agents.qwen import settings
from ptysup.agents.shellenv import under_a_shell
from ptysup.terminal.inject import WORD_JOINER

if TYPE_CHECKING:  # the screen model (pyte) loads after the agent started
    from ptysup.terminal.screen import ScreenSnapshot

# A command line that already picks the conversation keeps its choice.
_SESSION_FLAGS = {"--session-id", "--resume", "-r", "--continue", "-c"}

_RULE = re.compile(r"^─{10,}\s*$")
# `> ` in every approval mode but YOLO's, which draws `*` (0.24.4, seen in runs): `*   `
# before its placeholder, `* ` before typed text.
_PROMPT = re.compile(r"^(?:> ?|\*(?: +|$))(.*)$")
_WRAPPED = re.compile(r"^  \s*\S")  # a further line of the box, as indented as it was
PLACEHOLDER = "Type your message or @path/to/file"
# A large paste, folded in the input box (it is sent whole).
PASTED = re.compile(r"\[Pasted Content \d+ chars\](?: #\d+)?")
_CURSOR = "\u200b"  # drawn after the typed text
_WORKING = "esc to cancel)"
_CHOICE = re.compile(r"^\s*[›❯]\s*1\.")
_TITLE_DIALOG = "✳"
_TITLE_SPINNER = re.compile(r"^[◐◓◑◒⠀-⣿]")
_API_ERROR = re.compile(r"\[API Error: .*")

_AGENT = "Qwen Code"
_SEE = "see docs/agents.md, Qwen Code"
AUTH = Blocker(
    "auth dialog",
    "pick how it signs in once by running `qwen` in a terminal (or set OPENAI_API_KEY, "
    "OPENAI_BASE_URL and OPENAI_MODEL)",
    _AGENT,
    _SEE,
)
TRUST = Blocker(
    "folder trust dialog",
    "trust the folder once by running `qwen` in it",
    _AGENT,
    _SEE,
)
DIALOG = Blocker(
    "dialog",
    "answer it once by running `qwen` in this folder, or start ptysup in a terminal",
    _AGENT,
    _SEE,
)
_SCREENS: tuple[tuple[re.Pattern[str], Blocker], ...] = (
    (re.compile(r"How would you like to authenticate|Get started"), AUTH),
    (re.compile(r"Do you trust (the files in )?this folder\?"), TRUST),
)


class QwenAnswers:
    """How the waiting PermissionRequest hook carries the supervisor's answer.

    Qwen Code 0.24's terminal UI takes a question's answers from its picker only (an
    `allow` with `updatedInput.answers` reaches the tool in its ACP mode, not in the TUI);
    a `deny` skips the picker and the model reads the message as the tool's result. So
    the answer is a denial whose message is the answer."""

    def answer(self, tool_input: Mapping[str, Any], answers: Mapping[str, str]) -> str:
        """The hook output that gives the model ANSWERS (question → answer)."""
        said = "; ".join(f"{question} → {answer}" for question, answer in answers.items())
        return self.deny(
            f"The user answered: {said}. (Answered outside the dialog: do not ask again, "
            "go on with this answer.)"
        )

    def deny(self, reason: str) -> str:
        """The hook output that refuses the question; the model reads REASON."""
        decision = {"behavior": "deny", "message": reason}
        out = {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}
        return json.dumps(out, ensure_ascii=False)


QWEN_ANSWERS = QwenAnswers()


class QwenProfile(BaseProfile):
    """Qwen Code's TUI."""

    name = "qwen"
    uses_hooks = True
    dismiss_key: bytes = b"\x1b"  # Esc: "No, suggest changes" / cancels the question
    dismiss_reported = True  # "[Operation Cancelled] Reason: User did not allow …"
    clear_input_keys: tuple[bytes, ...] = (b"\x03",)  # Ctrl+C empties a non-empty box
    exit_command: str | None = "/quit"
    clear_command: str | None = "/clear"
    clear_starts_session = True  # its SessionStart (source: clear) comes at once
    interrupt_key: bytes | None = b"\x1b"  # Esc while working cancels the request
    command_guard = WORD_JOINER  # it trims a message before it looks for `/`, as Gemini CLI
    paste_only = True  # typed, `!` opens its shell mode and `?` its shortcuts
    paste_placeholder: re.Pattern[str] | None = PASTED
    first_hook: str | None = "SessionStart"  # its SessionStart comes at start

    def __init__(self, session_id: str | None = None, reopen: bool = False) -> None:
        # ptysup picks the conversation's id up front, so a resumed run reopens it with
        # `--resume <id>` (`--continue` could take another run's in the same folder).
        self.session_id = session_id or str(uuid.uuid4())
        self.reopen = reopen

    def argv(self, base: Sequence[str]) -> list[str]:
        """Qwen Code's command line with the conversation's id (new, or the one to reopen)."""
        argv = list(base)
        if not _SESSION_FLAGS.intersection(a.split("=", 1)[0] for a in base):
            argv += ["--resume" if self.reopen else "--session-id", self.session_id]
        return argv

    def launch(
        self, base: Sequence[str], env: Mapping[str, str], hooks: Hooks | None, private: Path
    ) -> Launch:
        """The command line, and the environment with ptysup's system settings file (its
        hooks, no follow-up suggestions) from the run's private directory, one process
        (no relaunch as a child that would outlive a killed parent), and SHLVL as under a
        shell (see shellenv.py)."""
        hook_command = hooks.command() if hooks is not None else None
        ask_command = hooks.command(wait=settings.ASK_WAIT_S) if hooks is not None else None
        theirs = env.get(settings.ENV)
        path = settings.write(private, hook_command, ask_command, Path(theirs) if theirs else None)
        out = under_a_shell(env) | {settings.ENV: str(path), settings.NO_RELAUNCH: "true"}
        return Launch(self.argv(base), out)

    def hook(self, event: HookEvent) -> HookEvent | None:
        """Qwen's hooks in ptysup's vocabulary: the question's waiting PermissionRequest is
        the PreToolUse ptysup answers questions through; a continuation's empty
        UserPromptSubmit is no prompt; a Stop carries the conversation's tokens."""
        payload = dict(event.payload)
        name = event.name
        if name == "UserPromptSubmit" and not str(payload.get("prompt") or "").strip():
            return None
        if name == "PermissionRequest" and payload.get("tool_name") == settings.ASK_TOOL:
            if event.reply is None:
                return None  # only the waiting hook asks
            name = "PreToolUse"
        if name == "Stop":
            tokens = conversation_tokens(payload.get("transcript_path"))
            if tokens is not None:
                payload["tokens"] = tokens
        payload["hook_event_name"] = name
        return HookEvent(name, payload, event.ts, event.reply)

    def ask(self, event: HookEvent) -> Ask | None:
        """`ask_user_question`, answered through the waiting PermissionRequest hook (as a
        denial whose message is the answer: see QwenAnswers)."""
        return ask_from(event, settings.ASK_TOOL, QWEN_ANSWERS)

    def screen_state(self, snap: ScreenSnapshot) -> ScreenState:
        """Dialog first (it hides the input box), then the spinner (the box stays on
        screen while a turn runs), then the box; the title says the same."""
        lines = snap.lines
        title = snap.title.lstrip()
        box = _box_line(lines)
        if title.startswith(_TITLE_DIALOG) or (box is None and _choices_drawn(lines)):
            return ScreenState.DIALOG
        if _TITLE_SPINNER.match(title) or any(line.rstrip().endswith(_WORKING) for line in lines):
            return ScreenState.WORKING
        if box is not None:
            return ScreenState.READY
        return ScreenState.UNKNOWN

    def input_has_text(self, snap: ScreenSnapshot) -> bool:
        """Whether the input box shows typed or pasted text (the paste has landed)."""
        return bool(_input_text(snap.lines))

    def input_text(self, snap: ScreenSnapshot) -> str | None:
        """The input box's text, every line of it."""
        return _input_text(snap.lines, whole=True)

    def api_error(self, snap: ScreenSnapshot) -> str | None:
        """The last API error on screen."""
        for line in reversed(snap.lines):
            m = _API_ERROR.search(line)
            if m:
                return m.group(0).strip(" │")
        return None

    def blocker(self, snap: ScreenSnapshot) -> Blocker | None:
        """A first-run screen (auth, trust) or another dialog, once its choices are drawn:
        the title says `✳` a moment before (recorded: 0.16 s), the screen still the turn's."""
        found = first_screen(snap.lines, _SCREENS)
        if found is None and _choices_drawn(snap.lines):
            return DIALOG
        return found


def conversation_saved(session_id: str, env: Mapping[str, str]) -> bool:
    """Whether Qwen Code saved a message of conversation `session_id`, so `--resume` can
    reopen it: `<QWEN_HOME>/projects/<folder>/chats/<id>.jsonl` with a `user` line. Seen
    with 0.24.4: killed right after its task was typed, it had saved nothing, and
    `--resume <id>` ended it at once ("No saved session found with ID …"), exit 1."""
    projects = saved.home(env, "QWEN_HOME", ".qwen") / "projects"
    found = projects.glob(f"*/chats/{glob_escape(session_id)}.jsonl")
    return saved.holds_message(found, frozenset({"user", "assistant"}))


def conversation_tokens(transcript: object) -> dict[str, int] | None:
    """The conversation's tokens so far (input, output, total), summed over the model's
    replies in Qwen Code's session file (JSONL; each `assistant` record carries
    `usageMetadata`). Qwen Code reports tokens, never a price: this is all ptysup can tell
    of its spend."""
    if not isinstance(transcript, str) or not transcript:
        return None
    try:
        text = Path(transcript).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    by_id: dict[str, Mapping[str, Any]] = {}
    for record in saved.records(text):
        usage = record.get("usageMetadata")
        if record.get("type") == "assistant" and isinstance(usage, dict):
            by_id[str(record.get("uuid", len(by_id)))] = usage
    if not by_id:
        return None
    keys = {"input": "promptTokenCount", "output": "candidatesTokenCount"}
    out = {k: sum(_int(u.get(field)) for u in by_id.values()) for k, field in keys.items()}
    out["total"] = sum(_int(u.get("totalTokenCount")) for u in by_id.values()) or sum(out.values())
    return out


def _int(value: object) -> int:
    return value if isinstance(value, int) else 0


def _choices_drawn(lines: Sequence[str]) -> bool:
    """Whether a dialog's choices are on screen (its first one marked), the input box gone."""
    return _box_line(lines) is None and any(_CHOICE.match(line) for line in lines)


def _box_line(lines: Sequence[str]) -> int | None:
    """The index of the input box's first line: `> …` just under a full-width rule, its
    text's further lines under it, then another rule."""
    for i in range(len(lines) - 1, 0, -1):
        if _PROMPT.match(lines[i]) and _RULE.match(lines[i - 1]):
            below = i + 1
            while below < len(lines) and _in_box(lines[below]):
                below += 1
            if below < len(lines) and _RULE.match(lines[below]):
                return i
    return None


def _input_text(lines: Sequence[str], whole: bool = False) -> str | None:
    """The text in the input box ("" when it shows its placeholder), or None without a box.
    `whole`: with the lines it wraps or breaks onto."""
    at = _box_line(lines)
    if at is None:
        return None
    m = _PROMPT.match(lines[at])
    first = (m.group(1) if m else "").replace(_CURSOR, "").strip()
    if first == PLACEHOLDER:
        return ""
    if not whole:
        return first
    rest = []
    for line in lines[at + 1 :]:
        if not _in_box(line):
            break
        rest.append(line.replace(_CURSOR, "").strip())
    return "\n".join([first, *rest]).strip()


def _in_box(line: str) -> bool:
    """Whether LINE goes on the input box's text: a further line of it (wrapped, or one of
    the message's own, indented as it was) or a blank line of it (the box ends at a rule)."""
    return bool(_WRAPPED.match(line)) or not line.strip()
