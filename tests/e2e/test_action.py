"""The GitHub Action's own shell steps, run for real: the pinned Claude Code, the fake model.

The install steps are stood in for (this checkout's ptysup, the pinned claude, in the folders
the action uses); the "Run ptysup" and "Collect the run directory" scripts are read from
action.yml and run as the runner runs them, with its environment files.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
import yaml

from ptysup.redact import Redactor
from ptysup.testing.fakemodel import RequestKind
from tests.e2e.conftest import DEMO, Rig
from tests.helpers import ptysup_argv, ptysup_python, read_events, wait_for

pytestmark = pytest.mark.engines

ACTION = Path(__file__).resolve().parents[2] / "action.yml"


def input_defaults() -> dict[str, str]:
    """INPUT_<NAME> for every input the steps read, at the action's defaults."""
    inputs = yaml.safe_load(ACTION.read_text(encoding="utf-8"))["inputs"]
    return {f"INPUT_{k.upper().replace('-', '_')}": str(v["default"]) for k, v in inputs.items()}


def script(step_id: str) -> str:
    """The `run:` of the action's step STEP_ID, as the runner would write it to a file."""
    steps = yaml.safe_load(ACTION.read_text(encoding="utf-8"))["runs"]["steps"]
    return str(next(s["run"] for s in steps if s.get("id") == step_id))


class Runner:
    """One job's RUNNER_TEMP with ptysup 'installed', and the runner's environment files."""

    def __init__(self, tmp: Path, claude_bin: Path) -> None:
        self.temp = tmp / "runner-temp"
        self.state = self.temp / "ptysup-state"
        self.output = tmp / "github_output"
        self.summary = tmp / "github_step_summary"
        for d in (self.state, self.temp / "ptysup-venv" / "bin", self.temp / "ptysup-bin"):
            d.mkdir(parents=True)
        python = ptysup_python()
        self._wrapper(self.temp / "ptysup-venv" / "bin" / "python", f'exec "{python}" "$@"')
        self._wrapper(self.temp / "ptysup-bin" / "ptysup", f'exec {shlex.join(ptysup_argv())} "$@"')
        (self.temp / "ptysup-bin" / "claude").symlink_to(claude_bin)

    @staticmethod
    def _wrapper(path: Path, line: str) -> None:
        path.write_text(f"#!/bin/sh\n{line}\n")
        path.chmod(0o755)

    def env(self, base: Mapping[str, str], **inputs: str) -> dict[str, str]:
        env = dict(base)
        env.update(input_defaults())
        env.update({f"INPUT_{k.upper()}": v for k, v in inputs.items()})
        env.update(
            RUNNER_TEMP=str(self.temp),
            GITHUB_OUTPUT=str(self.output),
            GITHUB_STEP_SUMMARY=str(self.summary),
            GITHUB_ACTIONS="true",
            GITHUB_JOB="fix",
            GITHUB_RUN_ATTEMPT="2",
        )
        return env

    def step(self, step_id: str, cwd: Path, env: Mapping[str, str]) -> subprocess.Popen[str]:
        path = self.temp / f"{step_id}.sh"
        path.write_text(script(step_id))
        # What the runner runs for `shell: bash`.
        return subprocess.Popen(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(path)],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def outputs(self) -> dict[str, str]:
        """$GITHUB_OUTPUT parsed as the runner does (name<<DELIMITER heredocs)."""
        lines = self.output.read_text().split("\n")
        found: dict[str, str] = {}
        i = 0
        while i < len(lines):
            if "<<" in lines[i]:
                name, delimiter = lines[i].split("<<", 1)
                end = lines.index(delimiter, i + 1)
                found[name] = "\n".join(lines[i + 1 : end])
                i = end
            i += 1
        return found


