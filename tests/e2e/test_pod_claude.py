"""The Kubernetes Job's container command, run here as a pod runs it, with the real Claude
Code and the fake model: its index's task, its folder on the state volume, its branch
pushed to the repository (a bare repository in a temp dir), and a retry after the pod was
killed resuming the same run. It also measures what one task takes in memory: the Job's
memory request must hold it."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import AGENT, Rig
from tests.helpers import ptysup_python, read_events, wait_for

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


def _origin(tmp_path: Path, bare: Path) -> Path:
    """A bare repository at BARE, of a project with one commit: the pods' remote."""
    seed = tmp_path / "seed"
    seed.mkdir()
    (seed / "README.md").write_text("hello\n")
    for argv in (["init", "-q"], ["add", "."], ["commit", "-qm", "start"]):
        subprocess.run([*GIT, *argv], cwd=seed, check=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(seed), str(bare)], check=True)
    return bare


def _pod_script(state: Path, tasks: Path) -> str:
    """The Job's container script, its volumes moved into the test's folders."""
    script = str(_container()["args"][0])
    return script.replace("/state/", f"{state}/").replace("/tasks/", f"{tasks}/")


def _pod_env(r: Rig, **values: str) -> dict[str, str]:
    """The pod's environment: the rig's model and agents (not its Claude config or HOME:
    the pod's script sets its own), ptysup's Python on PATH, and VALUES."""
    env = {k: v for k, v in r.env.items() if k not in ("CLAUDE_CONFIG_DIR", "HOME")}
    env["PATH"] = f"{Path(ptysup_python()).parent}{os.pathsep}{env['PATH']}"
    env.update(values)
    return env


