"""What a CI job sees, with the real Claude Code and the fake model: fatal supervisor
errors, the log's shape, output files."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ptysup.replay import main as replay_main
from ptysup.testing.fakemodel import RequestKind
from tests.e2e.conftest import Rig
from tests.helpers import read_events

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(("status", "words"), [(401, "Failed to authenticate"), (404, "model")])
def test_a_supervisor_that_cannot_authenticate_ends_the_run_at_once(
    rig: Callable[..., Rig], status: int, words: str
) -> None:
    r = rig({"agent": [{"reply": "ok"}], "supervisor": [{"error": status}]})
    run = r.run("t")
    assert run.code == 5, run.stdout + run.stderr
    assert len(run.named("supervisor_error")) == 1  # never retried
    assert r.model.requests_of(RequestKind.SUPERVISOR)
    end = run.events[-1]
    assert end["outcome"] == "supervisor_failed"
    assert "cannot work" in end["reason"] and words in end["reason"]
    assert not run.named("wait")


def test_a_reused_log_file_keeps_each_runs_recording_and_replay_apart(
    rig: Callable[..., Rig],
) -> None:
    r = rig({"agent": [{"reply": "ok"}], "supervisor": [{"reply": "[COMPLETE] done"}]})
    first, second = r.run("first task"), r.run("second task")
    assert (first.code, second.code) == (0, 0), second.stdout
    starts = [e for e in read_events(r.log) if e["event"] == "run_start"]
    casts = [Path(s["record"]) for s in starts]
    assert len(starts) == 2 and casts[0] != casts[1]
    assert all(c.is_file() and c.name.startswith("events.") for c in casts)
    for run_id, task in [(None, "second task"), (starts[0]["run_id"], "first task")]:
        out = io.StringIO()
        assert replay_main([str(r.log), *([run_id] if run_id else [])], out) == 0
        text = out.getvalue()
        assert f": {task}\n" in text and text.count("run_end:") == 1
        assert "(no recording of this screen)" not in text


def test_the_default_supervisor_may_only_read_and_search(rig: Callable[..., Rig]) -> None:
    r = rig({"agent": [{"reply": "ok"}], "supervisor": [{"reply": "[COMPLETE] done"}]})
    assert r.run("t").code == 0
    (request,) = r.model.requests_of(RequestKind.SUPERVISOR)
    assert sorted(t["name"] for t in request.body["tools"]) == ["Glob", "Grep", "Read"]
    agent = r.model.requests_of(RequestKind.AGENT)[0]
    assert {"Write", "Bash"} <= {t["name"] for t in agent.body["tools"]}  # the agent keeps its


def test_a_supervisor_command_that_names_its_tools_keeps_them(rig: Callable[..., Rig]) -> None:
    r = rig({"agent": [{"reply": "ok"}], "supervisor": [{"reply": "[COMPLETE] done"}]})
    assert r.run("t", "--supervisor-cmd", "claude -p --tools Read,Bash").code == 0
    (request,) = r.model.requests_of(RequestKind.SUPERVISOR)
    assert sorted(t["name"] for t in request.body["tools"]) == ["Bash", "Read"]


def test_the_readme_recipe_runs_ptysup_by_hand_against_the_fake_model(tmp_path: Path) -> None:
    # The recipe from README "Development", with its paths moved into tmp_path.
    repo = Path(__file__).parents[2]
    readme = (repo / "README.md").read_text()
    start = readme.index("  mkdir -p /tmp/try\n")
    recipe = readme[start : readme.index("```", start)].replace("/tmp/try", str(tmp_path / "try"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PTYSUP")}
    env["PATH"] = f"{sys.prefix}/bin:{env['PATH']}"  # `ptysup` as installed
    env["PTYSUP_MAX_TIME"] = "200"  # a broken recipe fails the test, never hangs it
    out = tmp_path / "out.txt"
    with out.open("w") as sink:
        proc = subprocess.Popen(
            ["bash", "-c", recipe],
            cwd=repo,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            proc.wait(timeout=240)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # whatever the recipe left behind
    text = out.read_text()
    assert "outcome=complete" in text, text[-3000:]
    assert "text.split()" in (tmp_path / "try" / "textstats.py").read_text()