def finish(proc: subprocess.Popen[str], timeout: float = 180) -> tuple[int, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, out + err


def test_the_action_runs_a_task_and_sets_outputs_from_the_summary(
    rig: Callable[..., Rig], claude_bin: Path, tmp_path: Path
) -> None:
    r = rig(DEMO)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    for argv in (["init", "-q"], ["add", "."], ["commit", "-qm", "the seed"]):
        subprocess.run([*git, *argv], cwd=r.project, check=True)
    runner = Runner(tmp_path, claude_bin)
    # No CLAUDE_CONFIG_DIR: the action prepares its own, with the key approved.
    base = {k: v for k, v in r.env.items() if k != "CLAUDE_CONFIG_DIR"}
    token = "ghp_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa"  # a secret in the task
    task = f"implement feature X; $(touch pwned) `touch pwned` \"quoted\" 'too' {token}"
    env = runner.env(
        base,
        task=task,
        max_iter="7",
        verify="python3 -m unittest -q\n\n  \n",
        args="--max-time '10m' --supervisor-timeout 120",
    )
    code, output = finish(runner.step("run", r.project, env))
    assert code == 0, output
    assert not (r.project / "pwned").exists(), "the task reached a shell"
    assert (runner.state / "claude-config" / ".claude.json").is_file()
    assert (runner.state / "task").stat().st_mode & 0o777 == 0o600

    code, output = finish(runner.step("collect", r.project, runner.env(base)))
    assert code == 0, output
    out = runner.outputs()
    run_dir = r.project / ".ptysup" / "runs" / out["run-id"]
    assert run_dir.is_dir()
    assert (out["outcome"], out["exit-code"]) == ("complete", "0")
    assert float(out["cost-usd"]) >= 0
    assert out["artifact-name"] == f"ptysup-{out['run-id']}-fix-2"
    copy = Path(out["run-dir"])
    assert copy == runner.state / "upload" / out["run-id"]
    assert not any(part.startswith(".") for part in copy.relative_to(runner.temp).parts)
    assert (copy / "events.jsonl").read_bytes() == (run_dir / "events.jsonl").read_bytes()
    assert json.loads((copy / "summary.json").read_text())["outcome"] == "complete"
    assert (run_dir / "lock").exists() and not (copy / "lock").exists()
    # run.json keeps the task as given (a resume may type it again); the uploaded copy is
    # redacted like the event log, and so are the screens replay prints from the recording.
    assert token in (run_dir / "run.json").read_text()
    assert token not in (copy / "run.json").read_text()
    assert "[REDACTED" in json.loads((copy / "run.json").read_text())["config"]["task"]
    replay = subprocess.run(
        ptysup_argv("replay", out["run-id"]), capture_output=True, text=True, cwd=r.project
    )
    assert replay.returncode == 0 and "decision 1/7" in replay.stdout, replay.stderr
    assert token not in replay.stdout and "[REDACTED" in replay.stdout
    # The agent's work comes back in the artifact, ptysup's own folder left out, the
    # checkout's index untouched.
    patch = (copy / "changes.patch").read_text()
    assert "+++ b/textstats.py" in patch and "+def word_count" in patch
    assert ".ptysup" not in patch
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=r.project, capture_output=True, text=True
    ).stdout
    assert "?? textstats.py" in status

    start = read_events(run_dir / "events.jsonl")[0]
    assert start["task"] == Redactor()(task) != task
    assert start["max_iter"] == 7 and start["max_time_s"] == 600
    assert start["verify"] == [["python3", "-m", "unittest", "-q"]]
    assert start["agent_cmd"] == ["claude", "--permission-mode", "acceptEdits"]
    assert "ptysup: complete" in runner.summary.read_text()


