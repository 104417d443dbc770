"""`ptysup serve` over a folder of damaged runs: every endpoint of every run answers at
once and says what is wrong, and the healthy run beside them is served as ever.

Issue 30 found 16 of 78 damaged-run cases left `serve` without an answer (a FIFO read
forever, a link to /dev/zero read until memory ran out, a deeply nested line crashed the
request). Each case here is a real run's folder (ptysup's own run, a fake agent and a fake
supervisor on real PTYs) copied and then damaged one way; all of them are served at once
by one server, some while their run is alive.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ptysup.store.rundir import RUNS_DIR, RunDir, run_dirs
from tests.helpers import FAKES, ptysup_argv
from tests.serving import Served, served

QUICK_S = 10.0  # "at once", on a loaded machine: the damage must not be waited out
HUGE = 8 << 30  # a sparse file: reading it whole would take 8 GiB of memory
NESTED = "[" * 200_000 + "\n"  # deeper than Python's JSON decoder may recurse
GARBAGE = bytes(range(256)) * 16
HEALTHY = "20260102-000000-000000"


def _fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def _dev_zero(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.symlink("/dev/zero", path)


def _folder(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.mkdir()


def _huge(path: Path) -> None:
    with path.open("wb") as f:
        f.truncate(HUGE)


def _loop(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.symlink(path.name, path)  # a link to itself


def _dangling(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.symlink("/no/such/file", path)


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _cut(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _garbage(path: Path) -> None:
    path.write_bytes(GARBAGE)


def _nul(path: Path) -> None:
    path.write_bytes(b"\0" * 4096)


def _nested_line(path: Path) -> None:
    """A deeply nested line in the middle of the file (a JSON-lines file) or as all of it."""
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join([*lines[:1], NESTED, *lines[1:]]))


def _nested_whole(path: Path) -> None:
    path.write_text(NESTED)


# Each way to damage one file, and what the run's answers must then say (None: nothing is
# wrong to say, only an answer is due: a cut log is a run killed mid-write).
KINDS: dict[str, tuple[Callable[[Path], None], str | None]] = {
    "fifo": (_fifo, "a FIFO"),
    "dev_zero": (_dev_zero, "a device"),
    "folder": (_folder, "a directory"),
    "huge": (_huge, "bigger than"),
    "loop": (_loop, "symbolic links"),
    "dangling": (_dangling, None),
    "missing": (lambda path: path.unlink(missing_ok=True), None),
    "empty": (_empty, None),
    "cut": (_cut, None),
    "garbage": (_garbage, None),
    "nul": (_nul, None),
    "nested": (_nested_line, None),
}
# What each file's damage of the content (not of its kind or size) says.
SAYS = {
    ("events.jsonl", "missing"): "events.jsonl: missing",
    ("events.jsonl", "dangling"): "events.jsonl: missing",
    ("events.jsonl", "empty"): "events.jsonl: empty",
    ("events.jsonl", "garbage"): "no run_start",
    ("events.jsonl", "nul"): "no run_start",
    ("events.jsonl", "nested"): "unreadable|cannot be read",
    ("run.json", "cut"): "run.json: not JSON",
    ("run.json", "garbage"): "run.json: not JSON",
    ("run.json", "nul"): "run.json: not JSON",
    ("run.json", "empty"): "run.json: not JSON",
    ("run.json", "nested"): "run.json: cannot be read|run.json: not JSON",
    ("state.json", "cut"): "state.json: not a state",
    ("state.json", "garbage"): "state.json: not a state",
    ("state.json", "nul"): "state.json: not a state",
    ("state.json", "empty"): "state.json: not a state",
    ("state.json", "nested"): "state.json: cannot be read|state.json: not a state",
    ("events.cast", "missing"): "events.cast: missing",
    ("events.cast", "dangling"): "events.cast: missing",
    ("events.cast", "empty"): "not an asciicast",
    ("events.cast", "garbage"): "not an asciicast",
    ("events.cast", "nul"): "not an asciicast",
    ("events.cast", "cut"): None,  # a recording cut by a full disk replays what is there
    ("events.cast", "nested"): "unreadable line",
    ("alive", "huge"): None,  # only its time is looked at: its size does not matter
}
FILES = ("events.jsonl", "run.json", "state.json", "lock", "events.cast")
# Damage only these take with a live run (the lock is held, so it is left alone).
LIVE_KINDS = ("fifo", "dev_zero", "huge", "garbage", "nested")


@dataclass(frozen=True)
class Case:
    """One damaged run."""

    name: str
    damage: Callable[[RunDir, Path], None]  # (the run, a folder outside the runs)
    says: str | None  # a regular expression, case-insensitive; None: only an answer is due
    live: bool = False


def _file_case(file: str, kind: str, live: bool = False) -> Case:
    do, says = KINDS[kind]
    says = SAYS.get((file, kind), says)
    return Case(
        f"{'live ' if live else ''}{file} {kind}",
        lambda run, elsewhere: do(run.path / file),
        says,
        live,
    )


def _elsewhere(field: str, kind: str) -> Case:
    """run.json names a file outside the run's folder (--log-file, --record) so damaged."""
    do, says = KINDS[kind]

    def damage(run: RunDir, elsewhere: Path) -> None:
        target = elsewhere / f"{run.run_id}-{field}"
        do(target)
        record = json.loads(run.record_file.read_text())
        run.record_file.write_text(json.dumps({**record, field: str(target)}))

    # A missing --record is no damage: each part's recording is where its events say.
    missing = kind == "missing" and field == "log_file"
    return Case(f"run.json's {field} {kind}", damage, "missing" if missing else says)


