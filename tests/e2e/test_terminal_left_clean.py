"""The person's terminal after ptysup: full-screen agents (htop, less, vim) ended the way
they clean up on, every mode they left on switched off, the summary on a clean line."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from ptysup.testing.fakemodel import RequestKind
from tests.e2e.conftest import AGENT, Rig
from tests.e2e.test_supervisor_sees_the_screen import supervisor_screen
from tests.helpers import (
    Tmux,
    ptysup_argv,
    read_events,
    terminal_script,
    wait_for,
)

pytestmark = pytest.mark.e2e

FLAGS = "#{alternate_on} #{cursor_flag} #{mouse_any_flag} #{keypad_flag} #{keypad_cursor_flag}"
COMPLETE = {"agent": [{"reply": "unused"}], "supervisor": [{"reply": "[COMPLETE] looked at it"}]}


class Pane(Tmux):
    """A tmux pane whose terminal state can be read."""

    def flags(self) -> str:
        return self.display(FLAGS)


def ptysup_pids(log: Path) -> list[int]:
    """The ptysup processes writing LOG (from their command lines). A child ptysup has
    forked and not yet exec'd (the supervisor's, a hook's) shows its parent's command line
    for a moment: it is not another ptysup."""
    found: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if b"ptysup" in argv and str(log).encode() in argv:
            found[int(entry.name)] = parent
    return [pid for pid, parent in found.items() if parent not in found]


def fresh_pane(tmp_path: Path) -> tuple[str, str]:
    """The flags and `stty -a` of a pane that ran nothing but a shell script."""
    done = tmp_path / "fresh"
    script = tmp_path / "fresh.sh"
    script.write_text(f"stty -a > {done}.tmp; mv {done}.tmp {done}\nsleep 60\n")
    pane = Pane("ptysup-fresh")
    pane.start(script)
    try:
        wait_for(done.exists, 10, "the fresh pane's stty")
        return pane.flags(), done.read_text()
    finally:
        pane.kill()


def check_mirrored_and_restored(
    r: Rig,
    tmp_path: Path,
    name: str,
    rows: int = 40,
    farewell: str | None = None,
    mirrored: bool = True,
) -> None:
    """Run R's scenario (its supervisor thinks a while with the turn's last frame on
    screen) in a tmux pane named NAME: the supervisor's screen must be the pane's, row for
    row, and the terminal must be left as a fresh pane's (modes, stty). FAREWELL, what
    the agent prints as it exits, must be left whole above ptysup's summary. Not MIRRORED:
    only the turn's last words must be on both (the agent draws more after it)."""
    fresh_flags, fresh_stty = fresh_pane(tmp_path)
    tmux = Pane(name, rows=rows)
    # Lines above ptysup's start, as a person's shell leaves them: the cursor the agent
    # saves and restores is then not the top row, where a lost restore would also land.
    before = "printf 'earlier output %s\\n' 1 2 3 4 5" if farewell else ""
    done = r.in_terminal(tmux, tmp_path, "give me the list", before=before)
    try:
        r.model.wait_for(lambda q: q.kind is RequestKind.SUPERVISOR, timeout=60)
        pane = [line.rstrip() for line in tmux.capture().split("\n")][: rows - 1]
        wait_for(done.exists, 60, "ptysup to finish")
        flags = tmux.flags()
        after = tmux.capture()
    finally:
        tmux.kill()
    assert done.read_text().startswith("exit=0"), r.log.read_text()
    (sup,) = r.model.requests_of(RequestKind.SUPERVISOR)
    mine = supervisor_screen(sup.human_text)
    assert "That is all for now." in "\n".join(mine)
    mine += [""] * (len(pane) - len(mine))
    rows_off = [y for y, (got, shown) in enumerate(zip(mine, pane, strict=False)) if got != shown]
    if mirrored:
        assert not rows_off, "\n".join(f"{mine[y]!r}\n{pane[y]!r}" for y in rows_off)
    else:
        assert "That is all for now." in "\n".join(pane)
    assert flags == fresh_flags
    assert done.read_text().split("\n", 1)[1].split() == fresh_stty.split()
    assert "ptysup: complete" in after
    assert "ptysup: warning" not in after  # e.g. of a variable the test setup leaks
    if farewell is not None:
        lines = after.split("\n")
        said = [y for y, line in enumerate(lines) if farewell in line]
        summary = next(y for y, line in enumerate(lines) if line.startswith("ptysup: complete"))
        assert said and said[-1] < summary, after
    assert read_events(r.log)[-1]["outcome"] == "complete"


