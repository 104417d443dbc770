"""Gemini CLI: its AfterAgent hook for exact turn ends, its screen for readiness and dialogs.

Observed with Gemini CLI 0.61.0 (in tmux, against the fake model):
- the input box is the line starting ` > ` under the last full-width rule (and a mode hint
  such as `Shift+Tab to accept edits`); empty, it shows the placeholder `Type your message
  or @path/to/file`; a long or multi-line text goes on in lines indented by three spaces;
- while a turn runs, a spinner line ends in `(esc to cancel, 3s)`;
- a dialog (an approval: `Allow execution of [Shell]?`, a question: `Answer Questions`,
  the first run's trust and auth screens) replaces the input box with a bordered box whose
  first choice is marked `● 1.`;
- with `ui.dynamicWindowTitle` on (the default) the terminal title starts `◇  Ready`,
  `✦  Working…` (or the model's thought) / `⏲  Working…`, or `✋  Action Required` (a
  dialog), written in the same output as the screen it goes with (recorded);
- Esc cancels a turn (an AfterAgent hook with `[no response text]` follows) and, at a
  dialog, picks its "No" (no AfterAgent then: the screen alone says the turn is over);
  Ctrl+C empties a non-empty input box (on an empty one it only arms the exit).
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
from ptysup.agents.gemini import home, settings
from ptysup.agents.profile import BaseProfile, Hooks, Launch
from ptysup.agents.questions import Ask, ask_from
from ptysup.agents.shellenv import under_a_shell
from ptysup.terminal.inject import WORD_JOINER

if TYPE_CHECKING:  # the screen model (pyte) loads after the agent started
    from ptysup.terminal.screen import ScreenSnapshot

# A command line that already picks the conversation keeps its choice.
_SESSION_FLAGS = {
    "--session-id",
    "--session-file",
    "--resume",
    "-r",
    "--list-sessions",
    "--delete-session",
}
# Gemini CLI goes headless (and exits 42 waiting for stdin) when either is "true", even on
# a terminal: they are kept from the agent, never from ptysup itself.
CI_VARIABLES = ("CI", "GITHUB_ACTIONS")
SYSTEM_SETTINGS = "GEMINI_CLI_SYSTEM_SETTINGS_PATH"
RENAMED = {
    "SessionStart": "SessionStart",
    "SessionEnd": "SessionEnd",
    "BeforeAgent": "UserPromptSubmit",
    "AfterAgent": "Stop",
}
# What a ToolPermission notification's `details.type` asks to allow, as ptysup names it.
PERMISSION_KINDS = {
    "exec": "run_shell_command",
    "edit": "edit",
    "mcp": "mcp_tool",
    "info": "web_fetch",
}

_RULE = re.compile(r"^─{10,}\s*$")
# ` > ` in every approval mode but YOLO's, which draws ` *   ` (0.61.0, seen in a run).
_PROMPT = re.compile(r"^ [>*] ?(.*)$")
# A further line of a message in the box, indented as the message's own line was.
_WRAPPED = re.compile(r"^   \s*\S")
PLACEHOLDER = "Type your message or @path/to/file"
# A large paste, folded in the input box (it is sent whole).
PASTED = re.compile(r"\[Pasted Text: \d+ (?:lines|chars)(?: #\d+)?\]")
_WORKING = "(esc to cancel"

_CHOICE = re.compile(r"^\s*│\s*│?\s*●\s*1\.")
_TITLE_DIALOG = "✋"
_TITLE_WORKING = ("✦", "⏲")
_BOX_LINES = 6  # the input box's first line is at most this far under the rule
# Gemini CLI 0.61 formats an error that ends a turn as `[API Error: <message>]` (its
# parseAndFormatApiError). Not seen on screen here: against the fake model it retried every
# error status (400, 401, 429, 500) for many minutes, showing only its spinner.
_API_ERROR = re.compile(r"\[API Error: .*")

_AGENT = "Gemini CLI"
_SEE = "see docs/agents.md, Gemini CLI"
AUTH = Blocker(
    "auth dialog",
    "pick how it signs in once by running `gemini` in a terminal (or set "
    'security.auth.selectedType, e.g. "gemini-api-key" with GEMINI_API_KEY, in '
    "~/.gemini/settings.json)",
    _AGENT,
    _SEE,
)
TRUST = Blocker(
    "folder trust dialog",
    "ptysup's settings file, which turns folder trust off, was not read (Gemini CLI skips "
    "one under a group- or world-writable directory): trust the folder once by running "
    "`gemini` in it",
    _AGENT,
    _SEE,
)
DIALOG = Blocker(
    "dialog",
    "answer it once by running `gemini` in this folder, or start ptysup in a terminal",
    _AGENT,
    _SEE,
)
_SCREENS: tuple[tuple[re.Pattern[str], Blocker], ...] = (
    (re.compile(r"How would you like to authenticate|Enter Gemini API Key"), AUTH),
    (re.compile(r"Do you trust the files in this folder\?"), TRUST),
)


class GeminiAnswers:
    """How a BeforeTool hook's output carries the supervisor's answer to `ask_user`.

    Gemini CLI 0.61 takes a question's answers only from its dialog: a BeforeTool hook can
    rewrite the tool's arguments (`hookSpecificOutput.tool_input`) but not its answers.
    What it can do is `decision: deny`: the dialog is never shown and the model reads the
    reason as the tool's result (`Tool execution blocked: <reason>`). So the answer is a
    denial whose reason is the answer."""

    def answer(self, tool_input: Mapping[str, Any], answers: Mapping[str, str]) -> str:
        """The hook output that gives the model ANSWERS (question → answer)."""
        said = "; ".join(f"{question} → {answer}" for question, answer in answers.items())
        return self.deny(
            f"The user answered: {said}. (Answered outside the dialog: do not ask again, "
            "go on with this answer.)"
        )

    def deny(self, reason: str) -> str:
        """The hook output that refuses the question; the model reads REASON."""
        return json.dumps({"decision": "deny", "reason": reason}, ensure_ascii=False)


GEMINI_ANSWERS = GeminiAnswers()


class GeminiProfile(BaseProfile):
    """Gemini CLI's TUI."""

    name = "gemini"
    uses_hooks = True
    dismiss_key: bytes = b"\x1b"  # Esc: "No, suggest changes" / cancels the question dialog
    dismiss_reported = False  # the call is dropped from the conversation
    # While its hooks run after its reply (AfterAgent), Gemini CLI 0.61 shows `Executing
    # Hooks: ptysup, ptysup` on its footer's row, its title already Ready, and erases it
    # once they exited (0.1-2 s under load): the turn's final frame is the one after. One
    # hook running a while shows ` ⠦ Executing Hook: ptysup (esc to cancel, 3s)` there
    # (seen in tmux under load): a spinner first, and "Hook" alone.
    hooks_running: re.Pattern[str] | None = re.compile(r"^\s*(?:\S\s+)?Executing Hooks?:")
    draws_after_stop = False  # its reply is drawn before AfterAgent runs; Ready once its hooks ran
    clear_input_keys: tuple[bytes, ...] = (b"\x03",)  # Ctrl+C empties a non-empty box
    exit_command: str | None = "/quit"
    clear_command: str | None = "/clear"
    clear_starts_session = True  # its SessionStart (source: clear) comes at once
    interrupt_key: bytes | None = b"\x1b"  # Esc while working cancels the request
    # Gemini CLI trims a message before it looks for a slash command, so a leading space
    # leaves ` /quit` a command; it also drops U+200B from what is typed. U+2060 (word
    # joiner, not drawn) is neither trimmed nor dropped, and reaches the model as typed.
    command_guard = WORD_JOINER
    paste_only = True  # typed, `!` opens its shell mode and `?` its help (issue 30)
    paste_placeholder: re.Pattern[str] | None = PASTED
    first_hook: str | None = "SessionStart"  # its SessionStart comes at start

    def __init__(self, session_id: str | None = None, reopen: bool = False) -> None:
        # ptysup picks the conversation's id up front, so a resumed run reopens it with
        # `--resume <id>` (`latest` could be another run's in the same folder).
        self.session_id = session_id or str(uuid.uuid4())
        self.reopen = reopen

    def argv(self, base: Sequence[str]) -> list[str]:
        """Gemini CLI's command line with the conversation's id (new, or the one to reopen)."""
        argv = list(base)
        if not _SESSION_FLAGS.intersection(a.split("=", 1)[0] for a in base):
            argv += ["--resume" if self.reopen else "--session-id", self.session_id]
        return argv

    def launch(
        self,
        base_argv: Sequence[str],
        env: Mapping[str, str],
        hooks: Hooks | None,
        private: Path,
    ) -> Launch:
        """The command line, and the environment: ptysup's settings (hooks, folder trust
        off) from the run's private directory, as a system settings file where Gemini CLI
        reads one, else in a home of the run's own (see home.py); one process (no relaunch
        as a child that ignores SIGTERM), no CI variables (which would make Gemini CLI
        headless), and SHLVL as under a shell (see shellenv.py)."""
        hook_command = hooks.command() if hooks is not None else None
        ask_command = hooks.command(wait=settings.ASK_WAIT_S) if hooks is not None else None
        out = under_a_shell({k: v for k, v in env.items() if k not in CI_VARIABLES})
        out["GEMINI_CLI_NO_RELAUNCH"] = "true"
        theirs = env.get(SYSTEM_SETTINGS)
        path = settings.write(private, hook_command, ask_command, Path(theirs) if theirs else None)
        if home.skipped_because(path) is None:
            out[SYSTEM_SETTINGS] = str(path)
        else:  # Gemini CLI would skip the file: ptysup's settings go in a home of the run's
            ours = settings.settings(hook_command, ask_command)
            out[home.HOME_ENV] = str(home.make(private, env, ours))
        return Launch(self.argv(base_argv), out)

    def hook(self, event: HookEvent) -> HookEvent | None:
        """Gemini's hook in ptysup's (Claude Code's) vocabulary; None for one ptysup ignores."""
        payload = dict(event.payload)
        name = _translated(event.name, payload)
        if name is None:
            return None
        payload["hook_event_name"] = name
        return HookEvent(name, payload, event.ts, event.reply)

    def ask(self, event: HookEvent) -> Ask | None:
        """`ask_user`, answered through the waiting BeforeTool hook (as a denial whose
        reason is the answer: see GeminiAnswers)."""
        return ask_from(event, settings.ASK_TOOL, GEMINI_ANSWERS)

    def screen_state(self, snap: ScreenSnapshot) -> ScreenState:
        """Dialog first (it hides the input box), then the spinner, then the box; the title
        says the same where Gemini CLI writes it, and covers the moments with no spinner
        drawn (hooks running after a tool)."""
        lines = snap.lines
        title = snap.title.lstrip()
        box = _box_line(lines)
        if title.startswith(_TITLE_DIALOG) or (
            box is None and any(_CHOICE.match(line) for line in lines)
        ):
            return ScreenState.DIALOG
        if title.startswith(_TITLE_WORKING) or any(_WORKING in line for line in lines):
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
        """A first-run screen (auth, trust) or another dialog."""
        screen = first_screen(snap.lines, _SCREENS)
        if screen is not None:
            return screen
        if self.screen_state(snap) is ScreenState.DIALOG:
            return DIALOG
        return None


