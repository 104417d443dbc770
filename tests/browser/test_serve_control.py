"""`ptysup serve --control` in a real browser, steering the real agents (fake model)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from ptysup.store.rundir import RUNS_DIR, RunDir, run_dirs
from tests.browser.conftest import Watched
from tests.e2e.conftest import AGENT, Rig
from tests.helpers import wait_for
from tests.serving import Served, served

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

WAIT_MS = 90_000


def open_control_page(page: Page, server: Served, run_dir: RunDir) -> None:
    """The control URL, then the run in the list, then its "steer this run" link, as a
    person follows them."""
    page.goto(server.control_url)
    page.locator(f'#runs tbody tr[data-run-id="{run_dir.run_id}"]').click()
    link = page.locator("#steer-link")
    expect(link).to_be_visible(timeout=WAIT_MS)
    link.click()
    expect(page).to_have_url(f"{server.base}/control#{run_dir.run_id}")


def test_the_control_page_shows_claude_codes_terminal_live_from_its_attach_socket(
    rig: Callable[..., Rig], watched: Watched, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    r = rig(
        {
            "agent": [
                {
                    "match": "watch me",
                    "steps": [
                        {
                            "text": "Waiting at ALPHA-GATE.",
                            "tool": "Bash",
                            "input": {
                                "command": f"while [ ! -e {gate} ]; do sleep 0.1; done; "
                                "echo OPENED-$((40+2))",
                                "description": "wait for the gate",
                            },
                        },
                        {"text": "All done at OMEGA-END."},
                    ],
                }
            ],
            "supervisor": [{"reply": "[COMPLETE] the gate opened"}],
        }
    )
    proc = r.popen("watch me", "--agent-cmd", f"{AGENT} --allowedTools Bash")
    page = watched.page
    page.set_viewport_size({"width": 390, "height": 844})  # a phone held upright
    try:
        wait_for(lambda: run_dirs(r.project / RUNS_DIR), 60, "the run's directory")
        (run_dir,) = run_dirs(r.project / RUNS_DIR)
        with served(r.project, "--control") as server:
            open_control_page(page, server, run_dir)
            terminal = page.locator("#terminal")
            expect(terminal).to_contain_text("ALPHA-GATE", timeout=WAIT_MS)
            assert "OMEGA-END" not in terminal.inner_text()
            expect(page.locator("#steer")).to_be_visible()
            gate.touch()
            # What Claude Code draws only once the gate is open, in the same live view.
            expect(terminal).to_contain_text("OPENED-42", timeout=WAIT_MS)
            expect(terminal).to_contain_text("OMEGA-END", timeout=WAIT_MS)
            assert proc.wait(timeout=120) == 0
            expect(page.locator("#screen-note")).to_contain_text(
                "the run ended: complete (exit 0)", timeout=WAIT_MS
            )
            expect(page.locator("#steer")).to_be_hidden(timeout=WAIT_MS)
            # The page fits a phone: nothing but the terminal scrolls sideways.
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert watched.errors == []
