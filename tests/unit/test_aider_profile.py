"""aider's profile: screens captured from the real 0.86.2 in tmux (fixtures/aider/*.txt,
each with the cursor where tmux showed it), its command line, and its notification."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from ptysup.agents import registry
from ptysup.agents.aider.profile import CONFIRMATION, AiderProfile, confirmation
from ptysup.agents.events import HookEvent, ScreenState
from ptysup.terminal.screen import ScreenSnapshot

SCREENS = Path(__file__).resolve().parents[2] / "fixtures" / "aider"
SESSION = "11111111-2222-3333-4444-555555555555"
# Where tmux showed the cursor (row, column) with each captured screen.
CURSORS = {
    "ready_empty": (9, 6),
    "typed": (9, 13),
    "working": (11, 5),
    "ready_after": (17, 6),
    "multiline": (18, 22),
    "dialog_new_file": (29, 35),
    "after_no": (26, 6),
}


def screen(name: str, width: int = 100) -> ScreenSnapshot:
    """A captured screen as ptysup's model holds it: every line padded to the width."""
    lines = (SCREENS / f"{name}.txt").read_text(encoding="utf-8").splitlines()
    return ScreenSnapshot(tuple(line.ljust(width) for line in lines), "", CURSORS[name])


@pytest.mark.parametrize(
    ("name", "state", "text"),
    [
        ("ready_empty", ScreenState.READY, ""),
        ("typed", ScreenState.READY, "be slow"),
        ("working", ScreenState.WORKING, None),
        ("ready_after", ScreenState.READY, ""),
        ("multiline", ScreenState.READY, "line one of text\nline two of text"),
        ("dialog_new_file", ScreenState.DIALOG, None),
        ("after_no", ScreenState.READY, ""),
    ],
)
def test_states_and_the_prompt_read_off_real_screens(
    name: str, state: ScreenState, text: str | None
) -> None:
    profile = AiderProfile(SESSION)
    snap = screen(name)
    assert profile.screen_state(snap) is state
    assert profile.input_text(snap) == text
    assert profile.input_has_text(snap) is bool(text)


def test_the_prompt_is_read_only_where_the_cursor_is() -> None:
    # The same screen with the cursor in the reply's text: aider is busy, not waiting.
    snap = screen("ready_after")
    moved = ScreenSnapshot(snap.lines, "", (snap.cursor[0] - 3, 0))
    assert AiderProfile().screen_state(moved) is ScreenState.WORKING
    assert AiderProfile().input_text(moved) is None


def test_a_confirmation_is_a_dialog_and_a_blocker_and_reads_whole() -> None:
    snap = screen("dialog_new_file")
    assert confirmation(snap) == "Create new file? (Y)es/(N)o [Yes]:"
    blocker = AiderProfile().blocker(snap)
    assert blocker is not None and blocker.fix == CONFIRMATION.fix
    assert blocker.describe().startswith(
        'aider is waiting on its confirmation "Create new file? (Y)es/(N)o [Yes]:"; answer it'
    )
    assert AiderProfile().blocker(screen("ready_empty")) is None
    # Wrapped in a narrow terminal, its start a line above the cursor's.
    wrapped = ScreenSnapshot(("out.txt", "Create new file? (Y)es/(N)", "o [Yes]: "), "", (2, 9))
    assert confirmation(wrapped) == "Create new file? (Y)es/(N)o [Yes]:"
    assert AiderProfile().screen_state(wrapped) is ScreenState.DIALOG


def test_a_shell_commands_confirmation_with_more_choices_is_a_dialog_too() -> None:
    # As aider 0.86.2 draws it after proposing a ```bash block.
    lines = ("echo hi > shell.txt", "Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]: ")
    snap = ScreenSnapshot(lines, "", (1, 55))
    assert AiderProfile().screen_state(snap) is ScreenState.DIALOG
    assert confirmation(snap) == "Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:"
    # The same words in the model's reply, the cursor elsewhere, are no dialog.
    assert AiderProfile().screen_state(ScreenSnapshot(lines, "", (0, 0))) is not ScreenState.DIALOG


def test_no_is_the_answer_ptysup_gives_and_never_a_bare_enter() -> None:
    # aider's default is Yes: an Enter alone would approve.
    assert AiderProfile.dismiss_key == b"n\r"


def test_the_first_run_switches_are_added_unless_given_and_the_notifications_wired() -> None:
    profile = AiderProfile(SESSION)
    argv = profile.argv(["aider", "--gitignore", "--analytics", "x.py"], "NOTIFY")
    assert argv[:4] == ["aider", "--gitignore", "--analytics", "x.py"]
    assert "--no-gitignore" not in argv and "--analytics-disable" not in argv
    for flag in (
        "--no-show-model-warnings",
        "--no-show-release-notes",
        "--no-check-update",
        "--fancy-input",
        "--no-multiline",
    ):
        assert argv.count(flag) == 1
    given = AiderProfile().argv(["aider", "--multiline", "--no-fancy-input"], None)
    assert "--no-multiline" not in given and "--fancy-input" not in given
    assert argv[-3:] == ["--notifications", "--notifications-command", "NOTIFY"]
    assert "--restore-chat-history" not in argv


