"""opencode's profile: screens captured from the real 1.18.33 in tmux
(fixtures/opencode/*.txt), its reporter's events in ptysup's vocabulary, its command line,
environment, TUI config and plugin, and readiness that waits for its ready hook."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from ptysup.agents.events import HookEvent, ScreenState, ScreenUpdate
from ptysup.agents.opencode import reporter
from ptysup.agents.opencode.profile import (
    DIALOG,
    OPENCODE_ANSWERS,
    QUIET_ENV,
    READY,
    OpencodeProfile,
)
from ptysup.agents.session import AgentSession, Timings
from ptysup.events import EventLog
from ptysup.terminal.inject import Typist
from ptysup.terminal.screen import ScreenSnapshot

SCREENS = Path(__file__).resolve().parents[2] / "fixtures" / "opencode"


def screen(name: str, width: int = 100) -> ScreenSnapshot:
    """A captured screen as ptysup's model holds it: every line padded to the width."""
    lines = (SCREENS / f"{name}.txt").read_text(encoding="utf-8").splitlines()
    return ScreenSnapshot(tuple(line.ljust(width) for line in lines), "OC | x", (0, 0))


@pytest.mark.parametrize(
    ("name", "state", "text"),
    [
        ("home_empty", ScreenState.READY, ""),
        ("home_typed", ScreenState.READY, "be slow"),
        ("slash_menu", ScreenState.READY, "/exit"),  # the menu above the box is no text
        ("working", ScreenState.WORKING, ""),
        ("session_empty", ScreenState.READY, ""),
        ("session_typed", ScreenState.READY, "one line typed"),
        ("pasted", ScreenState.READY, "[Pasted ~3 lines]"),
        ("dialog_permission", ScreenState.DIALOG, None),
        ("dialog_question", ScreenState.DIALOG, None),
    ],
)
def test_states_and_the_input_box_read_off_real_screens(
    name: str, state: ScreenState, text: str | None
) -> None:
    profile = OpencodeProfile()
    snap = screen(name)
    assert profile.screen_state(snap) is state
    assert profile.input_text(snap) == text
    assert profile.input_has_text(snap) is bool(text)


def test_a_dialog_is_a_blocker_and_the_input_box_is_not() -> None:
    profile = OpencodeProfile()
    assert profile.blocker(screen("dialog_permission")) is DIALOG
    assert profile.blocker(screen("home_empty")) is None


def _event(name: str, reply: object = None, **payload: object) -> HookEvent:
    return HookEvent(name, {"hook_event_name": name, "session_id": "ses_1", **payload}, 1.0)


@pytest.mark.parametrize(
    ("raw", "ours"),
    [
        ("tui.ready", READY),
        ("SessionStart", "SessionStart"),
        ("prompt", "UserPromptSubmit"),
        ("session.idle", "Stop"),
        ("session.error", "StopFailure"),
        ("permission.asked", "PermissionRequest"),
    ],
)
def test_the_reporters_events_get_ptysups_names(raw: str, ours: str) -> None:
    translated = OpencodeProfile().hook(_event(raw))
    assert translated is not None
    assert (translated.name, translated.payload["hook_event_name"]) == (ours, ours)


def test_an_unknown_event_is_ignored() -> None:
    assert OpencodeProfile().hook(_event("message.updated")) is None


class _Reply:
    def __init__(self) -> None:
        self.sent: list[str] = []

    def send(self, text: str) -> bool:
        self.sent.append(text)
        return True


QUESTIONS = [
    {"question": "Colour?", "header": "C", "multiple": False, "options": [{"label": "Red"}]},
    {"question": "Sizes?", "header": "S", "multiple": True, "options": [{"label": "S"}]},
]


def test_a_question_becomes_an_ask_answered_with_one_list_per_question() -> None:
    profile = OpencodeProfile()
    reply = _Reply()
    raw = HookEvent(
        "question.asked",
        {"hook_event_name": "question.asked", "session_id": "s", "questions": QUESTIONS},
        1.0,
        reply,
    )
    event = profile.hook(raw)
    assert event is not None and event.name == "PreToolUse"
    ask = profile.ask(event)
    assert ask is not None
    assert [(q.text, q.multi_select) for q in ask.questions] == [
        ("Colour?", False),
        ("Sizes?", True),
    ]
    assert ask.answer({"Colour?": "Red", "Sizes?": "S, M"})
    assert json.loads(reply.sent[0]) == {"answers": [["Red"], ["S", "M"]]}


