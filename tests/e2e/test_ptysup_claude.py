"""ptysup driving the real Claude Code (agent and supervisor) against the fake model."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ptysup.testing.fakemodel import RequestKind
from tests.e2e.conftest import AGENT, DEMO, Rig
from tests.helpers import (
    Tmux,
    ptysup_argv,
    read_events,
    terminal_script,
    wait_for,
)

pytestmark = pytest.mark.e2e


def test_demo_completes_over_two_iterations_with_real_edits(rig: Callable[..., Rig]) -> None:
    r = rig(DEMO)
    run = r.run("implement feature X", "--max-iter", "50")
    assert run.code == 0, run.stdout + run.stderr
    # The agent really wrote and then fixed the file; the real tests now pass.
    assert "text.split()" in (r.project / "textstats.py").read_text()
    assert (
        subprocess.run(
            ["python3", "-m", "unittest", "-q"], cwd=r.project, capture_output=True
        ).returncode
        == 0
    )
    # The model saw the task, then the supervisor's instruction, each once, as the agent.
    texts = r.human_texts()
    assert texts[0] == "implement feature X"
    assert texts[1].startswith("python3 -m unittest fails")
    sup = r.model.requests_of(RequestKind.SUPERVISOR)
    assert len(sup) == 2
    assert "Iteration 1/50" in sup[0].human_text and "Iteration 2/50" in sup[1].human_text
    assert "Write(" in sup[0].human_text  # tool activity from the hooks reached the prompt
    decisions = run.named("decision")
    assert [d["action"] for d in decisions] == ["continue", "complete"]
    assert [e["kind"] for e in run.named("turn_end")] == ["stop", "stop"]
    assert run.events[-1] == {
        **run.events[-1],
        "event": "run_end",
        "outcome": "complete",
        "exit_code": 0,
        "iterations": 2,
    }
    assert "ptysup decision" in run.stdout and "\x1b[" not in run.stdout


SIMPLE_AGENT = [{"reply": "Done with that."}]


def test_control_bytes_in_an_instruction_never_reach_the_terminal(rig: Callable[..., Rig]) -> None:
    hostile = "[CONTINUE] fix\x03 it\x1b[31m now\x1b[201~\x04\r\n/exit\x1b]0;pwned\x07"
    r = rig(
        {
            "agent": SIMPLE_AGENT,
            "supervisor": [{"times": 1, "reply": hostile}, {"reply": "[COMPLETE] ok"}],
        }
    )
    run = r.run("t")
    assert run.code == 0  # Ctrl-C / Ctrl-D / /exit did not end Claude Code
    assert r.human_texts()[1] == "fix it now\n/exit"
    assert run.named("inject")[1]["text"] == "fix it now\n/exit"


def test_hung_supervisor_is_killed_and_retried_then_exit_5(rig: Callable[..., Rig]) -> None:
    r = rig({"agent": SIMPLE_AGENT, "supervisor": [{"delay": 120, "reply": "[COMPLETE] late"}]})
    # The timeout outlasts a cold Claude Code's start on a busy machine (the retry is cold):
    # each attempt must reach the model before it is killed.
    run = r.run(
        "t", "--supervisor-timeout", "8", "--supervisor-retries", "1", "--supervisor-backoff", "0.2"
    )
    assert run.code == 5
    errors = run.named("supervisor_error")
    assert [e["attempt"] for e in errors] == [1, 2]
    assert all("timed out" in e["error"] for e in errors)
    assert len(r.model.requests_of(RequestKind.SUPERVISOR)) == 2
    assert run.events[-1]["outcome"] == "supervisor_failed"


def test_supervisor_api_error_is_retried_without_a_new_turn(rig: Callable[..., Rig]) -> None:
    r = rig(
        {
            "agent": SIMPLE_AGENT,
            "supervisor": [{"times": 1, "error": 529}, {"reply": "[COMPLETE] ok"}],
        }
    )
    run = r.run("t", "--supervisor-backoff", "0.2")
    assert run.code == 0
    assert "API Error" in run.named("supervisor_error")[0]["error"]
    assert len(run.named("turn_end")) == 1


def test_agent_that_crashes_is_noticed_and_exits_4(rig: Callable[..., Rig]) -> None:
    r = rig(
        {
            "agent": [
                {
                    "steps": [
                        {
                            "tool": "Bash",
                            "input": {"command": "kill -9 $PPID", "description": "crash the agent"},
                        },
                        {"text": "unreachable"},
                    ]
                }
            ],
            "supervisor": [{"reply": "[COMPLETE]"}],
        }
    )
    run = r.run("crash please", "--agent-cmd", f"{AGENT} --allowedTools Bash")
    assert run.code == 4, run.stdout
    assert run.events[-1]["outcome"] == "agent_exited"
    assert not r.model.requests_of(RequestKind.SUPERVISOR)


def test_sigterm_mid_turn_ends_everything_and_logs_run_end(rig: Callable[..., Rig]) -> None:
    r = rig({"agent": [{"delay": 60, "reply": "slow"}], "supervisor": [{"reply": "[COMPLETE]"}]})
    proc = r.popen("a slow task")
    try:
        r.model.wait_for(lambda req: req.kind is RequestKind.AGENT, timeout=60)
        assert r.leftovers(), "the agent should be running"
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143
    events = read_events(r.log)
    assert events[-1]["event"] == "run_end"
    assert (events[-1]["outcome"], events[-1]["exit_code"]) == ("signal", 143)
    wait_for(lambda: not r.leftovers(), 5, "the agent's processes to be gone")


def _in_tmux(r: Rig, tmp_path: Path, task: str, *args: str) -> tuple[Tmux, Path]:
    done = tmp_path / "done"
    argv = ptysup_argv(task, "--agent-cmd", AGENT, "--log-file", str(r.log), *args)
    tmux = Tmux("ptysup-e2e")
    tmux.start(terminal_script(tmp_path / "run.sh", r.project, r.env, argv, done))
    return tmux, done


def _cooked(stty: str) -> bool:
    modes = stty.split()
    return "icanon" in modes and "echo" in modes  # not -icanon / -echo as raw mode leaves it


def test_in_a_real_terminal_the_tui_shows_and_the_tty_is_restored(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig(DEMO)
    tmux, done = _in_tmux(r, tmp_path, "implement feature X")
    seen: list[str] = []
    try:

        def pane_shows_tui() -> bool:
            seen.append(tmux.capture())
            return "❯" in seen[-1] and "─" * 20 in seen[-1]

        wait_for(pane_shows_tui, 60, "Claude Code's TUI in the tmux pane")

        def finished() -> bool:
            seen.append(tmux.capture())  # keep watching the TUI while the run goes on
            return done.exists()

        wait_for(finished, 120, "ptysup to finish")
        result = done.read_text()
    finally:
        tmux.kill()
    assert result.startswith("exit=0")
    assert _cooked(result)
    assert any("implement feature X" in p for p in seen)
    # The status line on the bottom row, under the agent's screen.
    assert any(p.rstrip("\n").splitlines()[-1].startswith("ptysup 1/50") for p in seen if p.strip())
    events = read_events(r.log)
    assert events[-1]["outcome"] == "complete"
    (start,) = [e for e in events if e["event"] == "agent_start"]
    assert start["interactive"] is True


def test_keystrokes_and_window_size_reach_the_agent(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    # The supervisor takes its time, so the person can type while the agent waits.
    r = rig({"agent": SIMPLE_AGENT, "supervisor": [{"delay": 6, "reply": "[COMPLETE] ok"}]})
    tmux, done = _in_tmux(r, tmp_path, "say hi")
    try:
        wait_for(lambda: r.log.exists() and '"turn_end"' in r.log.read_text(), 60, "a turn end")
        tmux.send_keys("-l", "typed by a person")
        # Claude Code puts a no-break space after its prompt glyph.
        wait_for(
            lambda: "❯ typed by a person" in tmux.capture().replace("\xa0", " "),
            10,
            "the keys in the input box",
        )
        tmux.resize(90, 30)
        wait_for(lambda: '"resize"' in r.log.read_text(), 10, "the resize event")
        # Claude Code repaints its input rules at the new width.
        wait_for(
            lambda: any(line.strip() == "─" * 90 for line in tmux.capture().splitlines()),
            10,
            "a repaint at 90 columns",
        )
        wait_for(done.exists, 60, "ptysup to finish")
        result = done.read_text()
    finally:
        tmux.kill()
    assert result.startswith("exit=0"), r.log.read_text()
    assert _cooked(result)
    events = read_events(r.log)
    resize = [e for e in events if e["event"] == "resize"]
    assert (resize[0]["rows"], resize[0]["cols"]) == (30, 90)
    # The person's half-typed line was cleared before /exit was typed, and kept in the log.
    cleared = [e for e in events if e["event"] == "warning" and "input box held" in e["message"]]
    assert cleared and "typed by a person" in cleared[0]["text"]
    assert events[-1]["outcome"] == "complete"


def test_sigint_while_the_supervisor_thinks_ends_it_too(rig: Callable[..., Rig]) -> None:
    r = rig({"agent": SIMPLE_AGENT, "supervisor": [{"delay": 120, "reply": "[COMPLETE]"}]})
    assert r.signalled("t", signal.SIGINT, RequestKind.SUPERVISOR) == 130
    events = read_events(r.log)
    assert (events[-1]["event"], events[-1]["exit_code"]) == ("run_end", 130)
    # Neither the agent nor the supervisor (both carry the private config dir) lives on.
    wait_for(lambda: not r.leftovers(), 5, "the agent and the supervisor to be gone")
