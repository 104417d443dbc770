"""Codex CLI's profile: its command line and environment, its in-band state, its composer,
its error lines and first-run screens (screens as Codex 0.169.0 drew them), and how its
question hook carries the supervisor's answer."""

from __future__ import annotations

import itertools
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from ptysup.agents import registry
from ptysup.agents.codex import profile as codex
from ptysup.agents.codex.profile import CodexProfile
from ptysup.agents.events import HookEvent, ScreenState, ScreenUpdate, TurnEnd, TurnEndKind
from ptysup.agents.session import AgentSession, Timings
from ptysup.events import EventLog
from ptysup.terminal.inject import Typist
from ptysup.terminal.screen import ScreenSnapshot
from tests.helpers import Tick, replay_readings

if sys.version_info >= (3, 11):
    import tomllib
else:  # ptysup's own dependency there
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

FOOTER = ("", "  fake-model default · /work", "  ← for agents · ? for shortcuts")
EMPTY = ("  >_ OpenAI Codex (v0.169.0)", "", "› Ask Codex to do anything", *FOOTER)
AFTER_TURN = (
    "› please run it",
    "",
    "• Ran echo hi > out.txt",
    "  └ (no output)",
    "",
    "• I wrote out.txt.",
    "",
    "  Worked for <1s • 17:58",
    "",
    "› Ask Codex to do anything",
    *FOOTER,
)
TYPED = ("› hello", "", "• Hi.", "", "› first line", "  second line", *FOOTER)
APPROVAL = (
    "› please esc",
    "",
    "• Running touch esc.txt",
    "",
    "  Would you like to run the following command?",
    "",
    "  Reason: May I touch esc.txt?",
    "",
    "  $ touch esc.txt",
    "",
    "› 1. Yes, proceed (y)",
    "  2. Yes, and don't ask again for commands that start with `touch esc.txt` (p)",
    "  3. No, and tell Codex what to do differently (esc)",
    "",
    "  Press enter to confirm or esc to cancel",
)
WORKING = ("› be slow", "", "◦ Working (1s • esc to interrupt)", "", "› Ask Codex to do anything")


def snap(
    lines: tuple[str, ...], signal: str = "", cursor: tuple[int, int] = (0, 0)
) -> ScreenSnapshot:
    return ScreenSnapshot(lines, "work", cursor, signal)


@pytest.mark.parametrize(
    ("lines", "signal", "state"),
    [
        (WORKING, "state=working:app=codex", ScreenState.WORKING),
        (AFTER_TURN, "state=done:app=codex", ScreenState.READY),
        (AFTER_TURN, "state=idle:app=codex", ScreenState.READY),
        (AFTER_TURN, "state=error:app=codex", ScreenState.READY),  # an API error's turn end
        (APPROVAL, "state=blocked:app=codex:kind=permission", ScreenState.DIALOG),
        (AFTER_TURN, "state=blocked:app=codex:kind=question", ScreenState.DIALOG),
        # Before its first report: the screen, but never ready (Codex draws its input box
        # a moment before the folder trust dialog, and reports idle only after it).
        (WORKING, "", ScreenState.WORKING),
        (APPROVAL, "", ScreenState.DIALOG),
        (EMPTY, "", ScreenState.UNKNOWN),
        (("  >_ OpenAI Codex (v0.169.0)",), "state=idle:app=codex", ScreenState.UNKNOWN),
    ],
)
def test_the_state_is_codex_s_own_report_then_its_screen(
    lines: tuple[str, ...], signal: str, state: ScreenState
) -> None:
    assert CodexProfile().screen_state(snap(lines, signal)) is state


def test_the_composer_reads_typed_text_never_its_placeholder() -> None:
    profile = CodexProfile()
    for empty in (EMPTY, AFTER_TURN):
        assert not profile.input_has_text(snap(empty))
        assert profile.input_text(snap(empty)) == ""
    assert profile.input_has_text(snap(TYPED))
    assert profile.input_text(snap(TYPED)) == "first line\nsecond line"
    # A dialog's choices are no composer.
    assert profile.input_text(snap(APPROVAL)) is None
    # The slash-command menu is drawn above the composer: the lowest `› ` line is the box.
    menu = ("› /clear  clear the terminal and start a new chat", "", "› /clear", *FOOTER)
    assert profile.input_text(snap(menu)) == "/clear"
    # A message with a blank line in it (a failing check's output) is read past it, to
    # the footer: read up to the blank line, it never showed whole and was not sent.
    output = ("› Not done: the check failed.", "  F", "", "  FAILED (failures=1)", *FOOTER)
    assert (
        profile.input_text(snap(output)) == "Not done: the check failed.\nF\n\nFAILED (failures=1)"
    )


