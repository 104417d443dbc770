"""The page of `ptysup serve` in headless Chromium: the runs, replay, live view, the CSP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Watched
from tests.serving import make_run, served

pytestmark = pytest.mark.browser

WAIT_MS = 60_000  # a loaded machine: generous, and each wait ends as soon as it holds
DONE = "20260101-100000-aaaaaa"
ABORTED = "20260101-110000-bbbbbb"
LIVE = "20260101-120000-cccccc"
HOSTILE = '<img src=x onerror="document.title=1">Add a cache'


def test_the_runs_are_listed_with_their_states_and_nothing_breaks_the_csp(
    watched: Watched, tmp_path: Path
) -> None:
    runs = [
        make_run(tmp_path, DONE, task=HOSTILE, decisions=[("complete", "ok")], screen="x"),
        make_run(tmp_path, ABORTED, task="Rewrite it", outcome="abort", screen="y"),
        make_run(tmp_path, LIVE, task="Still going", outcome=None, screen="z"),
    ]
    page = watched.page
    with runs[2].lock(), served(tmp_path) as server:
        page.goto(server.url)
        expect(page.locator("#runs tbody tr")).to_have_count(3, timeout=WAIT_MS)
        assert page.url == f"{server.base}/"  # the token left the address bar
        for run_dir, said in zip(runs, ("complete", "abort", "working"), strict=True):
            row = page.locator(f'#runs tbody tr[data-run-id="{run_dir.run_id}"]')
            expect(row.locator("td").nth(1)).to_have_text(said)  # an ended run: its outcome
        rows = page.locator("#runs tbody tr")
        expect(rows.nth(0).locator("td").first).to_have_text(LIVE)  # newest first
        # Task text is text: the markup shows as written and nothing of it ran.
        expect(rows.nth(2).locator("td.task")).to_have_text(HOSTILE)
        assert page.locator("#runs img").count() == 0
        assert page.title() == "ptysup runs"
    assert watched.errors == []


def test_a_csp_violation_would_be_seen(watched: Watched, tmp_path: Path) -> None:
    """The error watch works: a style attribute (inline style) is refused and reported."""
    page = watched.page
    with served(tmp_path) as server:
        page.goto(server.url)
        expect(page.locator("#empty")).to_be_visible(timeout=WAIT_MS)
        with page.expect_console_message(lambda m: "style-src" in m.text, timeout=WAIT_MS):
            page.evaluate("document.body.setAttribute('style', 'color: red')")
    assert any("style-src" in e for e in watched.errors), watched.errors


def test_a_finished_runs_replay_shows_its_terminal_and_its_decisions(
    watched: Watched, tmp_path: Path
) -> None:
    make_run(
        tmp_path,
        DONE,
        task="Add a cache",
        decisions=[("continue", "run the <b>tests</b>"), ("complete", "all green")],
        screen="$ pytest -q\n12 passed in 0.3s\nREPLAYED-SCREEN",
    )
    page = watched.page
    with served(tmp_path) as server:
        page.goto(server.url)
        page.locator(f'#runs tbody tr[data-run-id="{DONE}"]').click()
        expect(page.locator("#player")).to_have_attribute("data-mode", "replay")
        player = page.locator("#player")
        expect(player).to_contain_text("12 passed in 0.3s", timeout=WAIT_MS)
        expect(player).to_contain_text("REPLAYED-SCREEN", timeout=WAIT_MS)
        decisions = page.locator("#decisions li")
        expect(decisions).to_have_count(2)
        expect(decisions.nth(0).locator(".content")).to_have_text("run the <b>tests</b>")
        expect(decisions.nth(1).locator(".action")).to_have_text("complete")
        expect(page.locator("#detail-task")).to_have_text("Add a cache")
    assert watched.errors == []


def test_a_live_runs_terminal_follows_its_recording(watched: Watched, tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, LIVE, task="live", outcome=None, screen="FIRST-SCREEN")
    cast = run_dir.default_events.with_suffix(".cast")
    page = watched.page
    with served(tmp_path) as server, run_dir.lock():
        page.goto(server.url)
        page.locator(f'#runs tbody tr[data-run-id="{LIVE}"]').click()
        player = page.locator("#player")
        expect(player).to_have_attribute("data-mode", "live", timeout=WAIT_MS)
        expect(player).to_contain_text("FIRST-SCREEN", timeout=WAIT_MS)
        with cast.open("a") as f:
            f.write(json.dumps([5.0, "o", "THEN-THIS-LINE\r\n"]) + "\n")
        expect(player).to_contain_text("THEN-THIS-LINE", timeout=WAIT_MS)
    assert watched.errors == []


def test_a_run_with_unreadable_log_lines_is_shown_and_says_so(
    watched: Watched, tmp_path: Path
) -> None:
    run_dir = make_run(tmp_path, DONE, task="Damaged", decisions=[("complete", "ok")], screen="x")
    with run_dir.default_events.open("a") as f:
        f.write('{"event": "decision", "ts": "soon", "iteration": "two"}\n')
    page = watched.page
    with served(tmp_path) as server:
        page.goto(server.url)
        page.locator(f'#runs tbody tr[data-run-id="{DONE}"]').click()
        expect(page.locator("#detail-damage li")).to_have_text(
            ["1 unreadable line in its event log skipped"], timeout=WAIT_MS
        )
        expect(page.locator("#decisions li")).to_have_count(1)
    assert watched.errors == []


def test_the_page_tells_outcome_reason_parts_a_rejected_complete_and_a_batch(
    watched: Watched, tmp_path: Path
) -> None:
    from ptysup.batch import state

    run_dir = make_run(
        tmp_path, DONE, task="Fix it", decisions=[("complete", "done"), ("complete", "green")]
    )
    events = [json.loads(line) for line in run_dir.default_events.read_text().splitlines()]
    first = next(i for i, e in enumerate(events) if e["event"] == "decision")
    verify = {"event": "verify", "ts": events[first]["ts"], "iteration": 1, "passed": False}
    resume = {"event": "run_resume", "ts": events[first]["ts"], "part": 2}
    events[first + 1 : first + 1] = [verify, resume]
    events[-1]["reason"] = "the tests pass"
    run_dir.default_events.write_text("".join(json.dumps(e) + "\n" for e in events))
    folder = tmp_path / ".ptysup" / "runs" / state.BATCHES_DIR / "TASKS-0123456789"
    folder.mkdir(parents=True)
    tasks = [
        {"id": "a", "phase": "ended", "run_id": DONE, "outcome": "complete", "exit_code": 0},
        {"id": "b", "phase": "queued"},
    ]
    head = {"tasks_file": "/p/TASKS.yaml", "base": None, "pid": 1, "started": 5.0}
    (folder / state.STATE_FILE).write_text(json.dumps({**head, "ended": None, "tasks": tasks}))
    page = watched.page
    with served(tmp_path) as server:
        page.goto(server.url)
        row = page.locator(f'#runs tbody tr[data-run-id="{DONE}"]')
        expect(row.locator("td.outcome")).to_have_text("complete: the tests pass", timeout=WAIT_MS)
        expect(row.locator("td.parts")).to_have_text("2")
        batch = page.locator("#runs tbody tr.batch")
        expect(batch).to_have_count(1)
        expect(batch.locator("td > span")).to_have_text(
            [
                "▾ batch TASKS-0123456789",
                "crashed",
                "1 done · 0 running · 1 queued · 0 interrupted · 0 failed",
                "/p/TASKS.yaml",
            ]
        )
        expect(batch.locator("xpath=following-sibling::tr[1]")).to_have_attribute(
            "data-run-id", DONE
        )
        row.click()
        decisions = page.locator("#decisions li .action")
        expect(decisions).to_have_text(["complete (rejected by verify)", "complete"])
        expect(page.locator("#detail-outcome")).to_contain_text("resumed: 2 parts")
    assert watched.errors == []
