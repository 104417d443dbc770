"""The scheduler with stand-in children (real processes): never more than N at once, and a
stop passed on to the running ones while the rest never start."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from ptysup.batch.result import KILLED, NOT_STARTED, TaskResult
from ptysup.batch.scheduler import Scheduler, spawner
from ptysup.batch.schema import Task
from ptysup.batch.state import task_state
from tests.helpers import wait_for

# Marks itself started, then waits (without a timer) until the test releases it.
CHILD = """
import pathlib, sys, time
here = pathlib.Path(sys.argv[1])
(here / "started" / sys.argv[2]).touch()
while not (here / "release").exists():
    time.sleep(0.02)
"""


def _scheduler(tmp_path: Path, n_tasks: int, jobs: int) -> Scheduler:
    (tmp_path / "started").mkdir()
    tasks = [Task(id=f"t{i}", task="x") for i in range(n_tasks)]
    results = [TaskResult(t.id, f"run-{t.id}", tmp_path / "runs" / t.id) for t in tasks]
    return Scheduler(
        tasks,
        results,
        jobs=jobs,
        argv=lambda task, _: [sys.executable, "-c", CHILD, str(tmp_path), task.id],
        home=tmp_path,
        isolation=None,
        spawn=spawner({}),
        runs_dir=tmp_path / "runs",
        new_run_id=lambda: "unused",  # every result has its run id
    )


def test_never_more_than_jobs_children_at_once(tmp_path: Path) -> None:
    scheduler = _scheduler(tmp_path, n_tasks=5, jobs=2)
    scheduler.start()
    started = tmp_path / "started"
    wait_for(lambda: len(list(started.iterdir())) == 2, 60, "two children to start")
    assert not scheduler.done.wait(0.5)
    assert len(list(started.iterdir())) == 2  # the other three wait for a free slot
    (tmp_path / "release").touch()
    assert scheduler.done.wait(60)
    assert len(list(started.iterdir())) == 5
    assert [r.exit_code for r in scheduler.results] == [0] * 5
    assert all((r.run_dir / "output.log").is_file() for r in scheduler.results)
    modes = {(r.run_dir / "output.log").stat().st_mode & 0o777 for r in scheduler.results}
    assert modes == {0o600}  # the run's lines, as private as its event log


def test_a_stop_reaches_the_running_children_and_the_rest_never_start(tmp_path: Path) -> None:
    scheduler = _scheduler(tmp_path, n_tasks=3, jobs=2)
    scheduler.start()
    wait_for(lambda: len(list((tmp_path / "started").iterdir())) == 2, 60, "two children")
    scheduler.stop(signal.SIGTERM)
    assert scheduler.done.wait(60)
    assert scheduler.stopped_by == signal.SIGTERM
    first, second, third = scheduler.results
    # Killed before their runs began (no handler of ptysup's yet): said in words, as a
    # shell says a death by signal, and never final.
    for killed in (first, second):
        assert (killed.outcome, killed.exit_code) == (KILLED, 128 + signal.SIGTERM)
        assert killed.error == (
            "killed by SIGTERM before its run began: running the batch again goes on with it"
        )
        assert not task_state(killed).kept
    assert (third.outcome, third.exit_code) == (NOT_STARTED, None)
    assert third.error == "not started: the batch got signal 15"


def test_live_state_rereads_a_run_only_when_its_files_change(tmp_path: Path) -> None:
    import json

    from ptysup.batch.livestate import LiveState
    from ptysup.config import RunConfig
    from ptysup.store.rundir import RunDir, RunRecord, config_to_json

    run = RunDir(tmp_path / "runs" / "r1")
    log = run.default_events
    run.write_record(
        RunRecord("r1", config_to_json(RunConfig(task="t")), "s", str(log), None, "/", 0.0)
    )

    def decision(n: int) -> None:
        with log.open("a") as f:
            f.write(json.dumps({"ts": 1.0, "event": "decision", "iteration": n}) + "\n")

    decision(1)
    live = LiveState()
    result = TaskResult("a", "r1", run.path, state="running")
    first = live.rows([result])[0]
    assert first.extra["iterations"] == 1 and result.extra == {}  # the result is not changed
    assert live.rows([result])[0].extra is first.extra  # nothing changed: not read again
    decision(2)
    assert live.rows([result])[0].extra["iterations"] == 2
    queued = TaskResult("b", "r2", tmp_path / "runs" / "r2")
    assert live.rows([queued])[0].state == "queued"


def test_run_ids_are_minted_as_each_task_starts_so_they_sort_by_start(tmp_path: Path) -> None:
    (tmp_path / "started").mkdir()
    (tmp_path / "release").touch()  # every child ends at once
    tasks = [Task(id=f"t{i}", task="x") for i in range(3)]
    results = [TaskResult(t.id, "", tmp_path / "runs") for t in tasks]
    minted: list[str] = []

    def new_run_id() -> str:
        # Minted when a task starts: by then the tasks before it have started.
        minted.append(f"run-{len(minted)}-after-{len(list((tmp_path / 'started').iterdir()))}")
        return minted[-1]

    scheduler = Scheduler(
        tasks,
        results,
        jobs=1,
        argv=lambda task, _: [sys.executable, "-c", CHILD, str(tmp_path), task.id],
        home=tmp_path,
        isolation=None,
        spawn=spawner({}),
        runs_dir=tmp_path / "runs",
        new_run_id=new_run_id,
    )
    scheduler.start()
    assert scheduler.done.wait(60)
    assert [r.run_id for r in scheduler.results] == [
        "run-0-after-0",
        "run-1-after-1",
        "run-2-after-2",
    ]
    assert all(r.run_dir == tmp_path / "runs" / r.run_id for r in scheduler.results)
