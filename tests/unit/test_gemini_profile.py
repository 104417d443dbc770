"""Gemini CLI's profile: screens captured from the real 0.61.0 in tmux (fixtures/gemini/*.txt),
its hook payloads as recorded, its command line, environment and settings file."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from ptysup.agents.events import HookEvent, ScreenState
from ptysup.agents.gemini import home, settings
from ptysup.agents.gemini.profile import (
    AUTH,
    DIALOG,
    GEMINI_ANSWERS,
    PLACEHOLDER,
    TRUST,
    GeminiProfile,
)
from ptysup.terminal.screen import ScreenSnapshot
from tests.helpers import replay_readings

SCREENS = Path(__file__).resolve().parents[2] / "fixtures" / "gemini"
TRANSCRIPTS = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
SESSION = "11111111-2222-3333-4444-555555555555"


def screen(name: str, width: int = 100) -> ScreenSnapshot:
    """A captured screen as ptysup's model holds it: every line padded to the width."""
    lines = (SCREENS / f"{name}.txt").read_text(encoding="utf-8").splitlines()
    return ScreenSnapshot(tuple(line.ljust(width) for line in lines), "", (0, 0))


def lines(*text: str) -> ScreenSnapshot:
    return ScreenSnapshot(tuple(text), "", (0, 0))


@pytest.mark.parametrize(
    ("name", "state", "text"),
    [
        ("ready_empty", ScreenState.READY, ""),
        ("typed", ScreenState.READY, "be slow"),
        ("working", ScreenState.WORKING, ""),
        ("working_typed", ScreenState.WORKING, "typed while busy"),
        ("ready_typed", ScreenState.READY, "typed while busy"),
        ("cancelled", ScreenState.READY, ""),
        ("answered", ScreenState.READY, ""),  # `Executing Hooks:` (AfterAgent) shown
        ("answered_done", ScreenState.READY, ""),  # drawn once its hooks exited
        ("dialog_shell", ScreenState.DIALOG, None),
        ("dialog_ask", ScreenState.DIALOG, None),
    ],
)
def test_states_and_the_input_box_read_off_real_screens(
    name: str, state: ScreenState, text: str | None
) -> None:
    profile = GeminiProfile(SESSION)
    snap = screen(name)
    assert profile.screen_state(snap) is state
    assert profile.input_text(snap) == text
    assert profile.input_has_text(snap) is bool(text)


@pytest.mark.parametrize(
    ("name", "title", "state"),
    [
        ("answered", "✦  Working… (proj)", ScreenState.WORKING),  # its hooks still run
        ("answered_done", "◇  Ready (proj)", ScreenState.READY),
        ("working", "◇  Ready (proj)", ScreenState.WORKING),  # the spinner is still drawn
        ("ready_empty", "✋  Action Required (proj)", ScreenState.DIALOG),
        ("answered_done", "Gemini CLI (proj)", ScreenState.READY),  # dynamic titles off
    ],
)
def test_the_title_tells_working_and_dialogs_apart_where_the_screen_cannot(
    name: str, title: str, state: ScreenState
) -> None:
    snap = screen(name)
    assert GeminiProfile(SESSION).screen_state(ScreenSnapshot(snap.lines, title, (0, 0))) is state


def test_a_multi_line_paste_is_read_whole_but_its_first_line_says_it_landed() -> None:
    profile = GeminiProfile(SESSION)
    snap = screen("multiline")
    assert profile.input_has_text(snap)
    assert profile.input_text(snap) == (
        "line one of text\n"
        "line two is here and it is a long line that will wrap around the terminal "
        "width for sure yes"
    )


def test_an_earlier_prompt_in_the_history_is_not_the_input_box() -> None:
    # " > ask me" above is the conversation; the box under the rule is empty.
    snap = screen("answered")
    assert any(line.startswith(" > ask me") for line in snap.lines)
    assert GeminiProfile(SESSION).input_text(snap) == ""


def test_dialogs_are_blockers_and_first_run_screens_are_named() -> None:
    profile = GeminiProfile(SESSION)
    assert profile.blocker(screen("dialog_shell")) is DIALOG
    assert profile.blocker(screen("ready_empty")) is None
    auth = lines(
        "│ ? Get started",
        "│   How would you like to authenticate for this project?",
        "│   ● 1. Sign in with Google",
    )
    assert profile.blocker(auth) is AUTH
    trust = lines(" │ Do you trust the files in this folder?", " │ ● 1. Trust folder (proj2)")
    assert profile.blocker(trust) is TRUST


