"""A real run's files damaged afterwards (a garbled log line, a bad run.json, a garbage or
cut recording): every reader still works, or refuses in one `ptysup:` line with exit 2.

The run is ptysup's own, with a fake agent and a fake supervisor (real PTYs); the same with
the real Claude Code is in tests/e2e/test_damaged_run_claude.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
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


@dataclass
class Project:
    """A folder with one finished run in it, and how to run ptysup there."""

    path: Path
    env: dict[str, str]
    run: RunDir

    def ptysup(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ptysup_argv(*args),
            cwd=self.path,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
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
