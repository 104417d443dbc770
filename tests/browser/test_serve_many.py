"""The page of `ptysup serve` with many runs, in headless Chromium: each outcome reads as
what it is, a page at a time with "more", filters, a batch's runs under their batch, and a
clicked run's details where the person looks."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from ptysup.batch import state
from ptysup.store.rundir import RUNS_DIR, RunDir
from tests.browser.conftest import Watched
from tests.serving import Served, make_run, served

pytestmark = pytest.mark.browser

WAIT_MS = 60_000
COUNT = 130  # runs in all: more than two pages of 50
BATCH = "TASKS-0123456789"
# Runs that ended each way, as `ptysup runs` words them (its OUTCOME column).
ENDED = {
    "stopped": "halted",
    "signal": "halted",
    "budget": "limit",
    "escalated": "limit",
    "abort": "failed",
    "agent_exited": "failed",
    "complete": "ok",
}


def run_id(n: int) -> str:
    """The n-th run's id: ids sort by time, so a higher n is a newer run."""
    return f"20260101-{n // 3600:02d}{n // 60 % 60:02d}{n % 60:02d}-{n:06x}"


@dataclass
class Many:
    """A served folder of COUNT runs: one of each outcome, a batch's six interleaved with
    the rest, one whose task holds a word no other has, one with damage."""

    server: Served
    outcomes: dict[str, str]  # outcome → its run's id
    batch: list[str]  # the batch's runs' ids, in task order
    needle: str  # the run whose task says "needle"
    damaged: str


@pytest.fixture
def many(tmp_path: Path) -> Iterator[Many]:
    newest = dict(zip(range(COUNT - len(ENDED), COUNT), ENDED, strict=True))
    for n in range(COUNT):  # the newest ones ended each way, the others completed
        make_run(tmp_path, run_id(n), task=f"task number {n}", outcome=newest.get(n, "complete"))
    outcomes = {outcome: run_id(n) for n, outcome in newest.items()}
    needle = run_id(7)
    make_run(tmp_path, needle + "n", task="find the needle here", outcome="complete")
    batch = [run_id(n) for n in (3, 20, 41, 77, 95, 111)]  # far apart in time
    folder = tmp_path / RUNS_DIR / state.BATCHES_DIR / BATCH
    folder.mkdir(parents=True)
    tasks = [
        {"id": f"t{i}", "phase": "ended", "run_id": rid, "outcome": "complete", "exit_code": 0}
        for i, rid in enumerate(batch)
    ]
    head = {"tasks_file": "/p/TASKS.yaml", "base": None, "pid": 1, "started": 5.0}
    (folder / state.STATE_FILE).write_text(json.dumps({**head, "ended": 9.0, "tasks": tasks}))
    damaged = run_id(60)
    with RunDir(tmp_path / RUNS_DIR / damaged).default_events.open("a") as f:
        f.write("not json at all\n")
    with served(tmp_path) as server:
        yield Many(server, outcomes, batch, needle + "n", damaged)


def test_each_outcome_reads_as_what_it_is(watched: Watched, many: Many) -> None:
    """Issue 30: a run stopped on purpose read "failed". Each ended run reads as its
    outcome, in `ptysup runs`' words, with the tone of what it is."""
    page = watched.page
    page.goto(many.server.url)
    for outcome, rid in many.outcomes.items():
        cell = page.locator(f'#runs tbody tr[data-run-id="{rid}"] td.state')
        expect(cell).to_have_text(outcome, timeout=WAIT_MS)
        expect(cell).to_have_class(f"state tone-{ENDED[outcome]}")
    page.locator(f'#runs tbody tr[data-run-id="{many.outcomes["stopped"]}"]').click()
    expect(page.locator("#detail-state")).to_have_text("stopped", timeout=WAIT_MS)
    states = page.locator("#runs tbody tr[data-run-id] td.state").all_inner_texts()
    assert "failed" not in states and "done" not in states
    assert watched.errors == []


def _opened(page: Page, many: Many) -> Locator:
    """The page opened, its first 50 runs listed; the runs' rows."""
    page.goto(many.server.url)
    rows = page.locator("#runs tbody tr[data-run-id]")
    expect(rows).to_have_count(50, timeout=WAIT_MS)
    return rows


