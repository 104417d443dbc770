"""opencode: its reporter plugin for readiness and exact turn ends, its screen for dialogs.

Observed with opencode 1.18.33 (in tmux, against the fake model):
- there are no shell hooks; a TUI plugin (named in a `tui.json`, or in the file
  OPENCODE_TUI_CONFIG names) starts with the terminal UI and hears the server's events:
  `session.created` (a conversation's first prompt; after /new, the next prompt's),
  `session.status` busy/idle, `session.idle` at the turn's end, `permission.asked`,
  `question.asked`, `session.error`. Its state holds every message and part;
- on a fresh data directory it draws nothing for ~4 s and drops every key typed before
  its UI is up; the plugin starts a moment before the input box is drawn, and keys typed
  from then on land (reporter.js says `tui.ready` then);
- the input box is a column of `┃` lines above a `╹▀▀▀…` rule: the typed text, then the
  agent and model (`Build · Fake Model`); empty on its home screen it shows `Ask
  anything… "<a suggestion>"`; a multi-line paste shows as `[Pasted ~3 lines]`;
- while a turn runs the footer says `esc interrupt`; an approval (`△ Permission
  required`, `Allow once   Allow always   Reject`) or a question (`enter submit  esc
  dismiss`) replaces the input box;
- Esc twice interrupts a turn (the first turns the footer into `esc again to interrupt`;
  two Escs in one write are one key to it), once rejects an approval or dismisses a
  question; the interrupted turn ends on `session.error` MessageAbortedError, then
  `session.idle` (twice); Ctrl+C empties a
  non-empty input box (and quits from an empty one); `/new` starts a new conversation
  (its session is created with the next prompt); `/exit` quits and prints `Continue
  opencode -s ses_…`; `-s <id>` reopens a conversation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ptysup.agents.events import HookEvent, ScreenState
from ptysup.agents.firstrun import Blocker
from ptysup.agents.opencode import reporter
from ptysup.agents.profile import BaseProfile, Hooks, Launch
from ptysup.agents.questions import Ask, parse_questions

if TYPE_CHECKING:  # the screen model (pyte) loads after the agent started
    from ptysup.terminal.screen import ScreenSnapshot

READY = "Ready"  # ptysup's name for the reporter's `tui.ready`
QUESTION_TOOL = "question"
# ptysup replies to a question on every way out (a dead ptysup closes the socket), so the
# long wait only bounds a hung ptysup.
ASK_WAIT_S = 86_400
# A command line that already picks the conversation keeps its choice.
_SESSION_FLAGS = {"--session", "-s", "--continue", "-c", "--fork"}
# For the person's good too: no update, no model list or language server fetched from the
# network during a run, no conversation shared by a default the person did not choose.
QUIET_ENV = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_SHARE": "1",
}
# The reporter's event names → ptysup's (Claude Code's).
_NAMES = {
    "tui.ready": READY,
    "SessionStart": "SessionStart",
    "prompt": "UserPromptSubmit",
    "session.idle": "Stop",
    "session.error": "StopFailure",
    "permission.asked": "PermissionRequest",
    "question.asked": "PreToolUse",
}

_RULE = re.compile(r"^\s*╹▀{10,}")
# A line of the input box; a line of the slash-command menu drawn above it ends in `┃`.
_BAR = re.compile(r"^\s*┃(?!.*┃\s*$)(.*)$")
_AGENT_LINE = re.compile(r"^\s*┃  \S.* · ")
PLACEHOLDER = "Ask anything…"
_WORKING = re.compile(r"esc (again to )?interrupt")
_DIALOG = re.compile(r"△ Permission required|Allow once\s+Allow always\s+Reject|esc dismiss")

DIALOG = Blocker(
    "dialog",
    "answer it once by running `opencode` in this folder, or start ptysup in a terminal",
    "opencode",
    "see docs/agents.md, opencode",
)


def refuses(argv: Sequence[str]) -> str | None:
    """Why ptysup cannot supervise this opencode command line, if it cannot."""
    if "--pure" in argv[1:]:
        return "opencode's --pure loads no plugin, ptysup's reporter neither: leave it out"
    return None


def conversation_saved(session_id: str, env: Mapping[str, str]) -> bool:
    """Whether SESSION_ID can be reopened: only an id opencode picked (`ses_…`, learnt from
    its first SessionStart) names a conversation it saved; the id a run starts with is
    ptysup's own until then (a run killed before its first prompt has no conversation)."""
    return session_id.startswith("ses_")


class OpencodeAnswers:
    """What the reporter does with ptysup's reply to a question: `answers` (one list of
    labels or typed text per question) go to opencode's question API; `reject` dismisses
    it (the model reads that the person dismissed it: a reason cannot be given)."""

    def answer(self, tool_input: Mapping[str, Any], answers: Mapping[str, str]) -> str:
        """The reply that answers each question: its labels (a multi-select question's
        comma-separated ones each), or the free text."""
        out: list[list[str]] = []
        for q in tool_input.get("questions") or ():
            text = str(q.get("question", "")) if isinstance(q, Mapping) else ""
            said = answers.get(text, "")
            multiple = isinstance(q, Mapping) and bool(q.get("multiple"))
            out.append([p.strip() for p in said.split(",") if p.strip()] if multiple else [said])
        return json.dumps({"answers": out}, ensure_ascii=False)

    def deny(self, reason: str) -> str:
        """The reply that dismisses the question."""
        return json.dumps({"reject": True, "reason": reason}, ensure_ascii=False)


