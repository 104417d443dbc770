"""Qwen Code's profile: screens captured from the real 0.24.4 in tmux (fixtures/qwen/*.txt),
its hook payloads as recorded, its command line, environment and settings file."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from ptysup.agents.events import HookEvent, ScreenState
from ptysup.agents.qwen import launcher, settings
from ptysup.agents.qwen.profile import (
    DIALOG,
    PLACEHOLDER,
    QWEN_ANSWERS,
    QwenProfile,
    conversation_tokens,
)
from ptysup.terminal.screen import ScreenSnapshot

SCREENS = Path(__file__).resolve().parents[2] / "fixtures" / "qwen"
SESSION = "11111111-2222-3333-4444-555555555555"
# The titles Qwen Code 0.24.4 wrote with each captured screen.
TITLES = {
    "working": "◐︎ Qwen - proj",
    "working_typed": "◐︎ Qwen - proj",
    "dialog_shell": "✳︎ Qwen - proj",
    "dialog_ask": "✳︎ Qwen - proj",
}


def screen(name: str, width: int = 100, title: str | None = None) -> ScreenSnapshot:
    """A captured screen as ptysup's model holds it: every line padded to the width."""
    lines = (SCREENS / f"{name}.txt").read_text(encoding="utf-8").splitlines()
    shown = TITLES.get(name, "Qwen - proj") if title is None else title
    return ScreenSnapshot(tuple(line.ljust(width) for line in lines), shown, (0, 0))


@pytest.mark.parametrize(
    ("name", "state", "text"),
    [
        ("ready_empty", ScreenState.READY, ""),
        ("typed", ScreenState.READY, "be slow"),
        ("working", ScreenState.WORKING, ""),
        ("working_typed", ScreenState.WORKING, "typed while busy"),
        ("ready_typed", ScreenState.READY, "typed while busy"),
        ("cancelled", ScreenState.READY, ""),
        ("dialog_shell", ScreenState.DIALOG, None),
        ("dialog_ask", ScreenState.DIALOG, None),
        ("multiline", ScreenState.READY, "line one of text\nline two of text"),
    ],
)
def test_states_and_the_input_box_read_off_real_screens(
    name: str, state: ScreenState, text: str | None
) -> None:
    profile = QwenProfile(SESSION)
    snap = screen(name)
    assert profile.screen_state(snap) is state
    assert profile.input_text(snap) == text
    assert profile.input_has_text(snap) is bool(text)


@pytest.mark.parametrize(
    ("name", "state"),
    [
        ("working", ScreenState.WORKING),
        ("dialog_shell", ScreenState.DIALOG),
        ("dialog_ask", ScreenState.DIALOG),
    ],
)
def test_the_screen_alone_tells_working_and_dialogs_without_the_title(
    name: str, state: ScreenState
) -> None:
    assert QwenProfile(SESSION).screen_state(screen(name, title="")) is state


@pytest.mark.parametrize(
    ("title", "state"),
    [("◐︎ Qwen - proj", ScreenState.WORKING), ("✳︎ Qwen - proj", ScreenState.DIALOG)],
)
def test_the_title_says_working_or_a_dialog_where_the_screen_shows_the_box(
    title: str, state: ScreenState
) -> None:
    assert QwenProfile(SESSION).screen_state(screen("ready_empty", title=title)) is state


def test_a_dialog_is_a_blocker_to_explain_and_the_ready_box_is_none() -> None:
    profile = QwenProfile(SESSION)
    assert profile.blocker(screen("dialog_shell")) is DIALOG
    assert profile.blocker(screen("ready_empty")) is None
    assert profile.api_error(screen("ready_empty")) is None


def test_the_dialog_blocks_only_once_its_choices_are_drawn() -> None:
    # Recorded: the `✳` title comes 0.16 s before the dialog, over the turn's screen; the
    # supervisor must be shown the dialog, not the frame before it.
    profile = QwenProfile(SESSION)
    titled = screen("working", title="✳︎ Qwen - proj")
    assert profile.screen_state(titled) is ScreenState.DIALOG  # nothing is typed into it
    assert profile.blocker(titled) is None


def _event(name: str, reply: Any = None, **payload: Any) -> HookEvent:
    return HookEvent(name, {"hook_event_name": name, **payload}, 0.0, reply)


