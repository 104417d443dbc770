"""The engine files against `ptysup batch` for real: the plan the workflow's matrix is made
of, one task of a batch through the action, and the Kubernetes pod's script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import DEMO, Rig
from tests.e2e.test_action import Runner, finish
from tests.helpers import read_events

pytestmark = pytest.mark.engines

ROOT = Path(__file__).resolve().parents[2]
INJECTION = "${{ secrets.ANTHROPIC_API_KEY }} $(touch pwned)"


def plan(tasks: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "ptysup", "batch", "plan", str(tasks)]
    return subprocess.run(
        [*argv, "--format", "github-matrix"],
        cwd=tasks.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_plan_gives_the_matrix_ids_and_never_task_text(tmp_path: Path) -> None:
    tasks = tmp_path / "TASKS.yaml"
    tasks.write_text(
        yaml.safe_dump({"tasks": [{"id": "cache", "task": INJECTION}, {"id": "docs", "task": "B"}]})
    )
    done = plan(tasks)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0]) == {"include": [{"id": "cache"}, {"id": "docs"}]}
    assert "secrets" not in done.stdout and "pwned" not in done.stdout


def test_the_kubernetes_example_tasks_plan() -> None:
    done = plan(ROOT / "deploy" / "k8s" / "TASKS.yaml")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"include": [{"id": "readme"}]}


def test_the_action_runs_one_task_of_a_batch(
    rig: Callable[..., Rig], claude_bin: Path, tmp_path: Path
) -> None:
    r = rig(DEMO)
    (r.project / "TASKS.yaml").write_text(
        yaml.safe_dump(
            {"tasks": [{"id": "other", "task": "B"}, {"id": "wc", "task": "implement feature X"}]}
        )
    )
    runner = Runner(tmp_path, claude_bin)
    env = runner.env(r.env, batch_file="TASKS.yaml", batch_id="wc", max_iter="9")
    code, output = finish(runner.step("run", r.project, env))
    assert code == 0, output
    code, output = finish(runner.step("collect", r.project, runner.env(r.env, batch_id="wc")))
    assert code == 0, output
    out = runner.outputs()
    assert (out["outcome"], out["exit-code"]) == ("complete", "0")
    summary = json.loads((Path(out["run-dir"]) / "summary.json").read_text())
    assert summary["batch_id"] == "wc"
    start = read_events(Path(out["run-dir"]) / "events.jsonl")[0]
    assert start["task"] == "implement feature X" and start["max_iter"] == 9


def test_the_kubernetes_pod_script_runs_its_index(rig: Callable[..., Rig], tmp_path: Path) -> None:
    r = rig({"agent": [{"reply": "Done."}], "supervisor": [{"reply": "[COMPLETE] done"}]})
    origin = tmp_path / "origin"
    origin.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    (origin / "README.md").write_text("hello\n")
    for argv in (["init", "-q"], ["add", "."], ["commit", "-qm", "start"]):
        subprocess.run([*git, *argv], cwd=origin, check=True)
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "TASKS.yaml").write_text(
        yaml.safe_dump({"tasks": [{"id": "a", "task": "first"}, {"id": "b", "task": "second"}]})
    )
    job = next(
        d
        for d in yaml.safe_load_all((ROOT / "deploy" / "k8s" / "job.yaml").read_text())
        if d and d["kind"] == "Job"
    )
    container = job["spec"]["template"]["spec"]["containers"][0]
    work = tmp_path / "work"
    work.mkdir()
    # The pod's paths, moved into this test's folder; the script is otherwise the Job's own.
    script = container["args"][0].replace("/work/", f"{work}/").replace("/tasks/", f"{tasks}/")
    env = {k: v for k, v in r.env.items() if k != "CLAUDE_CONFIG_DIR"}
    env.update(
        PTYSUP_REPOSITORY=str(origin),
        HOME=str(work / "home"),
        CLAUDE_CONFIG_DIR=str(work / "claude"),
        JOB_COMPLETION_INDEX="1",
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.invalid",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.invalid",
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}",
    )
    done = subprocess.run(
        ["/bin/sh", "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    runs = list((work / "repo" / ".ptysup" / "runs").iterdir())
    assert len(runs) == 1
    assert read_events(runs[0] / "events.jsonl")[0]["task"] == "second"
