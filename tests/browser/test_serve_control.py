"""`ptysup serve --control` in a real browser, steering the real agents (fake model)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, Route, expect

from ptysup.serve import control
from ptysup.store.rundir import RUNS_DIR, RunDir, run_dirs
from ptysup.testing.fakemodel import RequestKind
from tests.browser.conftest import Watched
from tests.e2e.conftest import AGENT, Rig
from tests.helpers import ask_step, read_events, wait_for
from tests.serving import Served, gated_turn, served

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

WAIT_MS = 90_000


def looked_at(page: Page) -> Locator:
    """The page's terminal, scrolled into view as the person looks at it after using the
    controls below it: xterm.js draws nothing while it is off screen (a phone's page
    scrolled down to the message box), and its rows still showed the screen from before
    (the 'stale terminal under load' of earlier CI runs)."""
    terminal = page.locator("#terminal")
    terminal.scroll_into_view_if_needed()
    return terminal


def control_state(run_dir: RunDir) -> dict[str, Any]:
    """What the control page is shown of the run: its state.json's budgets and wait."""
    return control.state(run_dir, live=True)


def events(r: Rig, name: str) -> list[dict[str, Any]]:
    return [e for e in read_events(r.log) if e["event"] == name] if r.log.exists() else []


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
    r = rig(gated_turn(gate))
    proc = r.popen("watch me", "--agent-cmd", f"{AGENT} --allowedTools Bash")
    page = watched.page
    page.set_viewport_size({"width": 390, "height": 844})  # a phone held upright
    try:
        wait_for(lambda: run_dirs(r.project / RUNS_DIR), 60, "the run's directory")
        (run_dir,) = run_dirs(r.project / RUNS_DIR)
        with served(r.project, "--control") as server:
            # The read-only URL's page offers no steering, and its cookie opens no control page.
            page.goto(server.url)
            page.locator(f'#runs tbody tr[data-run-id="{run_dir.run_id}"]').click()
            expect(page.locator("#player")).to_have_attribute("data-mode", "live", timeout=WAIT_MS)
            expect(page.locator("#detail-steer")).to_be_hidden()
            assert page.request.get(f"{server.base}/api/runs").status == 200  # its cookie reads
            assert page.request.get(f"{server.base}/control").status == 403
            # A busy server refuses the terminal's first stream: the page tries again.
            refused: list[str] = []

            def busy_once(route: Route) -> None:
                if refused:
                    route.continue_()
                else:
                    refused.append(route.request.url)
                    route.fulfill(status=503, body="too many requests at once; try again\n")

            page.route("**/terminal", busy_once)
            open_control_page(page, server, run_dir)
            terminal = page.locator("#terminal")
            expect(terminal).to_contain_text("ALPHA-GATE", timeout=WAIT_MS)
            assert refused == [f"{server.base}/api/runs/{run_dir.run_id}/terminal"]
            assert "OMEGA-END" not in terminal.inner_text()
            expect(page.locator("#steer")).to_be_visible()
            gate.touch()
            # What Claude Code draws only once the gate is open, in the same live view.
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
    assert watched.errors == [
        "Failed to load resource: the server responded with a status of 503 (Service Unavailable)"
    ]


def escalating(then: str) -> dict[str, Any]:
    """The agent asks, the supervisor escalates; the page's answer gets the agent's
    PAGE-GOT-55, on which the supervisor says `then`."""
    return {
        "agent": [
            {"match": "PAGE-ANSWER-55", "reply": "Answer taken: PAGE-GOT-55."},
            {"reply": "Which storage shall I use? WAITING-FOR-YOU"},
        ],
        "supervisor": [
            {"match": "PAGE-GOT-55.", "reply": then},
            {"reply": "[ESCALATE] a person must choose the storage"},
        ],
    }