def test_an_api_error_is_the_last_prompt_s_error_line_not_an_interrupt() -> None:
    profile = CodexProfile()
    limit = ("› go", "■ exceeded retry limit, last status: 429 Too Many Requests")
    assert profile.api_error(snap((*limit, "", "› Ask Codex to do anything", *FOOTER))) == (
        "exceeded retry limit, last status: 429 Too Many Requests"
    )
    interrupted = ("› go", "■ Conversation interrupted - use /feedback if something went wrong")
    assert profile.api_error(snap((*interrupted, "", "› Ask Codex to do anything"))) is None
    # An older prompt's error is not this turn's.
    later = (*limit, "", "› next", "• Fine.", "", "› Ask Codex to do anything")
    assert profile.api_error(snap(later)) is None


def test_first_run_screens_are_named_with_the_setting_that_skips_them() -> None:
    trust = (
        "  Folder access",
        "  Trust this folder? Codex can read, edit, and run files here, subject to your",
        "› 1. Trust and continue",
        "  2. Back to Agent Command Center",
    )
    hooks = ("  Hooks need review", "  1 hook is new or changed.", "› 1. Review hooks")
    profile = CodexProfile()
    assert profile.blocker(snap(trust)) is codex.TRUST
    assert codex.TRUST.describe().startswith("Codex is waiting on its folder trust dialog;")
    assert 'trust_level = "trusted"' in codex.TRUST.describe()
    assert profile.blocker(snap(hooks)) is codex.HOOK_REVIEW
    assert profile.blocker(snap(APPROVAL)) is codex.DIALOG
    assert profile.blocker(snap(AFTER_TURN)) is None


class Channel:
    """The hook channel as a profile sees it."""

    def command(self, wait: float | None = None) -> str:
        argv = ["/venv/python", "-I", "-S", "/x/hook_client.py", "/s p/hooks.sock", "tok"]
        return shlex.join(argv + ([f"{wait:g}"] if wait is not None else []))

    def address(self) -> tuple[str, str]:
        return "/s p/hooks.sock", "tok"


def _options(argv: list[str]) -> dict[str, Any]:
    """The `-c key=value` options of a command line, read as Codex reads them (TOML)."""
    found: dict[str, Any] = {}
    for flag, value in itertools.pairwise(argv):
        if flag == "-c":
            key, _, toml = value.partition("=")
            found[key] = tomllib.loads(f"v = {toml}")["v"]
    return found


def test_launch_adds_ptysup_s_hooks_no_daemon_and_a_term_codex_starts_with() -> None:
    launch = CodexProfile().launch(
        ["codex", "-m", "o3"], {"TERM": "dumb", "CI": "true"}, Channel(), Path("/p")
    )
    assert launch.argv[:4] == ["codex", "-m", "o3", "--no-daemon"]
    assert "--dangerously-bypass-hook-trust" in launch.argv
    assert launch.env == {"TERM": "xterm-256color", "CI": "true"}  # CI stays: Codex is fine
    options = _options(launch.argv)
    stop = options["hooks.Stop"]
    assert stop == [{"hooks": [{"type": "command", "command": Channel().command()}]}]
    assert set(options) == {f"hooks.{name}" for name in (*codex.HOOKS, "PreToolUse")}
    (ask,) = options["hooks.PreToolUse"]
    assert ask["matcher"] == "request_user_input"
    (handler,) = ask["hooks"]
    assert handler["command"] == Channel().command(wait=codex.ASK_WAIT_S)
    assert handler["timeout"] > codex.ASK_WAIT_S
    # Nothing of the person's is dropped; a TERM they set stays; without hooks, none added.
    kept = CodexProfile().launch(["codex", "--no-daemon"], {"TERM": "screen"}, None, Path("/p"))
    assert (kept.argv, kept.env) == (["codex", "--no-daemon"], {"TERM": "screen"})
    assert CodexProfile().launch(["codex"], {}, None, Path("/p")).env == {"TERM": "xterm-256color"}


