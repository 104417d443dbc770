"""Run states against the real Claude Code and the fake model: what `ptysup runs` says
while a run waits on a permission dialog, works, ends, or is killed."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from tests.e2e.conftest import Rig
from tests.helpers import ptysup_argv, wait_for

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
    proc = subprocess.run(
        ptysup_argv("runs", "--json"),
        cwd=r.project,
        env=r.env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    rows: list[dict[str, Any]] = json.loads(proc.stdout)
    return rows


class Seen:
    """The states `ptysup runs --json` showed for the one run, in order, without repeats."""

    def __init__(self, r: Rig) -> None:
        self.r = r
        self.states: list[str] = []
        self.rows: dict[str, dict[str, Any]] = {}

    def now(self) -> dict[str, Any] | None:
        rows = _rows(self.r)
        if not rows:
            return None
        (row,) = rows
        if not self.states or self.states[-1] != row["state"]:
            self.states.append(row["state"])
        return row

    def until(self, state: str, detail: str = "", timeout: float = 120) -> dict[str, Any]:
        """The first row in `state` (its detail starting so), polled via the CLI."""
        found: list[dict[str, Any]] = []

        def shown() -> bool:
            row = self.now()
            if row and row["state"] == state and str(row["detail"]).startswith(detail):
                found.append(row)
            return bool(found)

        wait_for(shown, timeout, f"the run to show {state} {detail}")
        return found[0]


def test_a_permission_dialog_needs_input_until_the_agent_goes_on_then_done(
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
    # Default permission mode: the Write opens a dialog nobody answers until the turn
    # stalls; the supervisor's instruction then dismisses it and the agent goes on.
    proc = r.popen("create hello.txt", "--agent-cmd", "claude", "--turn-timeout", "20")
    seen = Seen(r)
    try:
        # The screen may show the dialog a moment before the hook names it.
        waiting = seen.until("needs_input", "permission for Write(")
        assert "hello.txt" in waiting["detail"]
        assert waiting["pid"] == proc.pid and waiting["since"] is not None
        seen.until("working", "typed: instruction")
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out + err
    (row,) = _rows(r)
    assert (row["state"], row["outcome"], row["pid"]) == ("done", "complete", None)
    assert seen.states[0] in ("working", "needs_input")
    i = seen.states.index("needs_input")
    assert "working" in seen.states[i + 1 :] and seen.states[-1] == "working"
    (run_dir,) = (r.project / ".ptysup" / "runs").iterdir()
    saved = json.loads((run_dir / "state.json").read_text())
    assert (saved["state"], saved["outcome"], saved["exit_code"]) == ("done", "complete", 0)
    assert saved["iteration"] == 2 and saved["run_id"] == run_dir.name
    assert not (r.project / "hello.txt").exists()