@pytest.mark.parametrize(
    ("agent", "ending"),
    [("claude", "complete"), ("codex", "stop")],
)
def test_the_page_raises_a_budget_answers_an_escalation_and_stops_a_headless_run(
    agent: str,
    ending: str,
    rig: Callable[..., Rig],
    codex_rig: Callable[..., Rig],
    watched: Watched,
) -> None:
    then = "[COMPLETE] stored" if ending == "complete" else "[ESCALATE] a person must look again"
    r = (rig if agent == "claude" else codex_rig)(escalating(then))
    page = watched.page
    page.set_viewport_size({"width": 390, "height": 844})
    proc = None
    try:
        with served(r.project, "--control") as server:
            proc = r.popen("the task", "--escalate-wait", "5m", "--max-iter", "10")
            wait_for(lambda: events(r, "escalation"), 90, "the escalation")
            (run_dir,) = run_dirs(r.project / RUNS_DIR)
            # The escalation links to the run's control page, which serve said where to find;
            # it opens in the browser that opened the control URL once.
            (escalation,) = events(r, "escalation")
            assert escalation["page"] == f"{server.base}/control#{run_dir.run_id}"
            page.goto(server.control_url)
            page.goto(escalation["page"])
            expect(page.locator("#terminal")).to_contain_text("WAITING-FOR-YOU", timeout=WAIT_MS)
            waiting = page.locator("#waiting")
            expect(waiting).to_be_visible(timeout=WAIT_MS)
            expect(waiting).to_have_attribute("data-kind", "escalation")
            expect(page.locator("#waiting-text")).to_contain_text("choose the storage")
            expect(page.locator("#waiting-until")).to_contain_text("then ends (exit 7)")
            # A budget raised: the run says so, state.json and the page show it.
            expect(page.locator("#used-iter")).to_have_text("1 of 10", timeout=WAIT_MS)
            page.locator("#max_iter").fill("+5")
            page.locator("#budget").click()
            expect(page.locator("#result")).to_contain_text("15 iterations", timeout=WAIT_MS)
            expect(page.locator("#used-iter")).to_have_text("1 of 15", timeout=WAIT_MS)
            # A value the run refuses: its one line, in the page's error colour.
            page.locator("#max_iter").fill("-20")
            page.locator("#budget").click()
            expect(page.locator("#result.error")).to_contain_text("below what is used")
            # The answer, typed in the message box: the agent gets it as the person's.
            page.locator("#message").fill("PAGE-ANSWER-55")
            page.locator("#send").click()
            # The run's own line first (a refusal would read here, not as a silent terminal).
            expect(page.locator("#result")).to_have_text(
                f"run {run_dir.run_id}: typed your message into the agent", timeout=WAIT_MS
            )
            if ending == "stop":
                # The run waits for a person again, the agent's answer on the page's terminal
                # (a complete run may be over first: Claude Code 2.1.332 clears its screen as
                # it exits, down to its resume line).
                expect(looked_at(page)).to_contain_text("PAGE-GOT-55", timeout=WAIT_MS)
                expect(page.locator("#waiting-text")).to_contain_text("look again", timeout=WAIT_MS)
                page.locator("#stop").click()
                expect(page.locator("#stop")).to_have_text("Click again to stop it (exit 8)")
                page.locator("#stop").click()
            assert proc.wait(timeout=120) == (0 if ending == "complete" else 8)
            expect(page.locator("#steer")).to_be_hidden(timeout=WAIT_MS)
            assert page.evaluate("document.documentElement.scrollWidth") <= 390
            server.proc.terminate()
            out, err = server.proc.communicate(timeout=30)
        tokens = (server.token, server.control_token)
        assert not (r.project / ".ptysup" / "serve.json").exists()  # withdrawn as serve stops
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "PAGE-ANSWER-55" in r.human_texts()
    assert "PAGE-GOT-55" in events(r, "turn_end")[-1]["detail"]  # the agent's answer to it
    acted = events(r, "person_action")
    expected = ["budget", "send"] + (["stop"] if ending == "stop" else [])
    assert [a["action"] for a in acted] == expected
    assert {a["source"] for a in acted} == {"page from 127.0.0.1"}
    assert events(r, "run_end")[0]["outcome"] == ("complete" if ending == "complete" else "stopped")
    log = r.log.read_text()
    for token in tokens:  # neither in the run's log nor in what serve said past its URLs
        assert token not in log and token not in out and token not in err
    assert watched.errors == []