def _remote_file(origin: Path, spec: str) -> str:
    """A file of a branch on the remote (`BRANCH:PATH`)."""
    done = subprocess.run(
        ["git", "--git-dir", str(origin), "show", spec], capture_output=True, text=True, check=True
    )
    return done.stdout


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
    origin = _origin(tmp_path, tmp_path / "origin.git")
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
    script = _pod_script(state, tasks)
    values = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    env = _pod_env(
        r,
        PTYSUP_AGENT_CMD=AGENT,
        PTYSUP_MAX_TIME=values["PTYSUP_MAX_TIME"],
        PTYSUP_MAX_COST=values["PTYSUP_MAX_COST"],
        PTYSUP_REPOSITORY=str(origin),
        PTYSUP_JOB_UID="job-uid",
        PTYSUP_GIT_TOKEN="not-needed-by-a-local-remote",
        JOB_COMPLETION_INDEX="1",
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
    assert _remote_file(origin, "ptysup/second:second.txt") == "work of second\n"
    assert b"pushed ptysup/second" in out
    # What one task took, against what the Job asks for each pod.
    peak_mib = peak / 1024
    print(f"\npeak PSS of the pod's processes: {peak_mib:.0f} MiB")
    request = _mib(container["resources"]["requests"]["memory"])
    assert 100 < peak_mib < request, (peak_mib, request)


# What the agent tries in the pod, through its Bash tool: the environment, every process's
# environment, git's credentials for the remote and for another host, ptysup's helper
# itself; then traps for ptysup's push (in the repository a credential helper, a pre-push
# hook, the remote's address rewritten and a proxy, none of which may be heeded; a global
# helper in the HOME it shares) and a spy in a session of its own that outlives the agent,
# reading every process's environment and command line.
PROBE = """\
spy={spy}
remote='protocol=http\\nhost=127.0.0.1:{port}\\npath=origin.git\\n\\n'
{{
  echo "== env"; env
  echo "== every process"
  for p in /proc/[0-9]*; do echo "$p: $(tr '\\0' ' ' < "$p/environ")"; done
  echo "== git credential fill, the remote"
  printf "$remote" | GIT_TERMINAL_PROMPT=0 git credential fill
  echo "== git credential fill, another host"
  printf 'protocol=https\\nhost=evil.example\\n\\n' | GIT_TERMINAL_PROMPT=0 git credential fill
  echo "== ptysup's helper"
  printf "$remote" | python -m ptysup.engines.ci git-credential get
}} > "$spy/seen" 2>&1
git config credential.helper "!f() {{ cat >> $spy/repo-helper; }}; f"
git config url.http://127.0.0.1:1/.insteadOf http://127.0.0.1:{port}/
git config http.proxy http://127.0.0.1:1
git config --global credential.helper "!f() {{ cat >> $spy/global-helper; }}; f"
printf '#!/bin/sh\\nenv >> %s/pre-push\\n' "$spy" > .git/hooks/pre-push
chmod +x .git/hooks/pre-push
setsid sh -c 'while :; do
  date +%s.%N >> {spy}/beats
  cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr "\\0" "\\n" >> {spy}/caught
  sleep 0.05
done' > /dev/null 2>&1 < /dev/null &
echo probed
"""


def test_in_the_pod_the_agent_never_sees_the_git_token_and_ptysup_s_push_still_works(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    import secrets

    from tests.gitserver import serve
    from tests.otheruser import other_user

    user = other_user(tmp_path)  # the pod's user is not root, and neither is its agent
    token = f"ghs_{secrets.token_hex(12)}"
    state, tasks, spy = tmp_path / "state", tmp_path / "tasks", tmp_path / "spy"
    here = state / "job-uid" / "0"
    for folder in (state, spy):
        folder.mkdir()
        os.chown(folder, user.uid, user.gid)
    origin = _origin(tmp_path, tmp_path / "served" / "origin.git")
    with serve(origin.parent, token) as server:
        probe = tmp_path / "probe.sh"
        probe.write_text(PROBE.format(spy=spy, port=server.port))
        r = rig(
            {
                "agent": [
                    {
                        "match": "task probe",
                        "steps": [
                            {"tool": "Bash", "input": {"command": f"sh {probe}"}},
                            {
                                "tool": "Write",
                                "input": {
                                    "file_path": f"{here}/repo/probe.txt",
                                    "content": "probed\n",
                                },
                            },
                            {"text": "Probed."},
                        ],
                    }
                ],
                "supervisor": [{"reply": "[COMPLETE] probed"}],
            }
        )
        tasks.mkdir()
        (tasks / "TASKS.yaml").write_text("tasks:\n  - {id: probe, task: task probe}\n")
        script = _pod_script(state, tasks)
        env = _pod_env(
            r,
            PTYSUP_AGENT_CMD=f"{AGENT} --allowedTools Bash",
            PTYSUP_MAX_TIME="4m",
            PTYSUP_REPOSITORY=server.url("origin.git"),
            PTYSUP_JOB_UID="job-uid",
            PTYSUP_GIT_TOKEN=token,
            JOB_COMPLETION_INDEX="0",
        )
        # The pod: its own PID namespace, whose first process is the container's command
        # (which execs ptysup), run as the pod's user.
        pod = subprocess.run(
            ["unshare", "--pid", "--fork", "--mount-proc", *user.argv("/bin/sh", "-c", script)],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=300,
        )
        pushed = server.pushes()
    # The agent saw no token: not in its environment, nor in any process's it could read
    # (ptysup's own is closed to it), nor from git for the remote or another host, nor
    # through the traps it set for ptysup's push.
    assert (spy / "seen").exists(), pod.stdout + pod.stderr  # the probe never ran: why
    seen = (spy / "seen").read_text()
    assert "== env" in seen and "PTYSUP_REPOSITORY=" in seen  # the probe did run
    assert "/proc/1: \n" in seen and "Permission denied" in seen
    beats = [float(b) for b in (spy / "beats").read_text().split()]
    assert beats, "the spy never ran"
    for name in ("seen", "caught", "repo-helper", "global-helper", "pre-push"):
        leaked = (spy / name).read_text(errors="replace") if (spy / name).exists() else ""
        assert token not in leaked, f"the token reached the agent's {name}"
    assert "password=" not in seen
    # ptysup's push got the token, for the one remote: the branch is there.
    assert pod.returncode == 0, pod.stdout + pod.stderr
    assert _remote_file(origin, "ptysup/probe:probe.txt") == "probed\n"
    # Nothing the agent started was alive when the token was first sent.
    assert pushed and max(beats) < pushed[0].ts, (max(beats), pushed[0].ts)


def test_a_second_job_of_the_same_tasks_is_refused_up_front_not_after_redoing_the_task(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    from ptysup.testing.fakemodel import RequestKind

    state, tasks = tmp_path / "state", tmp_path / "tasks"
    r = rig(
        {
            "agent": [_writes("only", state / "first-job" / "0" / "repo", delay=0)],
            "supervisor": [{"reply": "[COMPLETE] written"}],
        }
    )
    origin = _origin(tmp_path, tmp_path / "origin.git")
    tasks.mkdir()
    (tasks / "TASKS.yaml").write_text("tasks:\n  - {id: only, task: task only}\n")
    script = _pod_script(state, tasks)
    env = _pod_env(
        r, PTYSUP_AGENT_CMD=AGENT, PTYSUP_REPOSITORY=str(origin), JOB_COMPLETION_INDEX="0"
    )

    def job(uid: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["/bin/sh", "-c", script],
            env={**env, "PTYSUP_JOB_UID": uid},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=300,
        )

    first = job("first-job")
    assert first.returncode == 0, first.stdout + first.stderr
    pushed = _remote_file(origin, "ptysup/only:only.txt")
    asked = len(r.model.requests_of(RequestKind.AGENT))
    # A second Job of the same tasks: a new folder, a fresh clone, the branch already there.
    second = job("second-job")
    assert second.returncode == 2, second.stdout + second.stderr  # FailIndex: no retry
    (said,) = second.stderr.splitlines()
    assert said.startswith(f"ptysup: --push {origin}: branch ptysup/only is already there")
    assert "--delete ptysup/only" in said and "rename the task" in said
    assert len(r.model.requests_of(RequestKind.AGENT)) == asked  # the task never ran again
    assert not (state / "second-job" / "0" / "runs").exists()
    assert _remote_file(origin, "ptysup/only:only.txt") == pushed == "work of only\n"