def test_an_api_error_line_is_read() -> None:
    snap = lines("✕ [API Error: Quota exceeded for quota metric (fake model)]", " > ")
    assert GeminiProfile(SESSION).api_error(snap) == (
        "[API Error: Quota exceeded for quota metric (fake model)]"
    )
    assert GeminiProfile(SESSION).api_error(screen("answered")) is None


# -- hooks: payloads as Gemini CLI 0.61.0 sent them ------------------------------------------

BASE = {
    "session_id": SESSION,
    "transcript_path": "/h/.gemini/tmp/p/chats/session-x.jsonl",
    "cwd": "/p",
    "timestamp": "2026-11-25T17:54:38.681Z",
}


def translate(name: str, **fields: Any) -> HookEvent | None:
    payload = {**BASE, "hook_event_name": name, **fields}
    return GeminiProfile(SESSION).hook(HookEvent(name, payload, 1.0))


def test_after_agent_is_the_turn_end_with_its_response() -> None:
    event = translate(
        "AfterAgent", prompt="say hello", prompt_response="Hello.", stop_hook_active=False
    )
    assert event is not None
    assert (event.name, event.payload["hook_event_name"]) == ("Stop", "Stop")
    assert event.payload["last_assistant_message"] == "Hello."
    assert event.payload["session_id"] == SESSION


def test_before_agent_confirms_the_prompt_and_session_hooks_keep_their_names() -> None:
    started = translate("BeforeAgent", prompt="say hello")
    assert started is not None and started.name == "UserPromptSubmit"
    assert started.payload["prompt"] == "say hello"
    clear = translate("SessionStart", source="clear")
    assert clear is not None and (clear.name, clear.payload["source"]) == ("SessionStart", "clear")
    end = translate("SessionEnd", reason="exit")
    assert end is not None and end.name == "SessionEnd"
    assert translate("PreCompress", trigger="auto") is None


def test_after_tool_is_post_tool_use_or_its_failure() -> None:
    ok = translate(
        "AfterTool",
        tool_name="run_shell_command",
        tool_input={"command": "echo hi"},
        tool_response={"llmContent": "Output: hi", "returnDisplay": "hi"},
    )
    assert ok is not None and ok.name == "PostToolUse"
    assert ok.payload["tool_input"] == {"command": "echo hi"}
    failed = translate(
        "AfterTool",
        tool_name="write_file",
        tool_input={},
        tool_response={"llmContent": "x", "error": {"type": "execution_failed", "message": "nope"}},
    )
    assert failed is not None and failed.name == "PostToolUseFailure"
    assert failed.payload["error"] == "nope"


def test_a_tool_permission_notification_is_an_approval_dialog() -> None:
    event = translate(
        "Notification",
        notification_type="ToolPermission",
        message="Tool Confirm Shell Command requires execution",
        details={
            "type": "exec",
            "title": "Confirm Shell Command",
            "command": "echo hi > g.txt",
            "rootCommand": "echo, redirection (>)",
        },
    )
    assert event is not None and event.name == "PermissionRequest"
    assert event.payload["tool_name"] == "run_shell_command"
    assert event.payload["tool_input"] == {
        "command": "echo hi > g.txt",
        "rootCommand": "echo, redirection (>)",
    }


def test_an_edits_approval_names_its_file_and_leaves_the_contents_to_the_screen() -> None:
    # The details Gemini CLI 0.61 serialises for an edit (its toSerializableDetails).
    event = translate(
        "Notification",
        notification_type="ToolPermission",
        message="Tool Edit requires editing",
        details={
            "type": "edit",
            "title": "Edit",
            "fileName": "a.py",
            "filePath": "/p/a.py",
            "fileDiff": "--- a\n+++ b\n",
            "originalContent": "x",
            "newContent": "y",
            "isModifying": False,
        },
    )
    assert event is not None and event.name == "PermissionRequest"
    assert event.payload["tool_name"] == "edit"
    assert event.payload["tool_input"] == {
        "file_path": "/p/a.py",
        "fileName": "a.py",
        "isModifying": False,
    }
    fetch = translate(
        "Notification",
        notification_type="ToolPermission",
        details={"type": "info", "title": "Fetch", "prompt": "p", "urls": ["https://x.test/"]},
    )
    assert fetch is not None and fetch.payload["tool_input"]["url"] == "https://x.test/"
    plan = translate(
        "Notification",
        notification_type="ToolPermission",
        details={"type": "exit_plan_mode", "title": "Plan"},
    )
    assert plan is not None and plan.payload["tool_name"] == "exit_plan_mode"