def _resumed_part(kind: str) -> Case:
    """A second part whose recording (named by its run_resume event) is damaged."""
    do, says = KINDS[kind]

    def damage(run: RunDir, elsewhere: Path) -> None:
        target = run.path / "events.part2.cast"
        do(target)
        resume = {"event": "run_resume", "ts": time.time(), "run_id": run.run_id, "part": 2}
        with run.default_events.open("a") as f:
            f.write(json.dumps({**resume, "record": str(target)}) + "\n")

    return Case(f"part 2's recording {kind}", damage, says)


def _only(*names: str) -> Case:
    def damage(run: RunDir, elsewhere: Path) -> None:
        for path in run.path.iterdir():
            if path.name in names:
                continue
            if path.is_dir() and not path.is_symlink():  # turns/: what its judge was shown
                shutil.rmtree(path)
            else:
                path.unlink()

    return Case(f"a folder with only {' and '.join(names)}", damage, None)


def _folder_is(kind: str) -> Case:
    do, _ = KINDS[kind]

    def damage(run: RunDir, elsewhere: Path) -> None:
        shutil.rmtree(run.path)
        do(run.path)

    return Case(f"the run's folder is {kind}", damage, None)


CASES = [
    *(_file_case(file, kind) for file in FILES for kind in KINDS),
    *(
        _file_case(file, kind, live=True)
        for file in ("events.jsonl", "events.cast")
        for kind in LIVE_KINDS
    ),
    *(
        _elsewhere(field, kind)
        for field in ("log_file", "record")
        for kind in ("fifo", "dev_zero", "huge", "folder", "missing")
    ),
    *(_resumed_part(kind) for kind in ("fifo", "dev_zero", "huge", "garbage")),
    _only("lock"),
    _only("run.json"),
    _only("events.jsonl"),
    *(_folder_is(kind) for kind in ("fifo", "dev_zero", "huge")),
    *(
        _file_case(name, kind)
        for name in ("log_incomplete", "alive")
        for kind in ("fifo", "dev_zero", "huge")
    ),
]


@dataclass
class Folder:
    """A project folder with one healthy run and a damaged copy of it for each case."""

    path: Path
    runs: dict[str, RunDir]  # case name → its run


def _clone(run: RunDir, run_id: str) -> RunDir:
    """A copy of `run` under another id: its run.json and events name the copy's files."""
    copy = RunDir(run.path.parent / run_id)
    shutil.copytree(run.path, copy.path)
    record = json.loads(copy.record_file.read_text())
    record.update(run_id=run_id, log_file=str(copy.default_events))
    record.update(record=str(copy.default_events.with_suffix(".cast")))
    copy.record_file.write_text(json.dumps(record))
    events = [json.loads(line) for line in copy.default_events.read_text().splitlines()]
    for e in events:
        if e["event"] in ("run_start", "run_resume"):
            e.update(run_id=run_id, record=record["record"], log_file=record["log_file"])
    copy.default_events.write_text("".join(json.dumps(e) + "\n" for e in events))
    return copy


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Folder:
    path = tmp_path_factory.mktemp("damaged")
    env = dict(os.environ)
    env.update(
        FAKE_AGENT_LOG=str(path / "agent.jsonl"),
        FAKE_SUPERVISOR_LOG=str(path / "supervisor.jsonl"),
        FAKE_SUPERVISOR_ANSWERS=str(path / "answers.json"),
    )
    (path / "answers.json").write_text(json.dumps(["[CONTINUE] again"]))
    done = subprocess.run(
        ptysup_argv(
            "build it",
            "--max-iter",
            "1",
            "--idle",
            "0.5",
            "--agent-cmd",
            f"{sys.executable} {FAKES / 'agent.py'}",
            "--supervisor-cmd",
            f"{sys.executable} {FAKES / 'supervisor.py'}",
        ),
        cwd=path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 3, done.stderr  # the budget: a decision and a recording
    (made,) = run_dirs(path / RUNS_DIR)
    elsewhere = path / "elsewhere"
    elsewhere.mkdir()
    runs = {}
    for i, case in enumerate(CASES, 1):
        run = _clone(made, f"20260102-000000-{i:06x}")
        case.damage(run, elsewhere)
        runs[case.name] = run
    _clone(made, HEALTHY)
    shutil.rmtree(made.path)
    batches = path / RUNS_DIR / "batches"
    for name, damage in (("fifo", _fifo), ("zero", _dev_zero), ("nested", _nested_whole)):
        (batches / f"TASKS-{name}").mkdir(parents=True)
        damage(batches / f"TASKS-{name}" / "state.json")
    return Folder(path, runs)


@dataclass
class Answer:
    """One request's answer and how long it took."""

    status: int
    body: bytes
    seconds: float

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.body)


