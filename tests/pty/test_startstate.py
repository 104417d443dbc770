"""The run's start: the checks' baseline before the snapshot, the protected files, and a
resumed run comparing with the same start."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from ptysup.config import RunConfig
from ptysup.events import EventLog
from ptysup.run.startstate import START_FILE, STORE, Prepared, prepare
from ptysup.run.verify import Verifier
from tests.helpers import EventList, committed

CHECK = ("python3", "-c", "open('built.txt', 'w').write('by the check')")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    files = {
        "calc.py": "x = 1\n",
        "tests/test_calc.py": "assert True\n",
        "run_checks.sh": "true\n",
        "golden/out.txt": "42\n",
        ".gitignore": ".ptysup/\n",
    }
    committed(project, files)
    return project


def _prepare(
    repo: Path,
    rec: EventList,
    resumed: bool = False,
    protect: tuple[str, ...] = (),
    verify_baseline: bool = True,
) -> Prepared:
    def make(commands: Sequence[tuple[str, ...]]) -> Verifier:
        return Verifier(commands, cwd=str(repo), env=dict(os.environ), timeout=60)

    checks = (CHECK, ("bash", "run_checks.sh"))
    config = RunConfig(
        "t", cwd=repo, verify=checks, protect=protect, verify_baseline=verify_baseline
    )
    run_dir = repo / ".ptysup" / "runs" / "r1"
    return prepare(config, EventLog([rec]), run_dir, resumed=resumed, make=make)


def test_the_start_is_taken_after_the_baseline_and_kept_for_a_resume(repo: Path) -> None:
    rec = EventList()
    prepared = _prepare(repo, rec, protect=("golden/",))
    assert rec.names() == ["verify_baseline", "protect"]
    start = prepared.start
    assert start.tree is not None and start.snapshot is not None
    # What the check wrote before the agent started is part of the start, not a change.
    assert start.tree.changes(start.snapshot, start.tree.snapshot()) == []
    assert sorted(start.protected) == ["golden/out.txt", "run_checks.sh", "tests/test_calc.py"]
    protect = rec.events[1].fields
    assert (protect["count"], protect["git"], protect["pathspecs"]) == (3, True, ["golden/"])
    assert (repo / ".ptysup" / "runs" / "r1" / STORE / START_FILE).is_file()
    # A resumed part reads the same start: no baseline again, no new snapshot.
    (repo / "calc.py").write_text("x = 2\n")
    again = EventList()
    resumed = _prepare(repo, again, resumed=True).start
    assert again.names() == []
    assert (resumed.snapshot, dict(resumed.protected)) == (start.snapshot, dict(start.protected))


def test_a_resume_whose_start_is_lost_starts_counting_from_there(repo: Path) -> None:
    _prepare(repo, EventList())
    (repo / ".ptysup" / "runs" / "r1" / STORE / START_FILE).write_text("{damaged")
    rec = EventList()
    start = _prepare(repo, rec, resumed=True).start
    assert rec.names() == ["warning", "protect"]  # no baseline: the project is not untouched
    assert "this run's start was not kept" in rec.events[0].fields["message"]
    assert start.snapshot is not None and "tests/test_calc.py" in start.protected


def test_protect_none_and_no_baseline(repo: Path) -> None:
    rec = EventList()
    prepared = _prepare(repo, rec, protect=("none",), verify_baseline=False)
    assert rec.names() == ["verify_baseline", "protect"]
    assert rec.events[0].fields["skipped"] is True and prepared.baseline is None
    assert prepared.start.protected == {} and rec.events[1].fields["off"] is True
    assert not (repo / "built.txt").exists()  # the check never ran