class Reply:
    def __init__(self) -> None:
        self.sent: list[str] = []

    def send(self, text: str) -> bool:
        self.sent.append(text)
        return True


def test_a_continuations_empty_prompt_is_no_prompt() -> None:
    profile = QwenProfile(SESSION)
    assert profile.hook(_event("UserPromptSubmit", prompt="")) is None
    typed = profile.hook(_event("UserPromptSubmit", prompt="write out.txt"))
    assert typed is not None and typed.name == "UserPromptSubmit"


def test_an_approval_is_a_permission_request_and_a_question_is_asked_through_its_wait() -> None:
    profile = QwenProfile(SESSION)
    shell = profile.hook(_event("PermissionRequest", tool_name="run_shell_command"))
    assert shell is not None and shell.name == "PermissionRequest"
    questions = {"questions": [{"question": "Which color?", "header": "Color", "options": []}]}
    ask = {"tool_name": "ask_user_question", "tool_input": questions}
    assert profile.hook(_event("PermissionRequest", **ask)) is None  # the report only
    reply = Reply()
    waiting = profile.hook(_event("PermissionRequest", reply, **ask))
    assert waiting is not None and waiting.name == "PreToolUse"
    asked = profile.ask(waiting)
    assert asked is not None and [q.text for q in asked.questions] == ["Which color?"]
    assert asked.answer({"Which color?": "Blue"})
    decision = json.loads(reply.sent[0])["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "deny"  # never an allow: the picker stays shut
    assert decision["message"].startswith("The user answered: Which color? → Blue.")


def test_a_refusal_is_a_denial_with_its_reason() -> None:
    out = json.loads(QWEN_ANSWERS.deny("no questions now"))["hookSpecificOutput"]
    assert out == {
        "hookEventName": "PermissionRequest",
        "decision": {"behavior": "deny", "message": "no questions now"},
    }


def test_a_stop_carries_the_conversations_tokens_from_the_session_file(tmp_path: Path) -> None:
    transcript = tmp_path / "chat.jsonl"
    usage = [
        {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
        {"promptTokenCount": 130, "candidatesTokenCount": 5, "totalTokenCount": 135},
    ]
    records = [
        {"type": "user", "uuid": "u1", "message": {}},
        *({"type": "assistant", "uuid": f"a{i}", "usageMetadata": u} for i, u in enumerate(usage)),
        {"type": "system", "uuid": "s1", "usageMetadata": usage[0]},
    ]
    transcript.write_text("\n".join(json.dumps(r) for r in records) + "\nnot json\n")
    stop = QwenProfile(SESSION).hook(_event("Stop", transcript_path=str(transcript)))
    assert stop is not None
    assert stop.payload["tokens"] == {"input": 230, "output": 15, "total": 245}
    assert conversation_tokens(str(tmp_path / "missing.jsonl")) is None


def test_the_command_line_picks_the_conversation_unless_the_person_did() -> None:
    assert QwenProfile(SESSION).argv(["qwen"]) == ["qwen", "--session-id", SESSION]
    assert QwenProfile(SESSION, reopen=True).argv(["qwen", "-y"]) == [
        "qwen",
        "-y",
        "--resume",
        SESSION,
    ]
    assert QwenProfile(SESSION).argv(["qwen", "--continue"]) == ["qwen", "--continue"]


class Hooks:
    def command(self, wait: float | None = None) -> str:
        return "hook-client" + (f" {wait:g}" if wait is not None else "")

    def address(self) -> tuple[str, str]:
        return "/s p/hooks.sock", "tok"


def test_launch_writes_a_private_settings_file_over_the_persons_own(tmp_path: Path) -> None:
    theirs = tmp_path / "system.json"
    mine = {"hooks": [{"type": "command", "command": "mine"}]}
    theirs.write_text(json.dumps({"model": {"name": "x"}, "hooks": {"Stop": [mine]}}))
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    env = {"PATH": "/usr/bin", settings.ENV: str(theirs)}
    launch = QwenProfile(SESSION).launch(["qwen"], env, Hooks(), private)
    path = Path(launch.env[settings.ENV])
    assert path.parent == private and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert launch.env[settings.NO_RELAUNCH] == "true"
    data = json.loads(path.read_text())
    assert data["model"] == {"name": "x"}  # the person's settings kept
    assert data["hooks"]["Stop"][0] == mine  # and their hooks, before ptysup's
    assert data["hooks"]["Stop"][1]["hooks"][0]["command"] == "hook-client"
    assert data["ui"]["enableFollowupSuggestions"] is False
    report, ask = data["hooks"]["PermissionRequest"]
    assert report["matcher"] == "^(?!ask_user_question$).*$"
    assert ask["matcher"] == "^ask_user_question$"
    assert ask["hooks"][0]["command"] == f"hook-client {settings.ASK_WAIT_S}"
    assert json.loads(theirs.read_text())["hooks"] == {"Stop": [mine]}  # theirs unchanged


def test_a_supervisor_skips_the_npm_launcher_whose_child_would_outlive_ptysup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "node_modules" / "@qwen-code" / "qwen-code"
    package.mkdir(parents=True)
    (package / "cli.js").write_text("")
    (package / launcher.ENTRY).write_text("#!/usr/bin/env node\n")
    (package / launcher.ENTRY).chmod(0o755)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "qwen").symlink_to(package / launcher.ENTRY)
    node = bin_dir / "node"
    node.write_text("")
    node.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    assert launcher.direct(["qwen", "-p", ""]) == [
        str(node),
        "--expose-gc",
        str(package / "cli.js"),
        "-p",
        "",
    ]
    other = bin_dir / "other"
    other.write_text("")
    other.chmod(0o755)
    assert launcher.direct([str(other), "-p"]) == [str(other), "-p"]
    monkeypatch.setenv("PATH", os.defpath)
    assert launcher.direct(["no-such-qwen"]) == ["no-such-qwen"]


def test_a_pasted_message_is_read_across_its_blank_and_indented_lines() -> None:
    # A blank line ended the box's text (and then the box was not found at all), so a
    # message with one (a failed check's output) never counted as landed and was not sent.
    snap = screen("multiline")
    at = next(i for i, line in enumerate(snap.lines) if line.startswith("> line one"))
    box = ("> The check failed:", "", "    FAIL: test_add", "", "  Fix it")
    typed = ScreenSnapshot((*snap.lines[:at], *box, *snap.lines[at + 2 :]), "", (0, 0))
    assert QwenProfile(SESSION).input_text(typed) == "The check failed:\n\nFAIL: test_add\n\nFix it"


def test_its_tokens_skip_a_line_that_is_no_json_object(tmp_path: Path) -> None:
    # A line cut by a kill, a list, and one too deep for Python: each is skipped (a list
    # raised AttributeError, a deep line RecursionError, at every turn end).
    usage = {"promptTokenCount": 10, "candidatesTokenCount": 2, "totalTokenCount": 12}
    good = {"uuid": "a1", "type": "assistant", "usageMetadata": usage}
    lines = ['{"uuid": "cut', "[1, 2]", "[" * 100_000 + "]" * 100_000, json.dumps(good)]
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(lines))
    assert conversation_tokens(str(path)) == {"input": 10, "output": 2, "total": 12}


def test_in_yolo_mode_its_input_box_is_read_too() -> None:
    # --approval-mode yolo draws the box `*   Type…`: ptysup read no box then, and the agent
    # never became ready (the conformance suite's shell test).
    snap = screen("ready_empty")
    at = next(i for i, line in enumerate(snap.lines) if line.startswith("> "))
    yolo = (*snap.lines[:at], "*   " + PLACEHOLDER, *snap.lines[at + 1 :])
    shown = ScreenSnapshot(yolo, snap.title, snap.cursor)
    assert QwenProfile(SESSION).screen_state(shown) is ScreenState.READY
    assert QwenProfile(SESSION).input_text(shown) == ""
    # Typed text follows `* ` and the cursor's zero-width space (0.24.4, as a run drew it):
    # read as no box, the task was never sent, and the conformance test passed on the
    # person-like `/quit` that ptysup typed behind it at the end.
    typed = (*snap.lines[:at], "* fix the loop \u200b", *snap.lines[at + 1 :])
    assert QwenProfile(SESSION).input_text(ScreenSnapshot(typed, "", (0, 0))) == "fix the loop"