def _get(server: Served, path: str, *, first_event: bool = False) -> Answer:
    """GET `path`; a live stream (`first_event`) only until its first event. A request the
    server never answers is status 0, after twice QUICK_S."""
    started = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=2 * QUICK_S)
    try:
        conn.request("GET", path, headers={"Cookie": server.cookie})
        response = conn.getresponse()
        if first_event and response.status == 200:
            body = b""
            while not body.endswith(b"\n\n") and (line := response.readline()):
                body += line
        else:
            body = response.read()
        return Answer(response.status, body, time.monotonic() - started)
    except (TimeoutError, ConnectionError, http.client.HTTPException) as exc:
        return Answer(0, repr(exc).encode(), time.monotonic() - started)
    finally:
        conn.close()


def _problems(server: Served, case: Case, run: RunDir, rows: dict[str, Any]) -> list[str]:
    """What is wrong with the answers about one damaged run (nothing, when all is well)."""
    base = f"/api/runs/{run.run_id}"
    answers = {path: _get(server, path) for path in (base, f"{base}/cast")}
    answers[f"{base}/live"] = _get(server, f"{base}/live", first_event=case.live)
    wrong = [f"{path}: {a.seconds:.1f} s" for path, a in answers.items() if a.seconds > QUICK_S]
    details = answers[base]
    if rows and run.run_id not in rows:  # not a run (the store lists no such folder)
        return wrong + [f"{p}: {a.status}" for p, a in answers.items() if a.status != 404]
    if details.status != 200:
        return [*wrong, f"details: {details.status} {details.text[:200]}"]
    row = rows.get(run.run_id) or {}
    told = " ".join(  # what the page can show: the damage lines, and refusals' text
        [*row.get("damage", []), *details.json()["damage"]]
        + [a.text for a in answers.values() if a.status != 200]
    )
    live = answers[f"{base}/live"]
    if (
        live.status == 200
        and not case.live
        and not live.body.endswith(b"event: done\ndata: {}\n\n")
    ):
        wrong.append("live: the stream of an ended run did not end")
    if (
        case.live
        and case.name.startswith("live events.jsonl")
        and (b"fake-agent ready" not in live.body or not details.json()["showable"])
    ):  # whatever became of its log, a live run's terminal is still watched
        wrong.append(f"live: no terminal: {live.status} {live.text[:200]}")
    if case.says is not None and re.search(case.says, told, re.IGNORECASE) is None:
        wrong.append(f"does not say /{case.says}/: {told[:600]}")
    return wrong


def test_every_endpoint_of_every_damaged_run_answers_at_once_and_says_the_damage(
    folder: Folder,
) -> None:
    with contextlib.ExitStack() as alive, served(folder.path) as server:
        for case in CASES:
            if case.live:  # this process is the run: alive while it holds the lock
                alive.enter_context(folder.runs[case.name].lock())
        listing = _get(server, "/api/runs")
        batches = _get(server, "/api/batches")
        failures: dict[str, Any] = {
            name: [f"{answer.status} after {answer.seconds:.1f} s: {answer.text[:200]}"]
            for name, answer in (("the list", listing), ("the batches", batches))
            if answer.status != 200 or answer.seconds > QUICK_S
        }
        rows = {row["run_id"]: row for row in listing.json()} if listing.status == 200 else {}
        if batches.status == 200:  # each damaged batch is a row that says why
            said = {b["batch"]: " ".join(b["damage"]) for b in batches.json()}
            assert "a FIFO" in said["TASKS-fifo"] and "a device" in said["TASKS-zero"], said
            assert said["TASKS-nested"], said
        for case in CASES:
            problems = _problems(server, case, folder.runs[case.name], rows)
            if problems:
                failures[case.name] = problems
        assert not failures, f"{len(failures)} of {len(CASES)} cases and lists: " + json.dumps(
            failures, indent=1
        )
        # The healthy run beside them is served as ever.
        assert rows[HEALTHY]["state"] == "failed" and rows[HEALTHY]["iterations"] == 1
        assert rows[HEALTHY].get("damage", []) == []
        details = _get(server, f"/api/runs/{HEALTHY}").json()
        assert [d["action"] for d in details["decisions"]] == ["continue"]
        cast = _get(server, f"/api/runs/{HEALTHY}/cast")
        assert cast.status == 200 and b"fake-agent ready" in cast.body
        assert server.proc.poll() is None  # nothing killed the server
