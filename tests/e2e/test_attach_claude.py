"""`ptysup attach` in real terminals (tmux) with the real Claude Code: the viewer sees the
run's screen at once and live, its keys reach the agent only with --rw, it detaches
cleanly, and it ends with the run's exit code."""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path

from ptysup.testing.fakemodel import RequestKind
from tests.e2e.conftest import Screen
from tests.helpers import Tmux, ptysup_argv, wait_for

# The agent answers, then the supervisor takes its time: the run stays up, Claude Code idle.
SLOW_DECISION = {
    "agent": [{"reply": "The answer the viewer must see."}],
    "supervisor": [{"delay": 120, "reply": "[COMPLETE] fine"}],
}


def viewer(run: Screen, tmp_path: Path, *args: str) -> tuple[Tmux, Path]:
    """`ptysup attach last ARGS` in a second terminal of the same size as the run's."""
    done = tmp_path / f"attach-{len(list(tmp_path.glob('attach-*')))}"
    script = tmp_path / "attach.sh"
    command = shlex.join(ptysup_argv("attach", "last", *args))
    script.write_text(
        f'cd {run.rig.project}\n{command}\necho "exit=$?" > {done}.tmp\nmv {done}.tmp {done}\n'
        "sleep 60\n"
    )
    pane = Tmux("ptysup-viewer")
    pane.start(script)
    return pane, done


def agent_rows(text: str, rows: int) -> list[str]:
    return [line.rstrip().replace("\xa0", " ") for line in text.split("\n")[:rows]]


def test_a_viewer_sees_the_runs_screen_read_only_and_detaches_cleanly(
    screen: Callable[..., Screen], tmp_path: Path
) -> None:
    run = screen(SLOW_DECISION, "the task")
    run.rig.model.wait_for(lambda req: req.kind is RequestKind.SUPERVISOR, timeout=60)
    wait_for(lambda: "The answer the viewer must see." in run.text(), 20, "the agent's answer")
    pane, done = viewer(run, tmp_path)
    try:
        rows = run.tmux.rows - 1  # the run's last row is ptysup's status line

        def same() -> bool:
            return agent_rows(pane.capture(), rows) == agent_rows(run.tmux.capture(), rows)

        wait_for(same, 20, "the viewer to show the run's screen")
        assert "The answer the viewer must see." in pane.capture()
        assert pane.display("#{alternate_on}") == "1"  # the viewer's own screen is kept

        pane.send_keys("-l", "typed by a read-only viewer")
        run.tmux.send_keys("-l", "typed at the run")  # live: the viewer sees it too
        wait_for(lambda: "typed at the run" in pane.capture(), 20, "the run's keys, live")

        pane.send_keys("C-]", "d")
        wait_for(done.exists, 20, "the viewer to detach")
        assert done.read_text().strip() == "exit=0"
        assert "detached" in pane.capture()
        assert pane.display("#{alternate_on} #{cursor_flag}") == "0 1"
        # The viewer is gone, with whatever it sent read by the run before its end. Keys
        # typed at the run after that come last: Claude Code's input box holds the run's
        # keys only (the read-write test shows a viewer's keys landing in the same box).
        run.tmux.send_keys("-l", " and more")
        wait_for(lambda: "typed at the run and more" in run.text(), 20, "the run's own keys")
        prompt = [line for line in run.text().splitlines() if "typed at the run" in line]
        assert [line.strip(" >\u276f│") for line in prompt] == ["typed at the run and more"]
        assert "read-only viewer" not in run.text()
        # Attaching and detaching never touched the agent's terminal size.
        assert not run.events("resize")
        assert not run.done.exists()  # the run goes on
    finally:
        pane.kill()


def test_a_read_write_viewer_types_to_the_agent_and_ends_with_the_runs_exit_code(
    screen: Callable[..., Screen], tmp_path: Path
) -> None:
    run = screen(SLOW_DECISION, "the task")
    run.rig.model.wait_for(lambda req: req.kind is RequestKind.SUPERVISOR, timeout=60)
    pane, done = viewer(run, tmp_path, "--rw")
    try:
        wait_for(lambda: "The answer the viewer must see." in pane.capture(), 20, "the screen")
        pane.send_keys("-l", "typed by the viewer")
        wait_for(lambda: "typed by the viewer" in run.text(), 20, "the viewer's keys at the run")
        run.tmux.send_keys("C-]", "s")  # the person at the run stops it: exit 8
        assert run.finish().startswith("exit=8")
        wait_for(done.exists, 20, "the viewer to see the end")
        assert done.read_text().strip() == "exit=8"
        assert "ended: stopped (exit 8)" in pane.capture()
    finally:
        pane.kill()


def test_attaching_to_a_finished_run_says_so_and_points_to_replay(
    screen: Callable[..., Screen],
) -> None:
    run = screen({"agent": [{"reply": "Done."}], "supervisor": [{"reply": "[COMPLETE] ok"}]}, "t")
    assert run.finish().startswith("exit=0")
    done = subprocess.run(
        ptysup_argv("attach", "last"),
        cwd=run.rig.project,
        capture_output=True,
        text=True,
        env=run.rig.env,
        timeout=30,
    )
    assert done.returncode == 2
    assert "is not running (it ended: complete)" in done.stderr
    assert "ptysup replay" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not list((run.rig.project / ".ptysup" / "runs").glob("*/attach"))  # cleaned up


def test_a_viewers_detach_key_outlasts_its_terminals_answers(
    screen: Callable[..., Screen], tmp_path: Path
) -> None:
    run = screen({"agent": [{"delay": 60, "reply": "slow"}]}, "the task")
    run.rig.model.wait_for(lambda req: req.kind is RequestKind.AGENT, timeout=60)
    pane, done = viewer(run, tmp_path)
    try:
        wait_for(lambda: "the task" in pane.capture(), 20, "the run's screen in the viewer")
        pane.send_keys("C-]")
        # Ctrl-Z at the run: continued, Claude Code draws itself again and asks the terminal
        # its name and attributes; the viewer's terminal answers too, on the viewer's stdin,
        # between its Ctrl-] and `d`.
        run.tmux.send_keys("C-z")
        run.wait_event("warning")

        def drawn_again() -> bool:
            after = pane.capture(history=True).rsplit("has been suspended", 1)
            return len(after) == 2 and "accept edits on" in after[1]

        wait_for(drawn_again, 20, "Claude Code drawn again in the viewer")
        pane.send_keys("d")
        wait_for(done.exists, 20, "the viewer to detach")
        assert done.read_text().strip() == "exit=0"
        assert not run.done.exists()  # the run goes on
    finally:
        pane.kill()
