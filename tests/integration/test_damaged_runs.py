"""A real run's files damaged afterwards (a garbled log line, a bad run.json, a garbage or
cut recording): every reader still works, or refuses in one `ptysup:` line with exit 2.

The run is ptysup's own, with a fake agent and a fake supervisor (real PTYs); the same with
the real Claude Code is in tests/e2e/test_damaged_run_claude.py.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ptysup.store.rundir import RUNS_DIR, RunDir, run_dirs
from tests.helpers import FAKES, ptysup_argv
from tests.serving import served

AGENT = f"{sys.executable} {FAKES / 'agent.py'}"
SUPERVISOR = f"{sys.executable} {FAKES / 'supervisor.py'}"
# A wrong-typed field (a hand edit, another program appending) and a line of garbage.
BAD_LINES = (
    '{"event": "decision", "ts": "later", "iteration": "one", "action": "continue"}\n',
    "\x00\x00 not json {\n",
)


def _limited() -> None:
    """A command's memory: a reader that reads without end fails, not the machine."""
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


@dataclass
class Project:
    """A folder with one finished run in it, and how to run ptysup there."""

    path: Path
    env: dict[str, str]
    run: RunDir

    def ptysup(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """ptysup here; a hang fails at `timeout`, a read without end at _limited."""
        return subprocess.run(
            ptysup_argv(*args),
            cwd=self.path,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=_limited,
        )

    def answers(self, *answers: str) -> None:
        (self.path / "answers.json").write_text(json.dumps(list(answers)))
        (self.path / "supervisor.jsonl").unlink(missing_ok=True)


def one_line_error(result: subprocess.CompletedProcess[str], says: str) -> None:
    """The command refused as the docs say: exit 2, one `ptysup:` line, no traceback."""
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("ptysup: "), result.stderr
    assert says in result.stderr


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    env = dict(os.environ)
    env.update(
        FAKE_AGENT_LOG=str(tmp_path / "agent.jsonl"),
        FAKE_SUPERVISOR_LOG=str(tmp_path / "supervisor.jsonl"),
        FAKE_SUPERVISOR_ANSWERS=str(tmp_path / "answers.json"),
    )
    options = ("--agent-cmd", AGENT, "--supervisor-cmd", SUPERVISOR, "--idle", "0.5")
    p = Project(tmp_path, env, RunDir(tmp_path))
    p.answers("[CONTINUE] again")
    first = p.ptysup("build it", "--max-iter", "1", *options)
    assert first.returncode == 3, first.stderr  # the budget: a run resume can continue
    (run,) = run_dirs(tmp_path / RUNS_DIR)
    p.run = run
    yield p


def damage_log(run: RunDir) -> None:
    """The bad lines, in the middle of the log (after its run_start)."""
    lines = run.default_events.read_text().splitlines(keepends=True)
    run.default_events.write_text("".join([lines[0], *BAD_LINES, *lines[1:]]))


def test_runs_lists_a_run_with_bad_lines_and_says_it_skipped_them(project: Project) -> None:
    damage_log(project.run)
    table = project.ptysup("runs")
    assert table.returncode == 0 and table.stderr == "", table.stderr
    assert f"{project.run.run_id}  failed" in table.stdout
    note = f"2 unreadable lines in run {project.run.run_id}'s event log skipped"
    assert table.stdout.count(note) == 1
    listed = project.ptysup("runs", "--json")
    (row,) = json.loads(listed.stdout)
    assert (row["state"], row["outcome"], row["iterations"]) == ("failed", "budget", 1)
    assert row["unreadable_lines"] == 2


def test_replay_shows_the_run_and_says_once_what_it_skipped(project: Project) -> None:
    damage_log(project.run)
    replay = project.ptysup("replay", "last")
    assert replay.returncode == 0, replay.stderr
    assert "decision 1/1: continue" in replay.stdout and "run_end: budget" in replay.stdout
    assert replay.stderr == (
        f"ptysup: replay: 2 unreadable lines in {project.run.default_events} skipped\n"
    )


def test_resume_continues_a_run_with_bad_lines(project: Project) -> None:
    damage_log(project.run)
    project.answers("[COMPLETE] done now")
    resumed = project.ptysup(
        "resume", "last", "--max-iter", "3", "--agent-cmd", AGENT, "--supervisor-cmd", SUPERVISOR
    )
    assert resumed.returncode == 0, resumed.stderr
    note = f"ptysup: resume: 2 unreadable lines in run {project.run.run_id}'s event log skipped"
    assert resumed.stderr.count(note) == 1 and "Traceback" not in resumed.stderr
    events = [json.loads(x) for x in project.run.default_events.read_text().splitlines()[3:]]
    assert events[-1]["event"] == "run_end" and events[-1]["outcome"] == "complete"
    resume = next(e for e in events if e["event"] == "run_resume")
    assert resume["iterations"] == 1  # the first part's decision still counts


def test_serve_lists_a_run_with_bad_lines_and_its_decisions(project: Project) -> None:
    damage_log(project.run)
    with served(project.path) as server:
        status, _, body = server.get("/api/runs")
        assert status == 200, body
        (row,) = json.loads(body)
        assert (row["run_id"], row["state"], row["unreadable_lines"]) == (
            project.run.run_id,
            "failed",
            2,
        )
        status, _, body = server.get(f"/api/runs/{project.run.run_id}")
        assert status == 200
        assert [d["action"] for d in json.loads(body)["decisions"]] == ["continue"]


@pytest.mark.parametrize(
    ("text", "says"),
    [("{cut off", "not JSON"), ('{"config": null}', "run_id is missing"), ("[]", "not a JSON")],
)
def test_a_damaged_run_json_is_one_line_for_attach_and_resume(
    project: Project, text: str, says: str
) -> None:
    project.run.record_file.write_text(text)
    one_line_error(project.ptysup("attach", "last"), says)
    one_line_error(project.ptysup("resume", "last", "--max-iter", "3"), says)
    listed = project.ptysup("runs", "--json")  # the listing still shows the run
    assert listed.returncode == 0 and json.loads(listed.stdout)[0]["iterations"] == 1


def test_resume_of_a_run_json_whose_config_is_null_is_one_line(project: Project) -> None:
    record = json.loads(project.run.record_file.read_text())
    project.run.record_file.write_text(json.dumps({**record, "config": None}))
    one_line_error(project.ptysup("resume", "last", "--max-iter", "3"), "config is null")
    project.run.record_file.write_text(json.dumps({**record, "config": {"task": 7}}))
    one_line_error(project.ptysup("resume", "last", "--max-iter", "3"), "config: task is 7")


def test_replay_of_a_garbage_recording_is_one_line(project: Project) -> None:
    cast = project.run.default_events.with_suffix(".cast")
    cast.write_bytes(os.urandom(4096).replace(b"\n", b" "))
    one_line_error(project.ptysup("replay", "last"), "is not an asciicast v2 recording")


def test_replay_of_a_recording_cut_by_the_disk_shows_what_is_there(project: Project) -> None:
    cast = project.run.default_events.with_suffix(".cast")
    whole = project.ptysup("replay", "last")
    data = cast.read_bytes()
    cast.write_bytes(data + b'[9.5, "o", "the disk fil')  # full: the last line is cut
    cut = project.ptysup("replay", "last")
    assert cut.returncode == 0 and cut.stderr == "", cut.stderr
    assert "decision 1/1: continue" in cut.stdout
    assert cut.stdout.count("\n") == whole.stdout.count("\n")
    # A garbled line inside it is skipped and said once.
    lines = data.split(b"\n")
    cast.write_bytes(b"\n".join([lines[0], b'[0.01, "r", "huge"]', b"\x00garbage", *lines[1:]]))
    garbled = project.ptysup("replay", "last")
    assert garbled.returncode == 0
    assert garbled.stderr == f"ptysup: replay: 2 unreadable lines in {cast} skipped\n"


# ---------------------------------------------------------------------------------------
# One run of the folder damaged in each way a file can be: every reader still answers
# (no traceback, no hang, no runaway memory), the damaged run is listed as damaged with
# the reason, and the healthy run beside it lists as before.

DEEP = "[" * 200_000 + "]" * 200_000  # JSON nested deeper than Python's parser goes


def _fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def _dev_zero(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.symlink_to("/dev/zero")


def _deep_line(path: Path) -> None:
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join([lines[0], DEEP + "\n", *lines[1:]]))


def _huge(path: Path) -> None:
    with path.open("r+b") as f:  # sparse: no disk used, 600 MiB to read
        f.truncate(600 << 20)


def _folder(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.mkdir()


def _lock_only(run: Path) -> None:
    for child in run.iterdir():
        if child.is_dir():
            shutil.rmtree(child)  # turns/, what judge-bench can save
        elif child.name != "lock":
            child.unlink()


@dataclass(frozen=True)
class Damage:
    """A file of the run (None: the folder) and what is done to it; what the listing
    says of the run (a piece of its `damaged`, or None), the lines it skips, and
    whether replay and resume still work (else they refuse in one line)."""

    file: str | None
    do: Callable[[Path], object]
    says: str | None
    skipped: int = 0
    replays: bool = False
    resumes: bool = False


DAMAGES = {
    "log with a line nested too deeply": Damage("events.jsonl", _deep_line, None, 1, True, True),
    "log that is a FIFO": Damage("events.jsonl", _fifo, "not a regular file (a FIFO)"),
    "log linked to /dev/zero": Damage("events.jsonl", _dev_zero, "not a regular file (a device)"),
    "log of 600 MiB": Damage("events.jsonl", _huge, "bigger than 512 MiB"),
    "run.json nested too deeply": Damage(
        "run.json", lambda p: p.write_text(DEEP), "not JSON (nested too deeply)"
    ),
    "run.json that is a FIFO": Damage("run.json", _fifo, "not a regular file (a FIFO)"),
    "run.json linked to /dev/zero": Damage("run.json", _dev_zero, "not a regular file (a device)"),
    "run.json that is a folder": Damage("run.json", _folder, "not a regular file (a directory)"),
    "state.json that is a FIFO": Damage(
        "state.json", _fifo, "state.json: not a regular file (a FIFO)", 0, True, True
    ),
    "state.json linked to /dev/zero": Damage(
        "state.json", _dev_zero, "state.json: not a regular file (a device)", 0, True, True
    ),
    "state.json nested too deeply": Damage(
        "state.json", lambda p: p.write_text(DEEP), None, 0, True, True
    ),
    "lock that is a FIFO": Damage("lock", _fifo, "lock: not a regular file (a FIFO)", 0, True),
    "alive that is a FIFO": Damage(
        "alive", _fifo, "alive: not a regular file (a FIFO)", 0, True, True
    ),
    "recording that is a FIFO": Damage("events.cast", _fifo, None, 0, True, True),
    "recording linked to /dev/zero": Damage("events.cast", _dev_zero, None, 0, True, True),
    "recording with a line nested too deeply": Damage(
        "events.cast", _deep_line, None, 0, True, True
    ),
    "folder with its lock alone (a disk full as it started)": Damage(
        None, _lock_only, "wrote neither run.json nor its event log"
    ),
}


def _damaged_copy(project: Project) -> RunDir:
    """A second run, a copy of the project's, named as started a second later."""
    stamp = project.run.run_id.split("-")
    copy = project.run.path.with_name(f"{stamp[0]}-{int(stamp[1]) + 1:06d}-{stamp[2]}")
    shutil.copytree(project.run.path, copy)
    record = json.loads((copy / "run.json").read_text())
    record.update(run_id=copy.name, log_file=str(copy / "events.jsonl"))
    record["record"] = str(copy / "events.cast")
    (copy / "run.json").write_text(json.dumps(record))
    return RunDir(copy)


@pytest.mark.parametrize("damage", DAMAGES.values(), ids=DAMAGES.keys())
def test_one_damaged_run_never_takes_down_the_readers_of_the_folder(
    project: Project, damage: Damage
) -> None:
    run = _damaged_copy(project)
    damage.do(run.path / damage.file if damage.file else run.path)

    def ptysup(*args: str) -> subprocess.CompletedProcess[str]:
        done = project.ptysup(*args)
        assert "Traceback" not in done.stderr, done.stderr
        return done

    table = ptysup("runs")
    assert table.returncode == 0 and table.stderr == "", table.stderr
    assert f"{project.run.run_id}  failed" in table.stdout  # the healthy run, as before
    listed = ptysup("runs", "--json")
    rows = {r["run_id"]: r for r in json.loads(listed.stdout)}
    assert rows[project.run.run_id]["damaged"] is None
    row = rows[run.run_id]
    assert row["unreadable_lines"] == damage.skipped
    if damage.says is None:
        assert row["damaged"] is None
    else:
        assert damage.says in row["damaged"]
        assert f"run {run.run_id} is damaged: " in table.stdout
    for command, works in (("replay", damage.replays), ("resume", damage.resumes)):
        project.answers("[COMPLETE] done now")
        args = ("--max-iter", "3", "--agent-cmd", AGENT, "--supervisor-cmd", SUPERVISOR)
        done = ptysup(command, run.run_id, *(args if command == "resume" else ()))
        if works:
            assert done.returncode == 0, (command, done.stderr)
        else:
            one_line_error(done, "")
    one_line_error(ptysup("attach", run.run_id), "is not running")