def test_the_persons_notifications_command_runs_after_ptysups() -> None:
    argv = AiderProfile().argv(["aider", "--notifications-command=notify-send hi"], "NOTIFY")
    assert argv[-1] == "NOTIFY; notify-send hi"
    assert [a for a in argv if "notify-send" in a] == ["NOTIFY; notify-send hi"]


def test_a_resumed_run_restores_the_chat_history() -> None:
    assert "--restore-chat-history" in AiderProfile(SESSION, reopen=True).argv(["aider"], None)
    given = AiderProfile(SESSION, reopen=True).argv(["aider", "--no-restore-chat-history"], None)
    assert "--restore-chat-history" not in given


class _Hooks:
    """A hook channel whose command prints what it is given on stdin."""

    def command(self, wait: float | None = None) -> str:
        return "cat"

    def address(self) -> tuple[str, str]:
        return "/s p/hooks.sock", "tok"


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
def test_the_notification_command_feeds_the_hook_client_this_runs_payload() -> None:
    command = AiderProfile(SESSION).notify_command(_Hooks())
    # aider runs it through the shell, as here.
    out = subprocess.run(command, shell=True, capture_output=True, text=True, check=True).stdout
    payload = json.loads(out)
    assert payload == {
        "hook_event_name": "Notification",
        "notification_type": "aider_waits",
        "session_id": SESSION,
    }
    assert shlex.split(command)[:2] == ["printf", "%s"]


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
def test_the_hook_token_is_never_on_the_line_aider_logs_nor_in_its_environment(
    tmp_path: Path,
) -> None:
    import threading

    from ptysup.agents.hookchannel import HookChannel

    heard = threading.Event()
    with HookChannel(on_event=lambda event: heard.set(), parent=str(tmp_path)) as channel:
        launch = AiderProfile(SESSION).launch(
            ["aider"], {"PATH": "/usr/bin:/bin"}, channel, tmp_path
        )
        command = launch.argv[launch.argv.index("--notifications-command") + 1]
        token = channel.address()[1]
        # aider writes its command line into .aider.chat.history.md, in the project.
        assert token not in " ".join(launch.argv)
        assert token not in launch.env.values()  # the command reads the private address file
        # aider runs the command through the shell, in its environment: ptysup hears it.
        subprocess.run(["sh", "-c", command], env=launch.env, check=True, timeout=30)
        assert heard.wait(10)


def test_the_notification_is_a_stop_and_nothing_else_is_heard() -> None:
    profile = AiderProfile(SESSION)
    payload = {"hook_event_name": "Notification", "session_id": SESSION}
    stop = profile.hook(HookEvent("Notification", payload, 1.0))
    assert stop is not None and stop.name == "Stop"
    assert stop.payload["hook_event_name"] == "Stop"
    assert profile.hook(HookEvent("SessionStart", payload, 1.0)) is None


def test_aider_is_known_by_its_programs_name() -> None:
    assert registry.find(["/opt/venv/bin/aider", "x.py"]).name == "aider"
    assert registry.find(["aider-wrapper"]).name == "generic"
    assert registry.find(["aider"]).tested == ("0.86.2",)


@pytest.mark.parametrize(
    ("given", "term"), [("dumb", "xterm-256color"), ("", "xterm-256color"), ("screen", "screen")]
)
def test_aider_gets_a_term_it_draws_its_prompt_in(given: str, term: str) -> None:
    launch = AiderProfile().launch(["aider"], {"TERM": given, "X": "1"}, None, Path("/nonexistent"))
    assert launch.env == {"TERM": term, "X": "1"}


@pytest.mark.parametrize("prompt", ["> ", "ask> ", "ask multi> ", "architect> ", "diff> "])
def test_every_prompt_aider_draws_reads_as_ready(prompt: str) -> None:
    # The edit format's name (none for `whole`, the default), and `multi` in multi-line
    # mode, as aider 0.86.2 draws them under its rule (an empty line with --no-pretty).
    for above in ("─" * 40, ""):
        snap = ScreenSnapshot(("Tokens: 1k", above, prompt + "fix it", ""), "", (2, 12))
        assert AiderProfile().screen_state(snap) is ScreenState.READY
        assert AiderProfile().input_text(snap) == "fix it"
    # The model's text right above: a line it streams, not aider's prompt.
    reply = ScreenSnapshot(("Tokens: 1k", prompt + "fix it"), "", (1, 12))
    assert AiderProfile().screen_state(reply) is ScreenState.WORKING