def test_a_page_at_a_time_with_more(watched: Watched, many: Many) -> None:
    page = watched.page
    rows = _opened(page, many)
    expect(page.locator("#count")).to_have_text(f"showing 50 of {COUNT + 1} runs")
    more = page.locator("#more")
    expect(more).to_have_text(f"show 50 more ({COUNT + 1 - 50} not shown)")
    more.click()
    expect(rows).to_have_count(100)
    more.click()
    expect(rows).to_have_count(COUNT + 1)
    expect(more).to_be_hidden()
    assert watched.errors == []


def test_a_batchs_runs_are_under_their_batch_and_fold_away(watched: Watched, many: Many) -> None:
    page = watched.page
    page.goto(many.server.url)
    header = page.locator(f'#runs tbody tr.batch[data-batch="{BATCH}"]')
    expect(header).to_be_visible(timeout=WAIT_MS)
    expect(header.locator(".batch-counts")).to_have_text(
        "6 done · 0 running · 0 queued · 0 interrupted · 0 failed"
    )
    # Its six runs follow it, newest first, though other runs started between them.
    after = header.locator("xpath=following-sibling::tr[position() <= 6]")
    expect(after).to_have_count(6)
    assert [after.nth(i).get_attribute("data-run-id") for i in range(6)] == many.batch[::-1]
    expect(after.nth(0).locator(".task-id")).to_have_text("t5")
    header.click()  # folded: its runs leave the list
    expect(page.locator("#runs tbody tr.in-batch")).to_have_count(0)
    expect(header.locator(".batch-counts")).to_contain_text("6 runs folded")
    header.click()
    expect(page.locator("#runs tbody tr.in-batch")).to_have_count(6)
    assert watched.errors == []


def test_filters_by_text_and_by_state(watched: Watched, many: Many) -> None:
    page = watched.page
    rows = _opened(page, many)
    page.locator("#filter-text").fill("needle")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-run-id", many.needle)
    expect(page.locator("#count")).to_have_text(
        f"showing 1 of 1 matching runs ({COUNT + 1} in all)"
    )
    page.locator("#filter-text").fill("t3 tasks-01")  # a task's id and its batch
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-run-id", many.batch[3])
    page.locator("#filter-text").fill("")
    page.locator("#filter-tone").select_option("halted")  # stopped on purpose, or a signal
    expect(page.locator("#runs tbody tr[data-run-id] td.state")).to_have_text(["signal", "stopped"])
    page.locator("#filter-tone").select_option("failed")
    expect(page.locator("#runs tbody tr[data-run-id] td.state")).to_have_text(
        ["agent_exited", "abort"]
    )
    page.locator("#filter-text").fill("no such run anywhere")
    expect(page.locator("#no-match")).to_be_visible()
    assert watched.errors == []


@pytest.mark.parametrize("width", [1400, 800])  # the details beside the list, or under it
def test_a_clicked_runs_details_are_where_the_person_looks(
    watched: Watched, many: Many, width: int
) -> None:
    """Issue 30: clicking a run left its details below 60 rows."""
    page = watched.page
    page.set_viewport_size({"width": width, "height": 800})
    page.goto(many.server.url)
    page.locator("#more").click()
    far = page.locator(f'#runs tbody tr[data-run-id="{many.damaged}"]')
    far.scroll_into_view_if_needed(timeout=WAIT_MS)
    far.click()
    detail = page.locator("#detail")
    expect(page.locator("#detail-id")).to_have_text(many.damaged, timeout=WAIT_MS)
    expect(page.locator("#detail-task")).to_have_text("task number 60")
    expect(detail).to_be_in_viewport()
    top = detail.bounding_box()
    assert top is not None and 0 <= top["y"] < 800, top
    expect(page.locator("#detail-damage li")).to_have_text(
        ["1 unreadable line in its event log skipped"]
    )
    page.keyboard.press("Escape")  # closed again
    expect(detail).to_be_hidden()
    assert watched.errors == []