def _translated(name: str, payload: dict[str, Any]) -> str | None:
    """The name ptysup knows NAME's hook by, filling PAYLOAD's fields to match; None to
    ignore it (PreCompress fires at every model call, and means nothing to ptysup)."""
    if name == "AfterAgent":
        payload["last_assistant_message"] = str(payload.get("prompt_response") or "")
        tokens = conversation_tokens(payload.get("transcript_path"))
        if tokens is not None:
            payload["tokens"] = tokens
    if name in RENAMED:
        return RENAMED[name]
    if name == "AfterTool":
        response = payload.get("tool_response")
        error = response.get("error") if isinstance(response, dict) else None
        if error:
            payload["error"] = error.get("message", error) if isinstance(error, dict) else error
            return "PostToolUseFailure"
        return "PostToolUse"
    if name == "BeforeTool":
        return "PreToolUse" if payload.get("tool_name") == settings.ASK_TOOL else None
    if name != "Notification":
        return None
    details = payload.get("details")
    details = details if isinstance(details, dict) else {}
    kind = str(details.get("type", ""))
    if payload.get("notification_type") != "ToolPermission" or kind == settings.ASK_TOOL:
        return "Notification"  # a question left to the person's dialog is no approval
    payload["tool_name"] = PERMISSION_KINDS.get(kind, kind or str(details.get("title", "")))
    payload["tool_input"] = _permission_input(details)
    return "PermissionRequest"


