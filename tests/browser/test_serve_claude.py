"""`ptysup serve` watching the real Claude Code (fake model) live, then replaying the run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import expect

from ptysup.serve.labels import label
from ptysup.store.listing import describe
from ptysup.store.rundir import RUNS_DIR, run_dirs
from tests.browser.conftest import Watched
from tests.e2e.conftest import AGENT, Rig
from tests.helpers import wait_for
from tests.serving import gated_turn, served

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

WAIT_MS = 90_000


def test_a_running_claude_code_is_watched_live_then_replayed(
    rig: Callable[..., Rig], watched: Watched, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    r = rig(gated_turn(gate))
    proc = r.popen("watch me", "--agent-cmd", f"{AGENT} --allowedTools Bash")
    page = watched.page
    try:
        wait_for(lambda: run_dirs(r.project / RUNS_DIR), 60, "the run's directory")
        (run_dir,) = run_dirs(r.project / RUNS_DIR)
        with served(r.project) as server:
            page.goto(server.url)
            page.locator(f'#runs tbody tr[data-run-id="{run_dir.run_id}"]').click()
            player = page.locator("#player")
            expect(player).to_have_attribute("data-mode", "live", timeout=WAIT_MS)
            live_state = page.locator("#detail-state").inner_text()
            # Claude Code's screen while its turn waits at the gate...
            expect(player).to_contain_text("ALPHA-GATE", timeout=WAIT_MS)
            assert "OMEGA-END" not in player.inner_text()
            gate.touch()
            # ...and what it can only draw once the gate is open, in the same live player.
            expect(player).to_contain_text("OMEGA-END", timeout=WAIT_MS)
            assert proc.wait(timeout=120) == 0
            # Finished: the details say so, and the page replays the recording.
            row = describe(run_dir)  # over: the page calls it by its outcome, as `runs` does
            assert row["pid"] is None and row["outcome"] == "complete"
            assert label(row)["label"] == "complete" != live_state
            expect(page.locator("#detail-state")).to_have_text("complete", timeout=WAIT_MS)
            expect(page.locator("#decisions li .action")).to_have_text(["complete"])
            page.reload()
            page.locator(f'#runs tbody tr[data-run-id="{run_dir.run_id}"]').click()
            expect(player).to_have_attribute("data-mode", "replay", timeout=WAIT_MS)
            # It shows the final screen at once (Claude Code 2.1.332's is cleared down to its
            # resume line); played, the recording shows the turn's end before it.
            expect(player).to_contain_text("claude --resume", timeout=WAIT_MS)
            player.locator(".ap-overlay-start").click()
            expect(player).to_contain_text("OMEGA-END", timeout=WAIT_MS)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert watched.errors == []
