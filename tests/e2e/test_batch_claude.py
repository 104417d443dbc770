"""`ptysup batch` with the real Claude Code and the fake model: tasks in parallel on their
own worktrees and branches, committed (never merged), the summary, prune, signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ptysup.batch import prune
from tests.e2e.conftest import AGENT, Rig
from tests.helpers import Tmux, ptysup_argv, read_events, terminal_script, wait_for

pytestmark = pytest.mark.e2e


def _writes_its_file(
    task_id: str, delay: float = 1.0, folder: str = "{workdir}/.ptysup/worktrees/{id}"
) -> dict[str, Any]:
    """The agent of task `task_id` writes <id>.txt (in its worktree) through the Write tool."""
    return {
        "name": task_id,
        "match": f"task {task_id}",
        "steps": [
            {
                "tool": "Write",
                "input": {
                    "file_path": f"{folder.replace('{id}', task_id)}/{task_id}.txt",
                    "content": f"work of {task_id}\n",
                },
                "delay": delay,  # runs overlap for a while, so the limit is what holds them
            },
            {"text": f"Wrote {task_id}.txt."},
        ],
    }


def _repo(project: Path) -> str:
    """The project as a git repository with one commit; its HEAD."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=project, check=True)
    (project / "README.md").write_text("base\n")
    subprocess.run([*git, "add", "-A"], cwd=project, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "base"], cwd=project, check=True)
    return _git(project, "rev-parse", "HEAD").strip()


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout


def _tasks_file(project: Path, ids: list[str]) -> Path:
    lines = [f"agent-cmd: {AGENT}", "max-iter: 3", "max-time: 4m", "tasks:"]
    for task_id in ids:
        lines += [f"  - id: {task_id}", f"    task: write the file of task {task_id}"]
    path = project / "TASKS.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _batch(r: Rig, *args: str) -> subprocess.CompletedProcess[str]:
    return r.ptysup("batch", *args, timeout=400)


def _most_at_once(runs: list[Path]) -> int:
    """The most runs alive at the same moment, from each run's run_start and run_end."""
    edges = []
    for run_dir in runs:
        events = read_events(run_dir / "events.jsonl")
        edges += [(events[0]["ts"], 1), (events[-1]["ts"], -1)]
        assert events[0]["event"] == "run_start" and events[-1]["event"] == "run_end"
    alive = most = 0
    for _, step in sorted(edges, key=lambda e: (e[0], e[1])):  # an end before a start
        alive += step
        most = max(most, alive)
    return most