def test_the_question_dialogs_notification_is_no_approval() -> None:
    event = translate(
        "Notification",
        notification_type="ToolPermission",
        message="Tool requires confirmation",
        details={"type": "ask_user", "title": "Ask User"},
    )
    assert event is not None and event.name == "Notification"


def test_only_the_question_tools_before_tool_is_kept() -> None:
    questions = [{"question": "Which color?", "header": "Color", "type": "choice", "options": []}]
    ask = translate("BeforeTool", tool_name="ask_user", tool_input={"questions": questions})
    assert ask is not None and ask.name == "PreToolUse"
    assert translate("BeforeTool", tool_name="read_file", tool_input={}) is None


def test_an_answer_is_a_denial_whose_reason_the_model_reads() -> None:
    out = json.loads(GEMINI_ANSWERS.answer({}, {"Which color?": "Blue"}))
    assert out["decision"] == "deny"
    assert out["reason"].startswith("The user answered: Which color? → Blue.")
    assert json.loads(GEMINI_ANSWERS.deny("no")) == {"decision": "deny", "reason": "no"}


# -- launch -------------------------------------------------------------------------------


class Channel:
    def command(self, wait: float | None = None) -> str:
        return "hook-client" + (f" {wait:g}" if wait is not None else "")

    def address(self) -> tuple[str, str]:
        return "/s p/hooks.sock", "tok"


