"""What a CI job sees, with the real Claude Code and the fake model: fatal supervisor
errors, the log's shape, output files."""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ptysup.events import shown
from ptysup.testing.fakemodel import RequestKind
from ptysup.views.replay import main as replay_main
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


def test_the_docs_recipe_runs_ptysup_by_hand_against_the_fake_model(tmp_path: Path) -> None:
    # The recipe from the docs' Development page, with its paths moved into tmp_path.
    repo = Path(__file__).parents[2]
    page = (repo / "docs" / "development.md").read_text()
    start = page.index("  mkdir -p /tmp/try\n")
    recipe = page[start : page.index("```", start)].replace("/tmp/try", str(tmp_path / "try"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PTYSUP")}
    # A new user's shell: no venv active, so only the recipe itself can find `ptysup`.
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != venv_bin)
    env.pop("VIRTUAL_ENV", None)
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


GOLDEN_SCENARIO = {
    "agent": [
        {
            "match": "write hello",
            "steps": [
                {"tool": "Write", "input": {"file_path": "{workdir}/hello.txt", "content": "hi\n"}},
                {"text": "Wrote hello.txt."},
            ],
        },
        {"reply": "Checked it."},
    ],
    "supervisor": [
        {"times": 1, "reply": "[CONTINUE] check the file once more"},
        {"reply": "[COMPLETE] hello.txt is there"},
    ],
}
# Hooks whose place among the other lines depends on timing (not on the run) are left out.
_TIMING_HOOKS = ("SessionStart", "UserPromptSubmit", "SessionEnd", "Notification")


def _masked(stdout: str, r: Rig) -> list[str]:
    lines = []
    for line in stdout.splitlines():
        if any(f"ptysup hook             {h}" in line for h in _TIMING_HOOKS):
            continue
        # A path cut to the line's limit (a long tmp dir: xdist's popen-gw0/) is the same
        # path: shown whole it would read <project>/….
        line = line.replace(shown(str(r.project / "hello.txt")), "<project>/hello.txt")
        line = line.replace(str(r.project), "<project>").replace(str(r.log), "<log>")
        line = re.sub(r"^\d\d:\d\d:\d\d ", "HH:MM:SS ", line)
        line = re.sub(r"\d{8}-\d{6}-[0-9a-f]{6}", "<run-id>", line)
        line = re.sub(r"\d+\.\d+s\b", "<s>", line)
        line = re.sub(r"pid \d+", "pid <pid>", line)
        line = re.sub(r"\$\d+\.\d{4}", "$<usd>", line)
        lines.append(line)
    return lines


def test_the_ci_log_of_a_whole_run_reads_as_expected(rig: Callable[..., Rig]) -> None:
    r = rig(GOLDEN_SCENARIO)
    del r.env["PTYSUP_WIND_DOWN"]  # the rigs turn it off; the log reads as a user's does
    run = r.run("write hello.txt", "--max-iter", "5", "--max-time", "10m")
    assert run.code == 0, run.stdout
    assert _masked(run.stdout, r) == GOLDEN, "\n".join(_masked(run.stdout, r))


GOLDEN = [
    "HH:MM:SS ptysup run_start        task: write hello.txt | agent: claude --permission-mode "
    "acceptEdits | supervisor: claude -p | budget: 5 iterations, 10m00s, wind down at 85% | run "
    "<run-id>, log <log>",
    "HH:MM:SS ptysup protect          not a git work tree: the supervisor is not shown what "
    "changed in the files, and no file is protected",
    "HH:MM:SS ptysup agent_start      claude --permission-mode acceptEdits "
    "(pid <pid>, 120x40, no terminal)",
    "HH:MM:SS ptysup agent_ready      after <s>",
    "HH:MM:SS ptysup inject           task: write hello.txt",
    "HH:MM:SS ptysup hook             PostToolUse Write <project>/hello.txt",
    "HH:MM:SS ptysup hook             Stop",
    "HH:MM:SS ptysup turn_end         kind=stop detail=Wrote hello.txt.",
    "HH:MM:SS ptysup decision         #1/5 continue (<s>): check the file once more",
    "HH:MM:SS ptysup inject           instruction: check the file once more",
    "HH:MM:SS ptysup hook             Stop",
    "HH:MM:SS ptysup turn_end         kind=stop detail=Checked it.",
    "HH:MM:SS ptysup decision         #2/5 complete (<s>): hello.txt is there",
    "HH:MM:SS ptysup run_end          outcome=complete exit_code=0 iterations=2 elapsed=<s> "
    "cost=$<usd> (agent $<usd>, supervisor $<usd>) reason=hello.txt is there",
]


def test_under_github_actions_each_decision_shows_once_and_turns_are_groups(
    rig: Callable[..., Rig],
) -> None:
    r = rig(GOLDEN_SCENARIO)
    r.env.update(GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(r.project.parent / "step.md"))
    run = r.run("write hello.txt", "--max-iter", "5")
    assert run.code == 0, run.stdout
    lines = _masked(run.stdout, r)
    decisions = [line for line in lines if "check the file once more" in line and "#1/5" in line]
    assert (
        decisions == []
        and lines.count("::notice title=ptysup decision 1/5: continue::check the file once more")
        == 1
    )
    groups = [line for line in lines if line.startswith("::group::")]
    assert groups == [
        "::group::ptysup turn 1 (task): write hello.txt",
        "::group::ptysup turn 2 (instruction): check the file once more",
    ]
    assert lines.count("::endgroup::") == 2
    # a decision is printed after its turn's group is closed, so it stays in view
    first = lines.index(groups[0])
    assert lines.index("::endgroup::", first) < lines.index(
        "::notice title=ptysup decision 1/5: continue::check the file once more"
    )


def test_a_failed_runs_ci_log_shows_the_agents_screen_as_the_run_left_it(
    rig: Callable[..., Rig],
) -> None:
    agent = [{"reply": "I deleted the tests to make them pass."}]
    r = rig({"agent": agent, "supervisor": [{"reply": "[ABORT] it deleted the tests"}]})
    run = r.run("fix the tests")
    assert run.code == 1, run.stdout
    [screen] = run.named("agent_screen")
    text = "\n".join(screen["lines"])
    assert "I deleted the tests to make them pass." in text
    # Captured before ptysup typed /clear and /exit, whose menus would fill it.
    assert "/clear" not in text and "/exit" not in text, text
