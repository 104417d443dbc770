"""At every turn end the supervisor is shown the screen the person sees: the real Claude
Code in tmux, compared row by row with the screen in the supervisor's prompt."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from ptysup.testing.fakemodel import RecordedRequest, RequestKind
from tests.e2e.conftest import AGENT, Rig
from tests.helpers import Tmux, ptysup_argv, read_events, terminal_script, wait_for

pytestmark = pytest.mark.e2e

ROWS = 40
REPLY = "Here is the part you asked for:\n\n- alpha\n- beta\n- gamma\n\nThat is all for now."
SCENARIO = {
    "agent": [{"reply": REPLY}],
    "supervisor": [
        {"times": 2, "delay": 4, "reply": "[CONTINUE] next part please"},
        {"delay": 4, "reply": "[COMPLETE] ok"},
    ],
}


def supervisor_screen(prompt: str) -> list[str]:
    """The rows of the screen inside a supervisor prompt."""
    screen = prompt.split("The agent's screen now:\n", 1)[1].split("\n</agent_output>", 1)[0]
    return [line.rstrip() for line in screen.split("\n")]


def differences(mine: list[str], pane: list[str]) -> list[int]:
    """The rows that differ, but for rows the agent never drew on (blank in its screen),
    which keep the earlier output in the pane."""
    mine = mine + [""] * (len(pane) - len(mine))  # the prompt drops blank bottom rows
    return [
        row
        for row, (got, shown) in enumerate(zip(mine, pane, strict=True))
        if got != shown and not (got == "" and shown.isdigit())
    ]


def assert_each_turn_end_shown(
    turn_ends: list[float],
    requests: Sequence[RecordedRequest],
    asked: list[float],
    watcher: Watcher,
    last_words: str,
) -> None:
    """Each supervisor prompt's screen is a pane the person saw from just before its turn
    end until the supervisor was asked, row by row; and it is the turn's final frame."""
    for n, (ended, request, until) in enumerate(zip(turn_ends, requests, asked, strict=True)):
        mine = supervisor_screen(request.human_text)
        assert last_words in "\n".join(mine), f"turn end {n}: an older frame"
        shown = [pane for at, pane in watcher.seen if ended - 1.0 <= at <= until]
        assert shown, f"turn end {n}: no capture of the pane"
        best = min(shown, key=lambda pane: len(differences(mine, pane)))
        rows = differences(mine, best)
        assert not rows, f"turn end {n}, rows {rows}:\n" + "\n".join(
            f"{mine[y] if y < len(mine) else ''!r}\n{best[y]!r}" for y in rows
        )


class Watcher:
    """Captures the pane every 50 ms, with the time, as a person would see it."""

    def __init__(self, tmux: Tmux) -> None:
        self.tmux = tmux
        self.seen: list[tuple[float, list[str]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            pane = [line.rstrip() for line in self.tmux.capture().split("\n")][: ROWS - 1]
            self.seen.append((time.time(), pane))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


@pytest.mark.parametrize("earlier", [0, 100], ids=["fresh", "below-100-lines"])
def test_every_turn_end_shows_the_supervisor_the_persons_screen(
    rig: Callable[..., Rig], tmp_path: Path, earlier: int
) -> None:
    r = rig(SCENARIO)
    done = tmp_path / "done"
    argv = ptysup_argv("give me part one", "--agent-cmd", AGENT, "--log-file", str(r.log))
    script = terminal_script(tmp_path / "run.sh", r.project, r.env, argv, done)
    if earlier:
        script.write_text(f"seq 1 {earlier}\n" + script.read_text())
    tmux = Tmux("ptysup-frame", rows=ROWS)
    tmux.start(script)
    watcher = Watcher(tmux)
    asked: list[float] = []
    try:
        for n in (1, 2, 3):
            wait_for(
                lambda n=n: len(r.model.requests_of(RequestKind.SUPERVISOR)) >= n,
                90,
                f"supervisor request {n}",
            )
            asked.append(time.time())
        wait_for(done.exists, 90, "ptysup to finish")
    finally:
        watcher.stop()
        tmux.kill()
    assert done.read_text().startswith("exit=0")
    events = read_events(r.log)
    assert events[-1]["outcome"] == "complete"
    turn_ends = [e["ts"] for e in events if e["event"] == "turn_end"]
    requests = r.model.requests_of(RequestKind.SUPERVISOR)
    assert len(turn_ends) == len(requests) == 3
    assert_each_turn_end_shown(turn_ends, requests, asked, watcher, "That is all for now.")