# The scenario check_mirrored_and_restored plays: a reply of several lines, then the
# supervisor thinks for 3 s with it on screen.
LISTED = {
    "agent": [{"reply": "Here it is:\n\n- alpha\n- beta\n\nThat is all for now."}],
    "supervisor": [{"delay": 3, "reply": "[COMPLETE] ok"}],
}


def run_in_pane(
    r: Rig, tmp_path: Path, agent: str, task: str, *args: str
) -> tuple[Pane, Path, list[str]]:
    done = tmp_path / "done"
    done.unlink(missing_ok=True)
    argv = ptysup_argv(task, "--agent-cmd", agent, "--log-file", str(r.log), "--idle", "1", *args)
    pane = Pane("ptysup-clean")
    pane.start(terminal_script(tmp_path / "run.sh", r.project, r.env, argv, done))
    seen: list[str] = []

    def finished() -> bool:
        seen.append(pane.capture())
        return done.exists()

    wait_for(finished, 120, "ptysup to finish")
    return pane, done, seen


@pytest.mark.parametrize(
    ("agent", "drawn"),
    [
        ("htop -d 100", "F10Quit"),
        ("less notes.txt", "notes line 30"),
        ("vim notes.txt", "notes line 3"),
    ],
    ids=["htop", "less", "vim"],
)
def test_a_full_screen_agent_leaves_the_terminal_as_it_was(
    rig: Callable[..., Rig], tmp_path: Path, agent: str, drawn: str
) -> None:
    if shutil.which(agent.split()[0]) is None:
        pytest.fail(f"{agent.split()[0]} is not installed: run scripts/setup.sh")
    fresh_flags, fresh_stty = fresh_pane(tmp_path)
    r = rig(COMPLETE)
    (r.project / "notes.txt").write_text("".join(f"notes line {n}\n" for n in range(1, 200)))
    # A task of digits: less and vim read it as a count, htop as nothing; none edits.
    pane, done, seen = run_in_pane(r, tmp_path, agent, "5")
    try:
        flags = pane.flags()
        screen = pane.capture()
    finally:
        pane.kill()
    assert any(drawn in s.replace("\xa0", " ") for s in seen), "the agent never showed"
    result = done.read_text()
    assert result.startswith("exit=0"), r.log.read_text()
    assert flags == fresh_flags
    assert result.split("\n", 1)[1].split() == fresh_stty.split()  # stty wraps by width
    # The summary sits on a line of its own, below whatever the agent left.
    lines = screen.rstrip("\n").splitlines()
    summary = [n for n, line in enumerate(lines) if line.startswith("ptysup: complete")]
    assert summary, screen
    assert "".join(lines[summary[0] :]).rstrip().endswith("events.jsonl"), screen  # it may wrap
    assert "F10Quit" not in screen and "(END)" not in screen
    events = read_events(r.log)
    assert events[-1]["outcome"] == "complete"


