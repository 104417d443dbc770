"""A secret the agent prints is hidden from the supervisor even when Claude Code wraps it
over several screen lines: the real Claude Code in an 80- and a 120-column terminal."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from ptysup.testing.fakemodel import RequestKind
from tests.e2e.conftest import AGENT, Rig
from tests.helpers import Tmux, ptysup_argv, read_events, terminal_script, wait_for

pytestmark = pytest.mark.e2e

# A made-up key in the shape of an Anthropic one (108 characters); written after the
# variable's name it is one word of 126, broken over rows in an 80- and a 120-column pane.
KEY = (
    "sk-ant-api03-" + "Qx7Lm2Vb9Kp4Tz8Wn3Rc6Hy1Jd5Fg0Sa" * 2 + "Ue4Io8Pq2Zx6Cv" * 2 + "-Ab3Cd5Ef7AA"
)
FRAGMENT = 8  # no run of this many characters of the key may reach the supervisor
REPLY = f"Your new API key is set: ANTHROPIC_API_KEY={KEY} and it is in the vault now."
SCENARIO = {
    "agent": [{"reply": REPLY}],
    "supervisor": [{"reply": "[COMPLETE] the key is stored"}],
}


def fragments(text: str) -> list[str]:
    """The pieces of KEY (FRAGMENT characters or more) that `text` holds."""
    return sorted(
        {KEY[i : i + FRAGMENT] for i in range(len(KEY) - FRAGMENT + 1)} & _windows(text),
    )


def _windows(text: str) -> set[str]:
    return {text[i : i + FRAGMENT] for i in range(len(text) - FRAGMENT + 1)}


def run_in_tmux(r: Rig, tmp_path: Path, task: str, cols: int) -> str:
    """Run ptysup on TASK in a COLS-wide tmux pane to its end; what the script's `done`
    file says (`exit=N`)."""
    done = tmp_path / "done"
    argv = ptysup_argv(task, "--agent-cmd", AGENT, "--log-file", str(r.log))
    tmux = Tmux("ptysup-secret", cols=cols, rows=30)
    tmux.start(terminal_script(tmp_path / "run.sh", r.project, r.env, argv, done))
    try:
        wait_for(done.exists, 120, "ptysup to finish")
    finally:
        tmux.kill()
    return done.read_text()


@pytest.mark.parametrize("cols", [80, 120])
def test_a_wrapped_key_never_reaches_the_supervisor(
    rig: Callable[..., Rig], tmp_path: Path, cols: int
) -> None:
    r = rig(SCENARIO)
    assert run_in_tmux(r, tmp_path, "make me an API key", cols).startswith("exit=0")
    requests = r.model.requests_of(RequestKind.SUPERVISOR)
    assert requests
    for request in requests:
        sent = json.dumps(request.body, ensure_ascii=False)
        assert "The agent's screen now:" in request.human_text
        assert "[REDACTED:anthropic-key]" in request.human_text
        assert not fragments(sent), (fragments(sent), request.human_text)
    logged = r.log.read_text()
    assert not fragments(logged), fragments(logged)
    replay = r.ptysup("replay", str(r.log))
    assert replay.returncode == 0, replay.stderr
    assert "[REDACTED:anthropic-key]" in replay.stdout  # the screen at the decision
    assert not fragments(replay.stdout), replay.stdout
    assert read_events(r.log)[-1]["event"] == "run_end"


def test_a_failed_runs_screen_in_the_log_hides_a_wrapped_key(rig: Callable[..., Rig]) -> None:
    # No terminal: the agent's screen is 120 columns, and a failed run logs its last lines.
    r = rig({"agent": [{"reply": REPLY}], "supervisor": [{"reply": "[ABORT] a key leaked"}]})
    run = r.run("make me an API key")
    assert run.code == 1, run.stdout
    [screen] = run.named("agent_screen")
    assert "[REDACTED:anthropic-key]" in "\n".join(screen["lines"])
    logged = r.log.read_text()
    assert not fragments(logged), fragments(logged)
    assert not fragments(run.stdout), run.stdout


# ⚠️ is a one-column character and a selector, 👨‍👩‍👧 three wide emoji and two joiners,
# 👍🏽 an emoji and a skin tone, 🇺🇸 two regional indicators; Claude Code gives each two
# columns. Counted otherwise, the rows of the screen drift and
# a row with them seems wider than the terminal, so a wrapped key's rows were not joined.
EMOJI = "⚠️ 👨‍👩‍👧 👍🏽 🇺🇸"


@pytest.mark.parametrize("cols", [40, 80])
def test_a_wrapped_key_beside_emoji_never_reaches_the_supervisor(
    rig: Callable[..., Rig], tmp_path: Path, cols: int
) -> None:
    # The task holds the key too: Claude Code shows it again, wrapped, above its reply.
    r = rig(
        {
            "agent": [{"reply": f"{EMOJI} careful: {REPLY}"}],
            "supervisor": [{"reply": "[COMPLETE] the key is stored"}],
        }
    )
    task = f"{EMOJI} store the key {KEY} please"
    assert run_in_tmux(r, tmp_path, task, cols).startswith("exit=0")
    requests = r.model.requests_of(RequestKind.SUPERVISOR)
    assert requests
    for request in requests:
        assert "👨\u200d👩\u200d👧" in request.human_text  # the rows with emoji were there
        sent = json.dumps(request.body, ensure_ascii=False)
        assert not fragments(sent), (fragments(sent), request.human_text)
    logged = r.log.read_text()
    assert not fragments(logged), fragments(logged)
    assert read_events(r.log)[-1]["event"] == "run_end"