def conversation_saved(session_id: str, env: Mapping[str, str]) -> bool:
    """Whether Gemini CLI saved a message of conversation `session_id`, so `--resume` can
    reopen it: `<home>/.gemini/tmp/<project>/chats/session-<time>-<id's first 8>.jsonl`,
    whose header names the id, with a `user` or `gemini` line. Seen with 0.61.0: killed
    right after its task was typed, the file held its header and a `$set` of the session's
    context alone, and `--resume <id>` ended it at once ("No previous sessions found for
    this project"), exit 42."""
    chats = saved.home(env, "GEMINI_CLI_HOME", ".") / ".gemini" / "tmp"
    found = chats.glob(f"*/chats/session-*-{glob_escape(session_id[:8])}.jsonl")
    ours = (path for path in found if saved.header(path).get("sessionId") == session_id)
    return saved.holds_message(ours, frozenset({"user", "gemini"}))


def conversation_tokens(transcript: object) -> dict[str, int] | None:
    """The conversation's tokens so far (input, output, total), summed over the model's
    messages in Gemini CLI's session file (JSONL; each `gemini` message carries `tokens`,
    and a `$set` line may list messages again: each is counted once, by id). Gemini CLI
    reports tokens, never a price: this is all ptysup can tell of its spend."""
    if not isinstance(transcript, str) or not transcript:
        return None
    try:
        text = Path(transcript).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    by_id: dict[str, Mapping[str, Any]] = {}
    for record in saved.records(text):
        update = record.get("$set")
        listed = update.get("messages") if isinstance(update, dict) else None
        for message in [record, *(listed if isinstance(listed, list) else ())]:
            if isinstance(message, dict) and isinstance(message.get("tokens"), dict):
                by_id[str(message.get("id", len(by_id)))] = message["tokens"]
    if not by_id:
        return None
    return {
        key: sum(int(t.get(key, 0)) for t in by_id.values() if isinstance(t.get(key, 0), int))
        for key in ("input", "output", "total")
    }