def test_a_person_approves_claude_codes_dialog_from_the_page_by_its_exact_text(
    rig: Callable[..., Rig], watched: Watched
) -> None:
    r = rig(
        {
            "agent": [
                {
                    "steps": [
                        {
                            "text": "I need to create the file.",
                            "tool": "Write",
                            "input": {"file_path": "{workdir}/approved.txt", "content": "ok\n"},
                        },
                        {"text": "Created it: APPROVED-77."},
                    ]
                }
            ],
            "supervisor": [
                {"match": "APPROVED-77", "reply": "[COMPLETE] the person approved it"},
                {"reply": "[ESCALATE] a person must decide on approved.txt"},
            ],
        }
    )
    # The default permission mode: the Write opens a dialog, which only a person approves.
    proc = r.popen(
        "create approved.txt",
        "--agent-cmd",
        "claude",
        "--turn-timeout",
        "60",
        "--escalate-wait",
        "5m",
    )
    page = watched.page
    try:
        wait_for(lambda: events(r, "escalation"), 90, "the escalation")
        (run_dir,) = run_dirs(r.project / RUNS_DIR)
        with served(r.project, "--control") as server:
            open_control_page(page, server, run_dir)
            waiting = page.locator("#waiting")
            expect(waiting).to_have_attribute("data-kind", "dialog", timeout=WAIT_MS)
            # The dialog's exact text, as the run sees it, beside the one button that approves.
            shown = page.locator("#waiting-text").inner_text()
            saved = control_state(run_dir)["waiting"]
            assert saved["kind"] == "dialog" and shown == saved["text"]
            assert "approved.txt" in shown
            assert not (r.project / "approved.txt").exists()  # nobody approved it yet
            expect(page.locator("#waiting-options button")).to_have_count(0)
            # Any other text than the one drawn approves nothing.
            path = f"/api/runs/{run_dir.run_id}/approve"
            status, _, body = server.post(path, {"dialog": shown.replace("approved", "other")})
            assert status == 200 and "the dialog changed" in json.loads(body)["refused"]
            assert not (r.project / "approved.txt").exists()
            page.locator("#approve").click()
            expect(page.locator("#result")).to_contain_text("approved the dialog", timeout=WAIT_MS)
            expect(looked_at(page)).to_contain_text("APPROVED-77", timeout=WAIT_MS)
            assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (r.project / "approved.txt").exists()
    (acted,) = events(r, "person_action")
    assert acted["action"] == "approve" and acted["source"] == "page from 127.0.0.1"
    assert acted["dialog"] == shown
    assert watched.errors == []


def test_an_escalated_question_is_answered_by_a_tap_on_its_option(
    rig: Callable[..., Rig], watched: Watched
) -> None:
    storage = ask_step("Storage", "Which storage should the cache use?", ["SQLite", "Redis"])
    r = rig(
        {
            "agent": [{"steps": [storage, {"text": "Going on with the answer: ANSWERED-88."}]}],
            "supervisor": [
                {"regex": "The agent asks:", "reply": "[ESCALATE] only the team knows"},
                {"match": "ANSWERED-88", "reply": "[COMPLETE] the person chose"},
            ],
        }
    )
    # The supervisor is asked the question first, and escalates it: it is held open.
    proc = r.popen("build the cache", "--escalate-wait", "5m")
    page = watched.page
    page.set_viewport_size({"width": 390, "height": 844})
    try:
        wait_for(lambda: run_dirs(r.project / RUNS_DIR), 60, "the run's directory")
        (run_dir,) = run_dirs(r.project / RUNS_DIR)
        wait_for(lambda: control_state(run_dir)["waiting"], 90, "the question to wait")
        with served(r.project, "--control") as server:
            open_control_page(page, server, run_dir)
            expect(page.locator("#waiting")).to_have_attribute("data-kind", "question")
            expect(page.locator("#waiting-text")).to_contain_text("Which storage")
            options = page.locator("#waiting-options button")
            expect(options).to_have_text(["SQLite", "Redis"], timeout=WAIT_MS)
            options.nth(1).click()
            expect(looked_at(page)).to_contain_text("ANSWERED-88", timeout=WAIT_MS)
            assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    results = json.dumps([q.body for q in r.model.requests_of(RequestKind.AGENT)])
    assert "Redis" in results and "SQLite" in results
    (acted,) = events(r, "person_action")
    assert (acted["action"], acted["text"]) == ("send", "Redis")
    assert watched.errors == []