def test_three_tasks_two_at_a_time_each_committed_on_its_own_branch(
    rig: Callable[..., Rig],
) -> None:
    ids = ["alpha", "beta", "gamma"]
    r = rig(
        {
            "agent": [_writes_its_file(i) for i in ids],
            "supervisor": [{"reply": "[COMPLETE] the file is written"}],
        }
    )
    base = _repo(r.project)
    tasks = _tasks_file(r.project, ids)
    # Not committed, so not in the worktrees: the runs still get the batch's config file.
    (r.project / ".ptysup.yaml").write_text("max-cost: 5\n")
    done = _batch(r, str(tasks), "--jobs", "2", "--summary-json", "summary.json")
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads((r.project / "summary.json").read_text())
    assert summary["exit_code"] == 0 and summary["base"] == base and summary["jobs"] == 2
    assert [t["id"] for t in summary["tasks"]] == ids
    for task in summary["tasks"]:
        task_id = task["id"]
        assert (task["outcome"], task["exit_code"]) == ("complete", 0)
        assert task["branch"] == f"ptysup/{task_id}"
        # The work is on the branch, in one commit naming the task and the run, on the base.
        assert _git(r.project, "show", f"ptysup/{task_id}:{task_id}.txt") == f"work of {task_id}\n"
        assert _git(r.project, "rev-parse", f"ptysup/{task_id}~1").strip() == base
        message = _git(r.project, "log", "-1", "--format=%B", f"ptysup/{task_id}")
        assert task_id in message and task["run_id"] in message
        changed = _git(r.project, "diff", "--name-only", f"{base}..ptysup/{task_id}").split()
        assert changed == [f"{task_id}.txt"]  # nothing of .ptysup/, nothing of the others
        assert task["diff_stat"] == "1 file changed, 1 insertion(+)"
        assert task["run_id"] in done.stdout and f"ptysup/{task_id}" in done.stdout
        run_dir = r.project / ".ptysup" / "runs" / task["run_id"]
        assert Path(task["run_dir"]) == run_dir and (run_dir / "output.log").is_file()
        start = read_events(run_dir / "events.jsonl")[0]
        assert start["cwd"] == str(r.project / ".ptysup" / "worktrees" / task_id)
        assert (start["max_iter"], start["max_cost_usd"]) == (3, 5)
    # Never merged: the invoking checkout is untouched, still on its base.
    assert _git(r.project, "rev-parse", "HEAD").strip() == base
    assert not (r.project / "alpha.txt").exists()
    assert (
        _git(r.project, "status", "--porcelain")
        == "?? .ptysup.yaml\n?? TASKS.yaml\n?? summary.json\n"
    )
    runs = [r.project / ".ptysup" / "runs" / t["run_id"] for t in summary["tasks"]]
    assert _most_at_once(runs) == 2
    # The worktrees are unlocked once their runs end, and prune removes them (branches stay).
    listing = _git(r.project, "worktree", "list", "--porcelain")
    assert listing.count("worktree ") == 4 and "locked" not in listing
    out = r.ptysup("runs", "prune").stdout
    assert out.count("removed") == 3, out
    assert _git(r.project, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert set(_git(r.project, "branch", "--format=%(refname:short)").split()) >= {
        f"ptysup/{i}" for i in ids
    }


def test_a_task_that_does_not_complete_fails_the_batch_and_keeps_its_work_uncommitted(
    rig: Callable[..., Rig],
) -> None:
    ids = ["good", "bad"]
    r = rig(
        {
            "agent": [_writes_its_file(i, delay=0) for i in ids],
            "supervisor": [
                {"match": "task bad", "reply": "[ABORT] this cannot be done"},
                {"reply": "[COMPLETE] written"},
            ],
        }
    )
    base = _repo(r.project)
    step_summary = r.project.parent / "step-summary.md"
    r.env.update(GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(step_summary))
    done = _batch(r, str(_tasks_file(r.project, ids)), "--summary-json", "s.json")
    assert done.returncode == 1, done.stdout + done.stderr
    # GitHub's step summary: one table for the batch, not one section per run.
    markdown = step_summary.read_text()
    assert markdown.startswith("### ptysup batch: 1/2 complete ❌\n"), markdown
    assert "| good | complete | 0 | ptysup/good | 1 file changed, 1 insertion(+) |" in markdown
    assert "| bad | abort | 1 | ptysup/bad | 1 file(s) not committed |" in markdown
    assert "### ptysup: " not in markdown
    by_id = {t["id"]: t for t in json.loads((r.project / "s.json").read_text())["tasks"]}
    assert (by_id["good"]["outcome"], by_id["good"]["exit_code"]) == ("complete", 0)
    assert (by_id["bad"]["outcome"], by_id["bad"]["exit_code"]) == ("abort", 1)
    assert by_id["bad"]["commit"] is None and by_id["bad"]["uncommitted"] == 1
    assert _git(r.project, "rev-parse", "ptysup/bad").strip() == base  # nothing committed
    bad_tree = r.project / ".ptysup" / "worktrees" / "bad"
    assert (bad_tree / "bad.txt").read_text() == "work of bad\n"  # the work is still there
    # Prune removes the finished clean worktree and keeps the one with uncommitted work.
    report = _prune(r.project)
    assert "removed  .ptysup/worktrees/good" in report
    assert "kept     .ptysup/worktrees/bad: 1 uncommitted change(s)" in report
    assert bad_tree.is_dir() and not (r.project / ".ptysup" / "worktrees" / "good").exists()


def _prune(project: Path) -> str:
    import io

    out = io.StringIO()
    assert prune.prune(project, out) == 0
    return out.getvalue()


def test_sigterm_stops_every_run_and_still_prints_the_summary(rig: Callable[..., Rig]) -> None:
    ids = ["slow1", "slow2", "later"]
    r = rig(
        {
            "agent": [_writes_its_file(i, delay=120) for i in ids],
            "supervisor": [{"reply": "[COMPLETE] written"}],
        }
    )
    _repo(r.project)
    proc = r.start("batch", str(_tasks_file(r.project, ids)), "--jobs", "2")
    runs = r.project / ".ptysup" / "runs"

    def both_typed() -> bool:
        logs = list(runs.glob("*/events.jsonl"))
        return len(logs) == 2 and all('"inject"' in p.read_text() for p in logs)

    try:
        wait_for(both_typed, 120, "both runs to get their task")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 143, out + err
    for log in runs.glob("*/events.jsonl"):
        end = read_events(log)[-1]
        assert (end["event"], end["outcome"], end["exit_code"]) == ("run_end", "signal", 143)
    assert "later" in out and "not_started" in out  # the summary, with the task never begun


def test_batch_run_index_runs_one_task_here_with_its_exit_code(rig: Callable[..., Rig]) -> None:
    ids = ["first", "second"]
    r = rig(
        {
            "agent": [_writes_its_file(i, delay=0, folder="{workdir}") for i in ids],
            "supervisor": [
                {"match": "task first", "reply": "[ABORT] not this one"},
                {"reply": "[COMPLETE] written"},
            ],
        }
    )
    tasks = str(_tasks_file(r.project, ids))
    done = r.ptysup("batch", "run", tasks, "--index", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (r.project / "second.txt").read_text() == "work of second\n"  # here, no worktree
    (run_dir,) = (r.project / ".ptysup" / "runs").iterdir()
    events = read_events(run_dir / "events.jsonl")
    assert events[0]["task"] == "write the file of task second" and events[0]["max_iter"] == 3
    assert "second" in done.stdout  # a normal headless run's log lines
    aborted = r.ptysup("batch", "run", tasks, "--id", "first")
    assert aborted.returncode == 1, aborted.stdout + aborted.stderr


def test_in_a_terminal_a_live_table_then_ctrl_c_stops_every_run_and_shows_the_summary(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    ids = ["north", "south"]
    r = rig(
        {
            "agent": [_writes_its_file(i, delay=120) for i in ids],
            "supervisor": [{"reply": "[COMPLETE] written"}],
        }
    )
    _repo(r.project)
    tasks = str(_tasks_file(r.project, ids))
    done = tmp_path / "done"
    tmux = Tmux("ptysup-batch")
    argv = ptysup_argv("batch", tasks, "--jobs", "2")
    tmux.start(terminal_script(tmp_path / "run.sh", r.project, r.env, argv, done))
    runs = r.project / ".ptysup" / "runs"
    try:

        def both_working() -> bool:
            logs = list(runs.glob("*/events.jsonl"))
            return len(logs) == 2 and all('"inject"' in p.read_text() for p in logs)

        wait_for(both_working, 120, "both runs to get their task")

        def shown_started() -> bool:  # whatever state names describe() gives, not these
            rows = [line for line in tmux.capture().splitlines() if "ptysup/" in line]
            return len(rows) == 2 and not any(w in r for r in rows for w in ("queued", "starting"))

        wait_for(shown_started, 30, "the live table to show both runs started")
        live = tmux.capture()
        tmux.send_keys("C-c")
        wait_for(done.exists, 120, "the batch to end")
        after = tmux.capture()
    finally:
        tmux.kill()
    assert "ptysup batch" in live and all(i in live for i in ids), live
    assert "ptysup/north" in live and "ptysup/south" in live  # the branch column
    assert done.read_text().startswith("exit=130"), after
    for log in runs.glob("*/events.jsonl"):
        end = read_events(log)[-1]
        assert (end["event"], end["outcome"], end["exit_code"]) == ("run_end", "signal", 130)
    summary_rows = [line for line in after.splitlines() if line.startswith(("north ", "south "))]
    assert len(summary_rows) == 2 and all(" signal " in row for row in summary_rows), after


def test_on_complete_pr_pushes_the_branch_and_opens_a_pull_request_with_gh(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig(
        {
            "agent": [_writes_its_file("feature", delay=0)],
            "supervisor": [{"reply": "[COMPLETE] written"}],
        }
    )
    base = _repo(r.project)
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    _git(r.project, "remote", "add", "origin", str(origin))
    current = _git(r.project, "rev-parse", "--abbrev-ref", "HEAD").strip()
    # A stand-in for the GitHub CLI: records its arguments, prints a pull request's URL.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "gh-calls.json"
    bodies = tmp_path / "gh-bodies"
    gh = bin_dir / "gh"
    gh.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        f"open({str(calls)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
        "if sys.argv[1:3] == ['pr', 'create']:\n"
        f"    open({str(bodies)!r}, 'a').write(sys.stdin.read() + '\\0')\n"
        "print('https://github.example/o/r/pull/7')\n"
    )
    gh.chmod(0o755)
    r.env["PATH"] = f"{bin_dir}:{r.env['PATH']}"
    tasks = str(_tasks_file(r.project, ["feature"]))
    check = ("--verify", "test -s feature.txt")  # a check ptysup runs, named in the body
    done = r.ptysup(
        "batch", tasks, "--on-complete", "pr", *check, "--summary-json", "s.json", timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (task,) = json.loads((r.project / "s.json").read_text())["tasks"]
    assert task["pr_url"] == "https://github.example/o/r/pull/7"
    assert "pull request https://github.example/o/r/pull/7" in done.stdout
    pushed = _git(origin, "rev-parse", "ptysup/feature").strip()
    assert pushed == task["commit"] and _git(origin, "rev-parse", f"{pushed}~1").strip() == base
    # (Claude Code itself runs `gh pr view` for its status: only ptysup creates.)
    calls_made = [json.loads(line) for line in calls.read_text().splitlines()]
    (args,) = [a for a in calls_made if a[:2] == ["pr", "create"]]
    assert args[args.index("--head") + 1] == "ptysup/feature"
    assert args[args.index("--base") + 1] == current
    assert args[args.index("--title") + 1] == "feature: write the file of task feature"
    assert args[args.index("--body-file") + 1] == "-"
    # The body (gh reads it on stdin): the task, the supervisor's reason, ptysup's own check.
    (body,) = [b for b in bodies.read_text().split("\0") if b]
    assert "> write the file of task feature" in body, body
    assert "**Done, says the supervisor:** written" in body, body
    assert "- ✅ `test -s feature.txt` (exit 0" in body, body
    assert f"Run `{task['run_id']}`: 1 iteration(s)" in body and "feature.txt" in body, body


def _run_id_of(project: Path, task_id: str) -> str:
    """The run of `task_id` as the batch's state file says (its run ids are minted as
    each task starts)."""
    found = list((project / ".ptysup" / "runs" / "batches").glob("*/state.json"))
    if not found:  # the batch has not started yet
        return ""
    tasks = json.loads(found[0].read_text())["tasks"]
    return next(t["run_id"] for t in tasks if t["id"] == task_id) or ""


def _started(project: Path, task_id: str) -> bool:
    run_id = _run_id_of(project, task_id)
    log = project / ".ptysup" / "runs" / run_id / "events.jsonl"
    return bool(run_id) and log.is_file() and '"inject"' in log.read_text()


def test_a_batch_killed_with_sigkill_is_finished_by_running_it_again(
    rig: Callable[..., Rig],
) -> None:
    # done: completes before the kill. orphan: still working when the batch dies, goes on
    # alone and is waited for. cut: killed with it (a reboot), resumed. queued: never began.
    r = rig(
        {
            "agent": [
                _writes_its_file("done", delay=0),
                _writes_its_file("orphan", delay=40),
                {**_writes_its_file("cut", delay=300), "times": 1},
                _writes_its_file("cut", delay=0),  # the resumed agent asks again
                _writes_its_file("queued", delay=0),
            ],
            "supervisor": [{"reply": "[COMPLETE] written"}],
        }
    )
    base = _repo(r.project)
    tasks = _tasks_file(r.project, ["done", "orphan", "cut", "queued"])
    proc = r.start("batch", str(tasks), "--jobs", "2")
    runs = r.project / ".ptysup" / "runs"
    try:
        wait_for(lambda: _started(r.project, "cut"), 180, "the third task to get its task")
        first = {i: _run_id_of(r.project, i) for i in ("done", "orphan", "cut")}
        done_commit = _git(r.project, "rev-parse", "ptysup/done").strip()
        assert done_commit != base  # committed before the kill
        again = _batch(r, str(tasks))  # while the batch lives: refused, nothing touched
        assert again.returncode == 2 and "is already running" in again.stderr, again.stderr
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        proc.kill()
    # The cut task's run dies too (as in a reboot); the orphan's lives on without its batch.
    cut_pid = int((runs / first["cut"] / "lock").read_text())
    os.killpg(cut_pid, signal.SIGKILL)
    orphan_pid = int((runs / first["orphan"] / "lock").read_text())
    os.kill(orphan_pid, 0)  # alive
    assert "locked" in _git(r.project, "worktree", "list", "--porcelain")

    done = _batch(r, str(tasks), "--jobs", "2", "--summary-json", "s.json")
    assert done.returncode == 0, done.stdout + done.stderr
    by_id = {t["id"]: t for t in json.loads((r.project / "s.json").read_text())["tasks"]}
    assert all((t["outcome"], t["exit_code"]) == ("complete", 0) for t in by_id.values())
    # Completed before the kill: kept, not run again.
    assert by_id["done"]["run_id"] == first["done"]
    assert _git(r.project, "rev-parse", "ptysup/done").strip() == done_commit
    assert [e["event"] for e in read_events(runs / first["done"] / "events.jsonl")].count(
        "run_start"
    ) == 1
    # The orphan was waited for (one part, never resumed) and its work committed.
    assert by_id["orphan"]["run_id"] == first["orphan"]
    orphan_events = [e["event"] for e in read_events(runs / first["orphan"] / "events.jsonl")]
    assert "run_resume" not in orphan_events and orphan_events[-1] == "run_end"
    assert "orphan" in done.stdout  # its line while it was waited for
    assert _git(r.project, "show", "ptysup/orphan:orphan.txt") == "work of orphan\n"
    # The cut run was resumed: the same run, a second part, its conversation reopened.
    assert by_id["cut"]["run_id"] == first["cut"]
    cut_events = read_events(runs / first["cut"] / "events.jsonl")
    resumes = [e for e in cut_events if e["event"] == "run_resume"]
    assert len(resumes) == 1 and cut_events[-1]["outcome"] == "complete"
    # The queued task started now, in a run minted as it started.
    assert by_id["queued"]["run_id"] not in first.values()
    assert _git(r.project, "show", "ptysup/queued:queued.txt") == "work of queued\n"
    assert "locked" not in _git(r.project, "worktree", "list", "--porcelain")


def _batch_state(project: Path) -> dict[str, dict[str, Any]]:
    """The batch's state file, task by task."""
    (path,) = (project / ".ptysup" / "runs" / "batches").glob("*/state.json")
    return {t["id"]: t for t in json.loads(path.read_text())["tasks"]}


def test_tasks_whose_process_was_killed_mid_run_are_said_so_and_resumed_by_a_rerun(
    rig: Callable[..., Rig],
) -> None:
    # cut1, cut2: their ptysup is SIGKILLed once their task is typed (the OOM killer, a
    # kill -9), with no run_end; the batch goes on to later, which completes.
    ids = ["cut1", "cut2", "later"]
    trees = "{workdir}/.ptysup/worktrees"
    r = rig(
        {
            "agent": [
                *({**_writes_its_file(i, delay=300), "times": 1} for i in ("cut1", "cut2")),
                *(_writes_its_file(i, delay=0) for i in ids),  # the resumed agents ask again
            ],
            "supervisor": [
                *(
                    {
                        "match": f"task {i}",
                        "when": {"file_exists": f"{trees}/{i}/{i}.txt"},
                        "reply": "[COMPLETE] written",
                    }
                    for i in ids
                ),
                *({"match": f"task {i}", "reply": f"[CONTINUE] task {i}"} for i in ids),
            ],
        }
    )
    _repo(r.project)
    tasks = str(_tasks_file(r.project, ids))
    proc = r.start("batch", tasks, "--jobs", "2")
    runs = r.project / ".ptysup" / "runs"

    def saved(task_id: str) -> bool:  # Claude Code's conversation holds the task
        transcripts = Path(r.env["CLAUDE_CONFIG_DIR"], "projects").glob("*/*.jsonl")
        return any(f"task {task_id}" in p.read_text(errors="replace") for p in transcripts)

    try:
        wait_for(lambda: saved("cut1") and saved("cut2"), 180, "both tasks' conversations")
        first = {i: _run_id_of(r.project, i) for i in ("cut1", "cut2")}
        for run_id in first.values():
            os.killpg(int((runs / run_id / "lock").read_text()), signal.SIGKILL)
        out, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 1, out + err
    said = _batch_state(r.project)
    for task_id in ("cut1", "cut2"):
        assert (said[task_id]["outcome"], said[task_id]["exit_code"]) == ("killed", 137)
        assert said[task_id]["error"] == (
            "killed by SIGKILL before its run ended: running the batch again goes on with it"
        )
        assert f"{task_id}: killed by SIGKILL before its run ended" in out
    assert said["later"]["outcome"] == "complete"

    done = _batch(r, tasks, "--summary-json", "s.json")
    assert done.returncode == 0, done.stdout + done.stderr
    by_id = {t["id"]: t for t in json.loads((r.project / "s.json").read_text())["tasks"]}
    assert all((t["outcome"], t["exit_code"]) == ("complete", 0) for t in by_id.values())
    for task_id, run_id in first.items():  # the same run, gone on with
        assert by_id[task_id]["run_id"] == run_id
        names = [e["event"] for e in read_events(runs / run_id / "events.jsonl")]
        assert names.count("run_resume") == 1 and names[-1] == "run_end"
        assert _git(r.project, "show", f"ptysup/{task_id}:{task_id}.txt") == f"work of {task_id}\n"


# Holds a batch's child in its interpreter's start-up, before ptysup's code (and its signal
# handlers) runs, until it is killed: the window a SIGTERM to a batch that just started
# its tasks meets. The batch itself (not `batch run`) starts as usual.
HOLD = """\
import os, pathlib
argv = pathlib.Path("/proc/self/cmdline").read_bytes().split(b"\\0")
if b"run" in argv and b"--run-id" in argv:
    held = pathlib.Path(os.environ["HELD_DIR"])
    (held / str(os.getpid())).touch()
    open(held / "never", "rb")  # a FIFO nobody opens for writing: blocks for good
"""


def test_a_sigterm_before_the_tasks_runs_began_leaves_every_task_to_a_rerun(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    ids = ["t1", "t2", "t3", "t4"]
    r = rig(
        {
            "agent": [_writes_its_file(i, delay=0) for i in ids],
            "supervisor": [{"reply": "[COMPLETE] written"}],
        }
    )
    _repo(r.project)
    tasks = str(_tasks_file(r.project, ids))
    held, hook = tmp_path / "held", tmp_path / "hook"
    held.mkdir()
    hook.mkdir()
    os.mkfifo(held / "never")
    (hook / "sitecustomize.py").write_text(HOLD)
    proc = subprocess.Popen(
        ptysup_argv("batch", tasks, "--jobs", "2"),
        cwd=r.project,
        env={**r.env, "PYTHONPATH": str(hook), "HELD_DIR": str(held)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: len(list(held.iterdir())) == 3, 120, "two children in start-up")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 143, out + err
    said = _batch_state(r.project)
    killed = [i for i in ids if said[i]["outcome"] == "killed"]
    assert len(killed) == 2 and all(said[i]["exit_code"] == 143 for i in killed)
    for task_id in killed:
        assert said[task_id]["error"] == (
            "killed by SIGTERM before its run began: running the batch again goes on with it"
        )
    assert [said[i]["outcome"] for i in ids if i not in killed] == ["not_started"] * 2
    assert "exit -15" not in out + json.dumps(said)

    done = _batch(r, tasks, "--jobs", "2", "--summary-json", "s.json")
    assert done.returncode == 0, done.stdout + done.stderr
    by_id = {t["id"]: t for t in json.loads((r.project / "s.json").read_text())["tasks"]}
    assert all((t["outcome"], t["exit_code"]) == ("complete", 0) for t in by_id.values())
    for task_id in ids:
        assert _git(r.project, "show", f"ptysup/{task_id}:{task_id}.txt") == f"work of {task_id}\n"
