"""The Kubernetes Job's container command, run here as a pod runs it, with the real Claude
Code and the fake model: its index's task, its folder on the state volume, its branch
pushed to the repository (a bare repository in a temp dir), and a retry after the pod was
killed resuming the same run. It also measures what one task takes in memory: the Job's
memory request must hold it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import AGENT, Rig
from tests.helpers import read_events, wait_for

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
JOB = ROOT / "deploy" / "k8s" / "job.yaml"
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]


def _container() -> dict[str, Any]:
    job = next(d for d in yaml.safe_load_all(JOB.read_text()) if d and d["kind"] == "Job")
    return dict(job["spec"]["template"]["spec"]["containers"][0])


def _mib(quantity: str) -> int:
    assert quantity.endswith("Mi"), quantity
    return int(quantity[:-2])


def _children() -> dict[int, list[int]]:
    """Every process's children, from /proc."""
    out: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        out.setdefault(ppid, []).append(int(entry))
    return out


def _tree_pss_kib(root: int) -> int:
    """The proportional set size of `root` and every process under it (shared pages
    counted once between them), in KiB."""
    children, todo, total = _children(), [root], 0
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        total += next((int(x.split()[1]) for x in rollup.splitlines() if x.startswith("Pss:")), 0)
    return total


def _writes(task_id: str, folder: Path, delay: float) -> dict[str, Any]:
    return {
        "match": f"task {task_id}",
        "steps": [
            {
                "tool": "Write",
                "input": {
                    "file_path": f"{folder}/{task_id}.txt",
                    "content": f"work of {task_id}\n",
                },
                "delay": delay,
            },
            {"text": f"Wrote {task_id}.txt."},
        ],
    }


def test_the_pod_command_pushes_its_task_and_a_retry_resumes_the_run(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    state, tasks = tmp_path / "state", tmp_path / "tasks"
    here = state / "job-uid" / "1"  # what the pod of index 1 of this Job has for its own
    r = rig(
        {
            "agent": [
                {**_writes("second", here / "repo", delay=300), "times": 1},
                _writes("second", here / "repo", delay=0),  # the resumed agent asks again
            ],
            "supervisor": [
                {"when": {"file_exists": str(here / "repo" / "second.txt")}, "reply": "[COMPLETE]"},
                {"reply": "[CONTINUE] write the file of task second"},
            ],
        }
    )
    seed, origin = tmp_path / "seed", tmp_path / "origin.git"
    seed.mkdir()
    (seed / "README.md").write_text("hello\n")
    for argv in (["init", "-q"], ["add", "."], ["commit", "-qm", "start"]):
        subprocess.run([*GIT, *argv], cwd=seed, check=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(seed), str(origin)], check=True)
    tasks.mkdir()
    (tasks / "TASKS.yaml").write_text(
        yaml.safe_dump(
            {
                "tasks": [
                    {"id": "first", "task": "task first"},
                    {"id": "second", "task": "task second"},
                ]
            }
        )
    )
    container = _container()
    # The pod's paths, moved into this test's folder; the script is otherwise the Job's own.
    script = container["args"][0].replace("/state/", f"{state}/").replace("/tasks/", f"{tasks}/")
    values = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    env = {k: v for k, v in r.env.items() if k not in ("CLAUDE_CONFIG_DIR", "HOME")}
    env.update(
        PTYSUP_AGENT_CMD=AGENT,
        PTYSUP_MAX_TIME=values["PTYSUP_MAX_TIME"],
        PTYSUP_MAX_COST=values["PTYSUP_MAX_COST"],
        PTYSUP_REPOSITORY=str(origin),
        PTYSUP_JOB_UID="job-uid",
        PTYSUP_GIT_TOKEN="not-needed-by-a-local-remote",
        JOB_COMPLETION_INDEX="1",
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}",
    )

    def pod() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            ["/bin/sh", "-c", script],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    runs = here / "runs"

    def asked() -> bool:  # Claude Code's conversation holds the task: it can be resumed
        saved = (here / "claude" / "projects").glob("*/*.jsonl")
        return any("task second" in path.read_text(errors="replace") for path in saved)

    # First try: the pod is killed mid-task (SIGKILL to everything in it, as the kubelet).
    first = pod()
    try:
        wait_for(asked, 180, "the pod's agent to ask the model about its task")
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.communicate(timeout=60)
    assert first.returncode == -signal.SIGKILL
    (run_dir,) = runs.iterdir()

    # The retry: the same command, the same folder; measured while it runs.
    retry = pod()
    peak = 0
    started = time.monotonic()
    try:
        while retry.poll() is None and time.monotonic() - started < 300:
            peak = max(peak, _tree_pss_kib(retry.pid))
            time.sleep(0.2)  # a sampling period, not a wait for an event
        out, _ = retry.communicate(timeout=60)
    finally:
        retry.kill()
    assert retry.returncode == 0, out.decode(errors="replace")
    assert list(runs.iterdir()) == [run_dir]  # the same run, gone on with
    events = read_events(run_dir / "events.jsonl")
    assert [e["event"] for e in events].count("run_resume") == 1
    assert events[-1]["event"] == "run_end" and events[-1]["outcome"] == "complete"
    assert events[0]["task"] == "task second"
    assert (events[0]["max_cost_usd"], events[0].get("max_time_s")) == (5, 3600)
    # The work left the pod: the branch is on the remote, on top of its commit.
    shown = subprocess.run(
        ["git", "--git-dir", str(origin), "show", "ptysup/second:second.txt"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert shown.stdout == "work of second\n"
    assert b"pushed ptysup/second" in out
    # What one task took, against what the Job asks for each pod.
    peak_mib = peak / 1024
    print(f"\npeak PSS of the pod's processes: {peak_mib:.0f} MiB")
    request = _mib(container["resources"]["requests"]["memory"])
    assert 100 < peak_mib < request, (peak_mib, request)