def test_cancelling_the_step_reaches_ptysup_and_the_run_is_still_collected(
    rig: Callable[..., Rig], claude_bin: Path, tmp_path: Path
) -> None:
    r = rig({"agent": [{"delay": 60, "reply": "slow"}], "supervisor": [{"reply": "[COMPLETE]"}]})
    runner = Runner(tmp_path, claude_bin)
    (r.project / "TASK.md").write_text("a slow task\n")
    proc = runner.step("run", r.project, runner.env(r.env, task_file="TASK.md"))
    try:
        r.model.wait_for(lambda req: req.kind is RequestKind.AGENT, timeout=60)
        # What the runner signals is the step's process: after exec, ptysup itself.
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
        assert b"ptysup" in cmdline and b"bash" not in cmdline[0], cmdline
        os.kill(proc.pid, signal.SIGINT)
        code, output = finish(proc, timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 130, output
    code, output = finish(runner.step("collect", r.project, runner.env(r.env)))
    assert code == 0, output
    out = runner.outputs()
    assert (out["outcome"], out["exit-code"]) == ("signal", "130")
    events = read_events(Path(out["run-dir"]) / "events.jsonl")
    assert events[-1]["event"] == "run_end"
    wait_for(lambda: not r.leftovers(), 10, "the agent's processes to be gone")


def test_a_run_killed_before_its_summary_is_still_found_and_uploaded(
    rig: Callable[..., Rig], claude_bin: Path, tmp_path: Path
) -> None:
    r = rig({"agent": [{"delay": 60, "reply": "slow"}], "supervisor": [{"reply": "[COMPLETE]"}]})
    runner = Runner(tmp_path, claude_bin)
    old = r.project / ".ptysup" / "runs" / "20200101-000000-old"
    old.mkdir(parents=True)
    proc = runner.step("run", r.project, runner.env(r.env, task="a slow task"))
    try:
        r.model.wait_for(lambda req: req.kind is RequestKind.AGENT, timeout=60)
        os.kill(proc.pid, signal.SIGKILL)  # the runner's last resort: no run_end, no summary
        finish(proc, timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in r.leftovers():
            os.kill(pid, signal.SIGKILL)
    assert not (runner.state / "summary.json").exists()
    code, output = finish(runner.step("collect", r.project, runner.env(r.env)))
    assert code == 0, output
    out = runner.outputs()
    assert out["run-id"] not in ("", old.name)
    assert out["exit-code"] == ""
    assert (Path(out["run-dir"]) / "events.jsonl").is_file()
    assert out["outcome"]  # from the event log: no run_end, so not "complete"
    assert out["outcome"] != "complete"


def test_without_a_task_the_step_fails_with_a_usage_line(
    claude_bin: Path, tmp_path: Path, project_dir: Path
) -> None:
    runner = Runner(tmp_path, claude_bin)
    code, output = finish(runner.step("run", project_dir, runner.env(os.environ)))
    assert code == 2
    assert output.strip() == "ptysup: the action needs task, task-file, or batch-file with batch-id"


@pytest.mark.parametrize("given", ["", "claude --permission-mode acceptEdits"])
def test_a_batch_files_agent_cmd_wins_unless_the_input_names_one(
    rig: Callable[..., Rig], claude_bin: Path, tmp_path: Path, given: str
) -> None:
    r = rig({"agent": [{"reply": "Done."}], "supervisor": [{"reply": "[COMPLETE] ok"}]})
    mine = "claude --permission-mode acceptEdits --allowedTools Read"
    (r.project / "TASKS.yaml").write_text(f"agent-cmd: {mine}\ntasks:\n  - {{id: one, task: t}}\n")
    runner = Runner(tmp_path, claude_bin)
    inputs = {"agent_cmd": given} if given else {}  # else the action's default, as GitHub does
    env = runner.env(r.env, batch_file="TASKS.yaml", batch_id="one", **inputs)
    code, output = finish(runner.step("run", r.project, env))
    assert code == 0, output
    [log] = (r.project / ".ptysup" / "runs").glob("*/events.jsonl")
    expected = given or mine  # the input is the command line; without it the file's stands
    assert read_events(log)[0]["agent_cmd"] == expected.split()