@pytest.fixture(autouse=True)
def system_settings_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where Gemini CLI reads ptysup's system settings file (root's private directory):
    test_gemini_home.py holds the home it gets elsewhere."""
    monkeypatch.setattr(home, "skipped_because", lambda path: None)


def test_launch_adds_the_session_settings_and_keeps_ci_from_the_agent(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    env = {"PATH": "/bin", "CI": "true", "GITHUB_ACTIONS": "true", "MYVAR": "1"}
    launch = GeminiProfile(SESSION).launch(["gemini", "--yolo"], env, Channel(), private)
    assert launch.argv == ["gemini", "--yolo", "--session-id", SESSION]
    assert "CI" not in launch.env and "GITHUB_ACTIONS" not in launch.env
    assert env["CI"] == "true"  # ptysup's own environment is left alone
    assert launch.env["MYVAR"] == "1" and launch.env["GEMINI_CLI_NO_RELAUNCH"] == "true"
    path = Path(launch.env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"])
    assert path.parent == private
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    data = json.loads(path.read_text())
    assert data["security"] == {"folderTrust": {"enabled": False}}
    assert "auth" not in data["security"]  # how the person signs in stays theirs
    hooks = data["hooks"]
    assert set(hooks) == {*settings.HOOKS, "BeforeTool"}
    assert hooks["AfterAgent"][0]["hooks"][0]["command"] == "hook-client"
    (ask,) = hooks["BeforeTool"]
    assert ask["matcher"] == "^ask_user$"
    assert ask["hooks"][0]["command"] == f"hook-client {settings.ASK_WAIT_S}"
    assert ask["hooks"][0]["timeout"] > settings.ASK_WAIT_S * 1000


def test_a_system_settings_file_already_in_use_is_kept_under_ptysups(tmp_path: Path) -> None:
    theirs = tmp_path / "admin.json"
    mine = {"hooks": {"AfterAgent": [{"hooks": [{"type": "command", "command": "audit"}]}]}}
    theirs.write_text(json.dumps({**mine, "security": {"folderTrust": {"enabled": True}}, "x": 1}))
    env = {"GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(theirs)}
    launch = GeminiProfile(SESSION).launch(["gemini"], env, Channel(), tmp_path)
    path = Path(launch.env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"])
    assert path != theirs and json.loads(theirs.read_text())["x"] == 1  # theirs untouched
    data = json.loads(path.read_text())
    assert data["x"] == 1 and data["security"]["folderTrust"] == {"enabled": False}
    commands = [h["hooks"][0]["command"] for h in data["hooks"]["AfterAgent"]]
    assert commands == ["audit", "hook-client"]


def test_a_reopened_conversation_is_resumed_by_its_id(tmp_path: Path) -> None:
    launch = GeminiProfile(SESSION, reopen=True).launch(["gemini"], {}, None, tmp_path)
    assert launch.argv == ["gemini", "--resume", SESSION]
    assert "hooks" not in json.loads(
        Path(launch.env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"]).read_text()
    )


def test_a_command_line_that_picks_its_conversation_keeps_it(tmp_path: Path) -> None:
    base = ["gemini", "--resume=latest"]
    assert GeminiProfile(SESSION).launch(base, {}, None, tmp_path).argv == base


def test_a_new_profile_picks_a_fresh_id() -> None:
    assert GeminiProfile().session_id != GeminiProfile().session_id


def test_a_recorded_run_reads_ready_working_ready_and_each_typed_text() -> None:
    # The demo's run with Gemini CLI, recorded by ptysup (fixtures/transcripts/gemini/).
    collapsed, typed = replay_readings(TRANSCRIPTS / "gemini" / "demo.cast", GeminiProfile(SESSION))
    assert collapsed == ["ready", "working", "ready", "working", "ready"]
    assert typed[0] == "implement feature X"
    assert typed[1].startswith("python3 -m unittest fails")
    assert typed[-1] == "/quit"


def test_the_stop_carries_the_conversations_tokens_from_gemini_clis_session_file(
    tmp_path: Path,
) -> None:
    # Lines as Gemini CLI 0.61 writes its session file (ids shortened).
    first = {
        "id": "m1",
        "type": "gemini",
        "content": "Hi.",
        "tokens": {"input": 100, "output": 9, "cached": 0, "total": 109},
    }
    lines = [
        {"sessionId": SESSION, "projectHash": "h", "startTime": "t", "kind": "main"},
        {"$set": {"messages": [{"id": "u0", "type": "user", "content": [{"text": "ctx"}]}]}},
        {"id": "u1", "type": "user", "content": [{"text": "say hello"}]},
        first,
        {"$set": {"lastUpdated": "t"}},
        {
            "id": "m2",
            "type": "gemini",
            "content": "Done.",
            "tokens": {"input": 150, "output": 5, "total": 155},
        },
        {"$set": {"messages": [first]}},  # listed again: counted once
    ]
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("\n".join(json.dumps(x) for x in lines) + "\nnot json\n")
    event = translate(
        "AfterAgent", prompt="p", prompt_response="Done.", transcript_path=str(transcript)
    )
    assert event is not None
    assert event.payload["tokens"] == {"input": 250, "output": 14, "total": 264}
    gone = translate(
        "AfterAgent", prompt="p", prompt_response="x", transcript_path=str(tmp_path / "no")
    )
    assert gone is not None and "tokens" not in gone.payload


def test_it_says_when_its_hooks_still_run() -> None:
    # Gemini CLI 0.61 draws its reply, then runs its hooks (AfterAgent: ptysup's) showing
    # `Executing Hooks: …` on its footer's row (a supervisor was shown it under load), and
    # erases it once they exited (answered_done, as the person's tmux pane showed).
    running = GeminiProfile.hooks_running
    assert running is not None
    assert [x for x in screen("answered").lines if running.match(x)]
    assert not [x for x in screen("answered_done").lines if running.match(x)]
    # One hook, running for seconds: a spinner before it, "Hook" alone.
    assert running.match(
        " ⠦ Executing Hook: ptysup (esc to cancel, 3s)" + " " * 50 + "? for shortcuts"
    )
    assert not running.match(" ⠦ Executing the plan (esc to cancel, 3s)")


def test_a_pasted_message_is_read_across_its_blank_lines() -> None:
    snap = screen("ready_empty")
    at = next(i for i, line in enumerate(snap.lines) if line.startswith(" > "))
    box = (" > The check failed:", "", "     FAIL: test_add", "", "   Fix it")
    typed = ScreenSnapshot((*snap.lines[:at], *box, *snap.lines[at + 1 :]), "", (0, 0))
    assert (
        GeminiProfile(SESSION).input_text(typed) == "The check failed:\n\nFAIL: test_add\n\nFix it"
    )


def test_in_yolo_mode_its_input_box_is_read_too() -> None:
    # --approval-mode yolo (what runs a command unasked) draws the box ` *   Type…`: ptysup
    # read no box then, and the agent never became ready (the conformance suite's run).
    snap = screen("ready_empty")
    yolo = [" *   " + PLACEHOLDER if x.startswith(" > ") else x for x in snap.lines]
    shown = ScreenSnapshot(tuple(yolo), snap.title, snap.cursor)
    assert GeminiProfile(SESSION).screen_state(shown) is ScreenState.READY
    assert GeminiProfile(SESSION).input_text(shown) == ""
    typed = [" *   fix the loop" if x.startswith(" > ") else x for x in snap.lines]
    assert GeminiProfile(SESSION).input_text(ScreenSnapshot(tuple(typed), "", (0, 0))) == (
        "fix the loop"
    )