def test_a_denied_question_is_rejected() -> None:
    assert json.loads(OPENCODE_ANSWERS.deny("no"))["reject"] is True


def test_a_question_that_does_not_wait_is_no_ask() -> None:
    event = OpencodeProfile().hook(_event("question.asked", questions=QUESTIONS))
    assert event is not None and OpencodeProfile().ask(event) is None


@pytest.mark.parametrize(
    ("base", "reopen", "argv"),
    [
        (["opencode"], False, ["opencode"]),
        (["opencode"], True, ["opencode", "--session", "ses_9"]),
        (["opencode", "-s", "ses_1"], True, ["opencode", "-s", "ses_1"]),
        (["opencode", "--continue"], True, ["opencode", "--continue"]),
    ],
)
def test_a_reopened_conversation_is_named_on_the_command_line(
    base: list[str], reopen: bool, argv: list[str]
) -> None:
    assert OpencodeProfile("ses_9", reopen).argv(base) == argv


class _Hooks:
    def command(self, wait: float | None = None) -> str:
        return "hook-client" + (f" {wait:g}" if wait is not None else "")

    def address(self) -> tuple[str, str]:
        return "/s p/hooks.sock", "tok"


def test_launch_loads_the_reporter_beside_the_persons_tui_config(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    theirs = tmp_path / "their-tui.json"
    theirs.write_text(json.dumps({"theme": "nord", "plugin": ["file:///their.js"]}))
    env = {"OPENCODE_TUI_CONFIG": str(theirs), "OPENCODE_DISABLE_SHARE": "0"}
    launch = OpencodeProfile().launch(["opencode"], env, _Hooks(), private)
    config = Path(launch.env[reporter.ENV])
    assert config.parent == private
    data = json.loads(config.read_text())
    plugin = private / reporter.PLUGIN_NAME
    assert data == {"theme": "nord", "plugin": ["file:///their.js", plugin.as_uri()]}
    source = plugin.read_text()
    assert '"/s p/hooks.sock"' in source and '"tok"' in source and "hook-client 86400" in source
    assert "__" not in source.replace("__dirname", "")  # every placeholder filled
    for path in (plugin, config):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    # The quiet switches are set, but the person's own value wins.
    assert launch.env["OPENCODE_DISABLE_SHARE"] == "0"
    assert launch.env["OPENCODE_DISABLE_AUTOUPDATE"] == QUIET_ENV["OPENCODE_DISABLE_AUTOUPDATE"]
    assert json.loads(theirs.read_text())["plugin"] == ["file:///their.js"]  # untouched


def test_launch_without_hooks_writes_nothing(tmp_path: Path) -> None:
    launch = OpencodeProfile().launch(["opencode"], {}, None, tmp_path)
    assert reporter.ENV not in launch.env and not list(tmp_path.iterdir())


def _session(snap: ScreenSnapshot) -> AgentSession:
    return AgentSession(
        OpencodeProfile(),
        Typist(lambda data: None, pause=lambda s: None),
        lambda: snap,
        EventLog(),
        Timings(ready=0.5, idle=0.05),
    )


def test_ready_waits_for_the_ready_hook_not_for_a_quiet_screen() -> None:
    session = _session(screen("home_empty"))
    session.post(ScreenUpdate(ScreenState.READY, 0.0))
    with pytest.raises(TimeoutError):
        session.wait_ready()  # the box on screen, quiet long after: not ready


def test_ready_once_the_hook_came_and_the_screen_shows_the_box() -> None:
    session = _session(screen("home_empty"))
    session.post(_event("Ready", source="startup"))
    session.post(ScreenUpdate(ScreenState.READY, 0.0))
    session.wait_ready()
    assert session.state is ScreenState.READY


def test_the_footer_asking_for_a_second_esc_is_still_working() -> None:
    snap = screen("working")
    again = tuple(line.replace("esc interrupt", "esc again to interrupt") for line in snap.lines)
    assert OpencodeProfile().screen_state(ScreenSnapshot(again, "", (0, 0))) is ScreenState.WORKING


def test_only_an_id_opencode_picked_is_a_saved_conversation() -> None:
    from ptysup.agents import registry

    saved = registry.find(["opencode"]).saved
    assert saved("ses_deb6dd8dcffejdjmgP4SKmjHJX", {})
    assert not saved("0bed0269-3ae1-4700-b142-f41ab33052b4", {})  # ptysup's, never opencode's
