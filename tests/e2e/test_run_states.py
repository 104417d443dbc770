"""Run states against the real Claude Code and the fake model: what `ptysup runs` says
while a run waits on a permission dialog, works, ends, or is killed."""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Rig
from tests.helpers import Tmux, ask_step, ptysup_argv, read_events, terminal_script, wait_for

pytestmark = pytest.mark.e2e

INSTEAD = "Do not create any file; just say you are done."
WRITE_HELLO = {
    "name": "write",
    "match": "create hello.txt",
    "steps": [
        {
            "text": "Creating it.",
            "tool": "Write",
            "input": {"file_path": "{workdir}/hello.txt", "content": "hello\n"},
        },
        # After the dialog, the agent's next request: answered slowly, a turn to see working.
        {"text": "Understood, no file.", "delay": 8},
    ],
}


def _rows(r: Rig) -> list[dict[str, Any]]:
    proc = r.ptysup("runs", "--json", timeout=60)
    assert proc.returncode == 0, proc.stderr
    rows: list[dict[str, Any]] = json.loads(proc.stdout)
    return rows


@contextlib.contextmanager
def running(r: Rig, task: str, *args: str) -> Iterator[subprocess.Popen[str]]:
    """A run in the background, killed if the test leaves before it ended."""
    proc = r.popen(task, *args)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def ended(r: Rig, proc: subprocess.Popen[str], code: int) -> dict[str, Any]:
    """Wait for the run's end, check its exit code, and list it: its one row."""
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == code, out + err
    (row,) = _rows(r)
    return row


class Seen:
    """The states `ptysup runs --json` showed for the one run, in order, without repeats."""

    def __init__(self, r: Rig) -> None:
        self.r = r
        self.states: list[str] = []
        self.details: list[tuple[str, str]] = []  # for a failure's message
        self.rows: dict[str, dict[str, Any]] = {}

    def now(self) -> dict[str, Any] | None:
        rows = _rows(self.r)
        if not rows:
            return None
        (row,) = rows
        if not self.states or self.states[-1] != row["state"]:
            self.states.append(row["state"])
        if not self.details or self.details[-1] != (row["state"], row["detail"]):
            self.details.append((row["state"], row["detail"]))
        return row

    def until(self, state: str, detail: str = "", timeout: float = 120) -> dict[str, Any]:
        """The first row in `state` (its detail starting so), polled via the CLI."""
        found: list[dict[str, Any]] = []

        def shown() -> bool:
            row = self.now()
            if row and row["state"] == state and str(row["detail"]).startswith(detail):
                found.append(row)
            return bool(found)

        try:
            wait_for(shown, timeout, f"the run to show {state} {detail}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; it showed {self.details}") from None
        return found[0]


def test_a_permission_dialog_is_decided_on_at_once_then_the_agent_goes_on_then_done(
    rig: Callable[..., Rig],
) -> None:
    r = rig(
        {
            "agent": [WRITE_HELLO],
            "supervisor": [
                {"times": 1, "reply": f"[CONTINUE] {INSTEAD}"},
                {"reply": "[COMPLETE] ok"},
            ],
        }
    )
    # Default permission mode: the Write opens a dialog. Without a terminal nobody but the
    # supervisor can act on it, so it is decided on as soon as it is drawn; the
    # supervisor's instruction then dismisses it and the agent goes on.
    seen = Seen(r)
    with running(r, "create hello.txt", "--agent-cmd", "claude", "--turn-timeout", "60") as proc:
        deciding = seen.until("deciding", "turn end: dialog")
        assert deciding["pid"] == proc.pid and deciding["since"] is not None
        seen.until("working", "typed: instruction")
        row = ended(r, proc, 0)
    assert (row["state"], row["outcome"], row["pid"]) == ("done", "complete", None)
    assert seen.states[0] in ("working", "needs_input")
    i = seen.states.index("deciding")
    assert "working" in seen.states[i + 1 :] and seen.states[-1] == "working"
    (run_dir,) = (r.project / ".ptysup" / "runs").iterdir()
    saved = json.loads((run_dir / "state.json").read_text())
    assert (saved["state"], saved["outcome"], saved["exit_code"]) == ("done", "complete", 0)
    assert saved["iteration"] == 2 and saved["run_id"] == run_dir.name
    assert not (r.project / "hello.txt").exists()


