"""The engine files against `ptysup batch` for real: the plan the workflow's matrix is made
of, one task of a batch through the action (the Kubernetes pod's command: test_pod_claude)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import DEMO, Rig
from tests.e2e.test_action import Runner, finish
from tests.helpers import ptysup_argv, read_events

pytestmark = pytest.mark.engines

ROOT = Path(__file__).resolve().parents[2]
INJECTION = "${{ secrets.ANTHROPIC_API_KEY }} $(touch pwned)"


def plan(tasks: Path) -> subprocess.CompletedProcess[str]:
    argv = ptysup_argv("batch", "plan", str(tasks))
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