def test_vim_ended_by_ptysup_leaves_no_swap_file_in_the_next_runs_way(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    # vim ends on SIGTERM and removes its swap file when nothing is unsaved (killed, it
    # would leave one; with unsaved changes it keeps it on purpose, to recover them).
    # `-M`: the typed task cannot change the buffer.
    r = rig(COMPLETE)
    (r.project / "notes.txt").write_text("notes line 1\n")
    for n in (1, 2):
        pane, done, seen = run_in_pane(r, tmp_path, "vim -M notes.txt", "5")
        pane.kill()
        assert done.read_text().startswith("exit=0"), f"run {n}: {r.log.read_text()}"
        assert any("notes line 1" in s for s in seen), f"run {n}: vim never showed"
        assert not any("ATTENTION" in s for s in seen), f"run {n} met a swap file"
        assert not list(r.project.glob(".notes.txt.sw*")), f"run {n} left a swap file"


# A reply taller than the pane leaves Claude Code's cursor at the bottom when it exits: it
# drops its scroll region (`CSI r`) and prints how to resume, and those lines ran into the
# status row and scrolled its text up with them until ptysup translated that reset. Only
# when the reset and those lines came in one read (about one exit in six), so this shows
# the real binary's goodbye clean; tests/unit/test_status.py is the guard that always fails
# without the translation.
LONG_REPLY = "\n".join(f"result line {n}" for n in range(1, 61))


@pytest.mark.parametrize("reply", ["Done with that.", LONG_REPLY], ids=["short", "screenful"])
def test_claude_code_exits_with_no_status_text_left_in_its_goodbye(
    rig: Callable[..., Rig], tmp_path: Path, reply: str
) -> None:
    r = rig({"agent": [{"reply": reply}], "supervisor": [{"reply": "[COMPLETE] ok"}]})
    pane, done, seen = run_in_pane(r, tmp_path, AGENT, "say hi")
    try:
        screen = pane.capture()
        flags = pane.flags()
    finally:
        pane.kill()
    assert done.read_text().startswith("exit=0"), r.log.read_text()
    assert any("ptysup 0/50" in s for s in seen), "the status line never showed"
    lines = screen.rstrip("\n").splitlines()
    assert not [line for line in lines if "ptysup " in line and "/50 · " in line], screen
    summary = [n for n, line in enumerate(lines) if line.startswith("ptysup: complete")]
    assert summary and "".join(lines[summary[0] :]).rstrip().endswith("events.jsonl"), screen
    assert "Ctrl-] keys" not in screen, screen  # no piece of the status row anywhere
    # Typing /exit opens Claude Code's slash-command menu; it must not be left behind.
    assert "Exit the CLI" not in screen and "/context " not in screen, screen
    assert "Resume this session with:" in [line.rstrip() for line in lines], screen
    resume = [line.split() for line in lines if line.startswith("claude --resume ")]
    assert resume and len(resume[0]) == 3, screen  # `claude --resume ID`, nothing after it
    assert flags == "0 1 0 0 0"


def test_on_a_signal_the_summary_goes_below_claude_codes_input_box(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig({"agent": [{"delay": 60, "reply": "late"}], "supervisor": [{"reply": "[COMPLETE]"}]})
    done = tmp_path / "done"
    argv = ptysup_argv("take long", "--agent-cmd", AGENT, "--log-file", str(r.log))
    pane = Pane("ptysup-signal")
    pane.start(terminal_script(tmp_path / "run.sh", r.project, r.env, argv, done))
    try:
        wait_for(lambda: r.log.exists() and '"inject"' in r.log.read_text(), 60, "the task typed")
        wait_for(lambda: "take long" in pane.capture(), 10, "the task on screen")
        pids = ptysup_pids(r.log)
        assert len(pids) == 1, pids
        os.kill(pids[0], signal.SIGTERM)
        wait_for(done.exists, 30, "ptysup to end")
        screen = pane.capture()
        flags = pane.flags()
    finally:
        pane.kill()
    assert done.read_text().startswith("exit=143")
    lines = screen.rstrip("\n").splitlines()
    summary = [n for n, line in enumerate(lines) if line.startswith("ptysup: signal")]
    assert summary, screen
    rules = [n for n, line in enumerate(lines) if line.startswith("─" * 20)]
    assert rules and max(rules) < summary[0], screen  # below the input box, not inside it
    assert "".join(lines[summary[0] :]).rstrip().endswith("events.jsonl"), screen
    assert flags == "0 1 0 0 0"


def test_a_terminal_closed_under_the_run_ends_it_as_a_hangup_with_the_log_complete(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    # The person's window goes (tmux killed) while Claude Code works: writing to it and
    # restoring it fail with EIO. The run ends as SIGHUP says, not as an internal error.
    r = rig({"agent": [{"delay": 60, "reply": "late"}], "supervisor": [{"reply": "[COMPLETE]"}]})
    argv = ptysup_argv("take long", "--agent-cmd", AGENT, "--log-file", str(r.log))
    pane = Pane("ptysup-hangup")
    pane.start(terminal_script(tmp_path / "run.sh", r.project, r.env, argv, tmp_path / "done"))
    try:
        wait_for(lambda: r.log.exists() and '"inject"' in r.log.read_text(), 60, "the task typed")
        wait_for(lambda: "take long" in pane.capture(), 10, "the task on screen")
        assert len(ptysup_pids(r.log)) == 1
    finally:
        pane.kill()
    wait_for(lambda: not ptysup_pids(r.log), 30, "ptysup to end")
    events = read_events(r.log)
    assert not [e for e in events if e["event"] == "error"], events[-3:]
    end = events[-1]
    assert (end["event"], end["outcome"], end["exit_code"]) == ("run_end", "signal", 129)