def test_runs_watch_in_a_terminal_follows_a_run_from_working_to_crashed(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig({"agent": [{"reply": "Done.", "delay": 120}], "supervisor": [{"reply": "[COMPLETE]"}]})
    done = tmp_path / "done"
    tmux = Tmux("ptysup-watch")
    # Started before the run: the watch must pick up a run that appears, then follow it.
    argv = ptysup_argv("runs", "--watch")
    tmux.start(terminal_script(tmp_path / "watch.sh", r.project, r.env, argv, done))
    proc = None
    try:
        wait_for(lambda: "no runs in" in tmux.capture(), 60, "the empty table")
        proc = r.popen("a slow task")
        r.model.wait_for(lambda q: "a slow task" in q.human_text, timeout=120)
        (run_dir,) = (r.project / ".ptysup" / "runs").iterdir()

        def row() -> str:
            lines = [ln for ln in tmux.capture().splitlines() if ln.startswith(run_dir.name)]
            return lines[0] if lines else ""

        wait_for(lambda: " working " in row(), 60, "the run shown working")
        assert "a slow task" in row()
        # The agent waits on its model, so nothing changes but the time: ELAPSED ticks.
        (head,) = [ln for ln in tmux.capture().splitlines() if ln.startswith("RUN ")]
        elapsed = head.split().index("ELAPSED")  # the cells before it are one word each
        ticks = [row().split()[elapsed]]
        wait_for(lambda: row().split()[elapsed] != ticks[0], 20, "the run's ELAPSED to tick")
        proc.kill()  # SIGKILL: no run_end, state.json still says working; only the lock goes
        proc.wait(timeout=30)
        wait_for(lambda: " crashed " in row(), 30, "the run shown crashed")
        screen = tmux.capture()
        # Redrawn in place: one header, one row for the run, nothing scrolled up.
        assert screen.count("ptysup runs --watch") == 1 and screen.count(run_dir.name) == 1
        assert json.loads((run_dir / "state.json").read_text())["state"] == "working"
        (listed,) = _rows(r)
        assert (listed["state"], listed["pid"], listed["outcome"]) == ("crashed", None, None)
        tmux.send_keys("C-c")
        wait_for(done.exists, 30, "the watch to end on Ctrl-C")
        assert done.read_text().startswith("exit=0\n")
        wait_for(lambda: not r.leftovers(), 30, "the killed run's Claude Code to exit")
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        tmux.kill()


def test_a_question_left_to_a_person_is_decided_on_and_an_escalation_ends_failed(
    rig: Callable[..., Rig],
) -> None:
    storage = ask_step("Storage", "Which storage should the cache use?", ["SQLite", "Redis"])
    r = rig(
        {
            "agent": [{"steps": [storage, {"text": "Going on."}]}],
            "supervisor": [{"reply": "[ESCALATE] the picker needs a person"}],
        }
    )
    # No terminal: nobody but the supervisor can act on the picker, so the turn ends as
    # soon as it is drawn (needs_input lasts only until then) and the supervisor decides.
    with running(r, "build the cache", "--questions", "person", "--turn-timeout", "60") as proc:
        deciding = Seen(r).until("deciding", "turn end: dialog")
        assert deciding["pid"] == proc.pid
        row = ended(r, proc, 7)  # the escalation ends the run
    assert (row["state"], row["outcome"]) == ("failed", "escalated")
    (question,) = [e for e in read_events(r.log) if e["event"] == "question"]
    assert question["to"] == "person"


def test_an_api_error_waited_out_shows_api_wait_then_done(rig: Callable[..., Rig]) -> None:
    r = rig(
        {
            "agent": [{"times": 1, "error": 529}, {"reply": "Recovered and done."}],
            "supervisor": [{"reply": "[COMPLETE] fine"}],
        }
    )
    with running(r, "t", "--wait-base", "10") as proc:
        waiting = Seen(r).until("api_wait", "waiting 10s")
        (run_dir,) = (r.project / ".ptysup" / "runs").iterdir()
        saved = json.loads((run_dir / "state.json").read_text())
        assert saved["until"] == pytest.approx(saved["since"] + 10, abs=5)
        assert waiting["pid"] == proc.pid
        row = ended(r, proc, 0)
    assert (row["state"], row["iterations"]) == ("done", 1)