def test_a_reopened_conversation_is_codex_resume_with_its_id() -> None:
    kind = registry.find(("/opt/bin/codex", "-m", "o3"))
    assert kind.name == "codex" and kind.resumes
    profile = kind.profile("019a-id", True)
    argv = profile.launch(["codex", "-m", "o3"], {}, None, Path("/p")).argv
    assert argv == ["codex", "resume", "019a-id", "-m", "o3", "--no-daemon"]
    fresh = kind.profile("ptysup-picked", False).launch(["codex"], {}, None, Path("/p")).argv
    assert fresh == ["codex", "--no-daemon"]  # Codex picks a new conversation's id itself
    # A command line that already names a subcommand keeps it.
    own = kind.profile("019a-id", True).launch(["codex", "resume", "--last"], {}, None, Path("/p"))
    assert own.argv == ["codex", "resume", "--last", "--no-daemon"]


class Reply:
    def __init__(self) -> None:
        self.sent: list[str] = []

    def send(self, text: str) -> bool:
        self.sent.append(text)
        return True


def test_a_question_is_answered_through_the_hook_s_deny_reason() -> None:
    questions = [
        {
            "id": "c",
            "header": "Colour",
            "question": "Which colour?",
            "options": [{"label": "Red", "description": "warm"}],
        }
    ]
    reply = Reply()
    payload = {
        "tool_name": "request_user_input",
        "tool_input": {"questions": questions},
        "tool_use_id": "call_1",
    }
    event = HookEvent("PreToolUse", payload, 0.0, reply)
    profile = CodexProfile()
    assert profile.hook(event) is event  # Codex's names are ptysup's already
    ask = profile.ask(event)
    assert ask is not None and ask.questions[0].text == "Which colour?"
    assert ask.questions[0].options[0].label == "Red"
    assert ask.answer({"Which colour?": "Red"})
    out = json.loads(reply.sent[0])["hookSpecificOutput"]
    assert (out["hookEventName"], out["permissionDecision"]) == ("PreToolUse", "deny")
    assert out["permissionDecisionReason"] == (
        "The user answered (no picker was shown): 'Which colour?': Red"
    )
    other = HookEvent("PreToolUse", {**payload, "tool_name": "Bash"}, 0.0, Reply())
    assert profile.ask(other) is None


def _session(screen: list[ScreenSnapshot], written: list[bytes], **timings: float) -> AgentSession:
    return AgentSession(
        CodexProfile(),
        Typist(written.append, pause=lambda s: None),
        lambda: screen[0],
        EventLog(),
        Timings(confirm=0.5, landed=0.2, settle=0.02, settle_max=0.05, **timings),
        clock=Tick(0.01),
    )


def test_a_dialog_codex_keeps_drawing_under_stalls_the_turn_after_the_turn_timeout() -> None:
    # Codex animates its screen under an approval dialog: output never goes quiet.
    blocked = snap(APPROVAL, "state=blocked:app=codex:kind=permission")
    session = _session([blocked], [], turn=0.5)
    for n in range(1000):
        session.post(ScreenUpdate(ScreenState.DIALOG, n * 0.01))
    turn = session.wait_turn_end()
    assert isinstance(turn, TurnEnd) and (turn.kind, turn.dialog) == (TurnEndKind.STALLED, True)
    assert session.now() < 2.0  # not when the drawing stopped (at 10 s)


def test_clear_is_confirmed_by_the_emptied_composer_not_a_session_start() -> None:
    # Codex 0.169 sends the new conversation's SessionStart only with its first prompt.
    typed = snap(("› /clear", *FOOTER), "state=idle:app=codex")
    cleared = snap(EMPTY, "state=idle:app=codex")
    screen = [snap(EMPTY, "state=idle:app=codex")]
    written: list[bytes] = []
    session = _session(screen, written)
    session.state = ScreenState.READY

    class Shows(Typist):
        def keys(self, text: str) -> None:
            super().keys(text)
            screen[0] = typed

        def enter(self) -> None:
            super().enter()
            screen[0] = cleared
            session.post(ScreenUpdate(ScreenState.READY, 0.0))

    session._typist = Shows(written.append, pause=lambda s: None)
    result = session.clear()
    assert result is not None and result.confirmed, written
    assert b"/clear" in b"".join(written)


def test_a_recorded_run_reads_ready_working_ready_and_each_typed_text() -> None:
    # The demo's run with Codex, recorded by ptysup (fixtures/transcripts/codex/): its
    # states come from the OSC 7501 reports in the output, as in a run.
    cast = Path(__file__).resolve().parents[2] / "fixtures/transcripts/codex/demo.cast"
    collapsed, typed = replay_readings(cast, CodexProfile(), signal_osc=7501)
    assert collapsed == ["ready", "working", "ready", "working", "ready"]
    assert typed[0] == "implement feature X"
    assert typed[1].startswith("python3 -m unittest fails")
    assert "/exit" in typed