OPENCODE_ANSWERS = OpencodeAnswers()


class OpencodeProfile(BaseProfile):
    """opencode's terminal UI."""

    name = "opencode"
    uses_hooks = True
    ready_hook: str | None = READY
    dismiss_key: bytes = b"\x1b"  # Esc: rejects an approval, dismisses a question
    dismiss_reported = True  # "The user rejected permission to use …"
    clear_input_keys: tuple[bytes, ...] = (b"\x03",)  # Ctrl+C empties a non-empty box
    exit_command: str | None = "/exit"
    clear_command: str | None = "/new"
    interrupt_key: bytes | None = b"\x1b"
    interrupt_presses = 2  # the first Esc only asks for a second (`esc again to interrupt`)
    interrupt_armed: str | None = "esc again to interrupt"
    paste_only = True
    paste_placeholder: re.Pattern[str] | None = re.compile(r"\[Pasted ~\d+ lines?\]")
    first_hook: str | None = READY  # its plugin's Ready comes before the input box

    def __init__(self, session_id: str | None = None, reopen: bool = False) -> None:
        # opencode picks the conversation's id itself (at the first prompt): ptysup learns
        # it from SessionStart and reopens it with `-s <id>`.
        self.session_id = session_id
        self.reopen = reopen

    def argv(self, base: Sequence[str]) -> list[str]:
        """opencode's command line, with `-s <id>` when reopening a conversation."""
        argv = list(base)
        chosen = _SESSION_FLAGS.intersection(a.split("=", 1)[0] for a in base)
        if self.reopen and self.session_id and not chosen:
            argv += ["--session", self.session_id]
        return argv

    def launch(
        self, base: Sequence[str], env: Mapping[str, str], hooks: Hooks | None, private: Path
    ) -> Launch:
        """The command line, and the environment with ptysup's reporter plugin (a TUI
        config in the run's private directory, on top of the person's) and the switches
        that keep a run off the network (QUIET_ENV; the person's own values win)."""
        out = {**QUIET_ENV, **env}
        if hooks is not None:
            theirs = env.get(reporter.ENV)
            ask = hooks.command(wait=ASK_WAIT_S)
            path = reporter.write(private, hooks.address(), ask, Path(theirs) if theirs else None)
            out[reporter.ENV] = str(path)
        return Launch(self.argv(base), out)

    def hook(self, event: HookEvent) -> HookEvent | None:
        """The reporter's events in ptysup's vocabulary; a question waits for its answer."""
        name = _NAMES.get(event.name)
        if name is None:
            return None
        payload = dict(event.payload)
        if name == "PreToolUse":
            payload["tool_name"] = QUESTION_TOOL
            payload["tool_input"] = {"questions": payload.pop("questions", [])}
        payload["hook_event_name"] = name
        return HookEvent(name, payload, event.ts, event.reply)

    def ask(self, event: HookEvent) -> Ask | None:
        """opencode's question tool: answered through its question API by the reporter."""
        p = event.payload
        if event.reply is None or event.name != "PreToolUse":
            return None
        tool_input = p.get("tool_input")
        if not isinstance(tool_input, dict):
            return None
        raw = [
            {**q, "multiSelect": bool(q.get("multiple"))}
            for q in tool_input.get("questions") or ()
            if isinstance(q, dict)
        ]
        return Ask(parse_questions(raw), tool_input, event, OPENCODE_ANSWERS)

    def screen_state(self, snap: ScreenSnapshot) -> ScreenState:
        """A dialog first (it replaces the input box), then the footer's `esc interrupt`,
        then the input box."""
        lines = snap.lines
        if any(_DIALOG.search(line) for line in lines):
            return ScreenState.DIALOG
        if any(_WORKING.search(line) for line in lines[-3:]):
            return ScreenState.WORKING
        if _box(lines) is not None:
            return ScreenState.READY
        return ScreenState.UNKNOWN

    def input_has_text(self, snap: ScreenSnapshot) -> bool:
        """Whether the input box shows typed or pasted text (not its placeholder)."""
        return bool(_input_text(snap.lines))

    def input_text(self, snap: ScreenSnapshot) -> str | None:
        """The input box's text, every line of it; "" when empty, None when not shown."""
        return _input_text(snap.lines)

    def api_error(self, snap: ScreenSnapshot) -> str | None:
        """Nothing: opencode prints an API error as a message of the conversation, like
        any other text; the reporter's `session.error` carries it (as StopFailure)."""
        return None

    def blocker(self, snap: ScreenSnapshot) -> Blocker | None:
        """A dialog on screen (opencode has no first-run screen once it has a model)."""
        return DIALOG if self.screen_state(snap) is ScreenState.DIALOG else None


def _box(lines: Sequence[str]) -> tuple[int, int] | None:
    """The input box's text lines as a range (first, end): the `┃` lines above the
    agent line that sits on the last `╹▀▀▀` rule."""
    for i in range(len(lines) - 1, 0, -1):
        if _RULE.match(lines[i]):
            if not _AGENT_LINE.match(lines[i - 1]):
                return None
            top = i - 1
            while top > 0 and _BAR.match(lines[top - 1]):
                top -= 1
            return top, i - 1
    return None


def _input_text(lines: Sequence[str]) -> str | None:
    found = _box(lines)
    if found is None:
        return None
    first, end = found
    rows = [m.group(1).strip() for line in lines[first:end] if (m := _BAR.match(line))]
    text = "\n".join(rows).strip()
    return "" if text.startswith(PLACEHOLDER) else text
