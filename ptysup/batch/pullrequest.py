"""--on-complete pr: a completed task's branch pushed and a pull request opened with `gh`."""

from __future__ import annotations

import contextlib
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ptysup.batch.result import TaskResult
from ptysup.batch.scheduler import Finish
from ptysup.batch.schema import Task
from ptysup.batch.worktrees import GitError, Worktree, git
from ptysup.events import Event
from ptysup.run.report import RunSummary
from ptysup.store.rundir import read_events


def preflight(home: Path, env: Mapping[str, str]) -> str:
    """The branch pull requests go into; GitError before anything starts if `gh` is
    missing, there is no `origin`, or HEAD is not on a branch."""
    if shutil.which("gh", path=env.get("PATH")) is None:
        raise GitError("--on-complete pr needs the GitHub CLI `gh` on PATH (or use commit)")
    if not git(["remote", "get-url", "origin"], home, check=False).strip():
        raise GitError("--on-complete pr needs a remote named origin to push to")
    base = git(["rev-parse", "--abbrev-ref", "HEAD"], home).strip()
    if base == "HEAD":
        raise GitError("--on-complete pr needs HEAD on a branch (the pull requests' base)")
    return base


def opener(base: str, home: Path, env: Mapping[str, str]) -> Finish:
    """What the scheduler calls after committing a task: push, then `gh pr create`."""

    def open_pr(task: Task, result: TaskResult, tree: Worktree) -> None:
        if result.commit is None:
            return  # nothing changed: no pull request
        try:
            git(["push", "-u", "origin", tree.branch], tree.path)
        except GitError as exc:
            result.error = f"push failed: {exc}"
            return
        summary = _summary(result.run_dir)
        proc = subprocess.run(
            [
                "gh",
                "pr",
                "create",
                "--head",
                tree.branch,
                "--base",
                base,
                "--title",
                title(task, summary),
                "--body-file",
                "-",
            ],
            cwd=tree.path,
            env=dict(env),
            input=body(task, result, summary),
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            result.error = "gh pr create: " + " ".join((proc.stderr or proc.stdout).split())
        else:
            result.pr_url = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else None

    return open_pr


# GitHub refuses a body over 65,536 characters; the task and the checks' output are cut
# well before that.
_TASK_CHARS = 4000
_OUTPUT_LINES = 15


def _summary(run_dir: Path) -> dict[str, Any]:
    """The run's summary (task, reason, checks, cost) from its own event log, as
    --summary-json has it: the log's text is redacted as the run wrote it."""
    summary = RunSummary()
    with contextlib.suppress(OSError):
        for entry in read_events(run_dir / "events.jsonl"):
            name, ts = str(entry.get("event", "")), float(entry.get("ts") or 0)
            summary.write(
                Event(name, ts, {k: v for k, v in entry.items() if k not in ("event", "ts")})
            )
    return summary.to_dict()


def title(task: Task, summary: Mapping[str, Any]) -> str:
    """The pull request's title: the task's id and its first line, cut."""
    first = next(
        (line.strip() for line in str(summary.get("task") or "").splitlines() if line.strip()), ""
    )
    words = f"{task.id}: {first}" if first else task.id
    return words if len(words) <= 72 else words[:71] + "…"


def body(task: Task, result: TaskResult, summary: Mapping[str, Any]) -> str:
    """The pull request's body: what was asked, why the supervisor called it done, the
    checks ptysup ran and what they said, the run's figures and the diff's size."""
    text = str(summary.get("task") or task.task or "")
    if len(text) > _TASK_CHARS:
        text = text[:_TASK_CHARS] + "\n…"
    quoted = "\n".join(f"> {line}" if line else ">" for line in text.splitlines()) or "> (a plan)"
    lines = [f"Task `{task.id}` of a ptysup batch:", "", quoted, ""]
    if summary.get("reason"):
        lines += [f"**Done, says the supervisor:** {summary['reason']}", ""]
    lines += _checks(summary.get("verifications") or [])
    cost = float(summary.get("cost_usd") or 0)
    lines += [
        f"Run `{result.run_id}`: {summary.get('iterations')} iteration(s), "
        f"{float(summary.get('elapsed_s') or 0):.0f}s, ${cost:.4f}.",
    ]
    if result.diff_stat:
        lines += ["", "```", result.diff_stat.strip(), "```"]
    return "\n".join(lines) + "\n"


def _checks(verifications: list[dict[str, Any]]) -> list[str]:
    """The last result of each --verify command, with the tail of a failure's output."""
    if not verifications:
        return ["No `--verify` check was given: the supervisor's word alone says done.", ""]
    last: dict[str, dict[str, Any]] = {}
    for v in verifications:  # the event holds the command as its argv
        command = v.get("command")
        last[shlex.join(command) if isinstance(command, list) else str(command)] = v
    lines = ["**Checks ptysup ran** (the last time each ran):", ""]
    for command, v in last.items():
        mark = "✅" if v.get("passed") else "❌"
        code = "timed out" if v.get("exit_code") is None else f"exit {v.get('exit_code')}"
        lines.append(f"- {mark} `{command}` ({code}, {float(v.get('duration_s') or 0):.1f}s)")
        tail = str(v.get("output_tail") or "").strip().splitlines()[-_OUTPUT_LINES:]
        if tail and not v.get("passed"):
            lines += ["", "  ```", *(f"  {line}" for line in tail), "  ```"]
    return [*lines, ""]