def _permission_input(details: Mapping[str, Any]) -> dict[str, Any]:
    """What a ToolPermission notification asks to allow, under the keys ptysup summarises
    (`command`, `file_path`, `url`). An edit's contents and diff are left out: the dialog
    on screen shows them, and the log keeps only the file."""
    shown = {k: v for k, v in details.items() if k not in ("type", "title")}
    if "filePath" in shown:
        shown = {"file_path": shown.pop("filePath")} | {
            k: v for k, v in shown.items() if k in ("fileName", "isModifying")
        }
    urls = shown.get("urls")
    if isinstance(urls, list) and urls:
        shown["url"] = str(urls[0])
    return shown


def _box_line(lines: Sequence[str]) -> int | None:
    """The index of the input box's first line (` > …` under the last full-width rule)."""
    for i in range(len(lines) - 1, -1, -1):
        if _RULE.match(lines[i]):
            for j in range(i + 1, min(len(lines), i + 1 + _BOX_LINES)):
                if _PROMPT.match(lines[j]):
                    return j
            return None
    return None


def _input_text(lines: Sequence[str], whole: bool = False) -> str | None:
    """The text in the input box ("" when it shows its placeholder), or None without a box.
    `whole`: with the lines it wraps or breaks onto."""
    at = _box_line(lines)
    if at is None:
        return None
    m = _PROMPT.match(lines[at])
    first = m.group(1).strip() if m else ""
    if first == PLACEHOLDER:
        return ""
    if not whole:
        return first
    rest: list[str] = []
    blank: list[str] = []  # a blank line goes on the box only if a continued one follows
    for line in lines[at + 1 :]:
        if not line.strip():
            blank.append("")
            continue
        if not _WRAPPED.match(line):
            break
        rest += [*blank, line.strip()]
        blank = []
    return "\n".join([first, *rest]).strip()
