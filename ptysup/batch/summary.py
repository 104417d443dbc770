"""The end of a batch: its exit code, a table for people, --summary-json, GitHub's step
summary."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ptysup.batch.result import TaskResult
from ptysup.exitcodes import ExitCode
from ptysup.run.report import in_github_actions

# The batch's exit status: 0 only when every task completed (and its work was committed).
SOME_FAILED = 1


def exit_code(results: Sequence[TaskResult], signum: int | None) -> int:
    """0 all complete, 128+N stopped by signal N, else 1 (a task did not complete)."""
    if signum is not None:
        return ExitCode.for_signal(signum)
    if all(r.completed and r.error is None for r in results):
        return int(ExitCode.COMPLETE)
    return SOME_FAILED


def task_json(r: TaskResult) -> dict[str, Any]:
    """One task's line of the summary."""
    return {
        "id": r.id,
        "outcome": r.outcome,
        "exit_code": r.exit_code,
        "branch": r.branch,
        "commit": r.commit,
        "diff_stat": r.diff_stat,
        "worktree": str(r.worktree) if r.worktree is not None else None,
        "run_id": r.run_id or None,  # a task never started has no run
        "run_dir": str(r.run_dir) if r.run_id else None,
        "iterations": r.extra.get("iterations"),
        "elapsed_s": r.extra.get("elapsed_s"),
        "cost_usd": r.extra.get("cost_usd"),
        "uncommitted": r.uncommitted,
        "error": r.error,
        "pr_url": r.pr_url,
    }


def to_json(
    results: Sequence[TaskResult], *, code: int, base: str | None, jobs: int
) -> dict[str, Any]:
    """The whole batch as --summary-json writes it."""
    return {
        "exit_code": code,
        "base": base,
        "jobs": jobs,
        "complete": sum(1 for r in results if r.completed),
        "tasks": [task_json(r) for r in results],
        "cost_usd": round(sum(float(r.extra.get("cost_usd") or 0) for r in results), 6),
    }


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Write --summary-json."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


_HEAD = ("TASK", "OUTCOME", "EXIT", "BRANCH", "CHANGES", "RUN", "COST")


def _cells(r: TaskResult) -> tuple[str, ...]:
    cost = r.extra.get("cost_usd")
    return (
        r.id,
        r.outcome or r.state,
        "-" if r.exit_code is None else str(r.exit_code),
        r.branch or "-",
        _changes(r),
        r.run_id or "-",
        "-" if cost is None else f"${float(cost):.4f}",
    )


def _changes(r: TaskResult) -> str:
    if r.branch is None:
        return "-"
    if r.completed:
        return r.diff_stat or "no changes"
    return f"{r.uncommitted} file(s) not committed" if r.uncommitted else "-"


def table(results: Sequence[TaskResult]) -> str:
    """The final table, aligned, then each task's problem on its own line."""
    rows = [_HEAD, *(_cells(r) for r in results)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_HEAD))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    lines += [f"{r.id}: {r.error}" for r in results if r.error]
    lines += [f"{r.id}: pull request {r.pr_url}" for r in results if r.pr_url]
    return "\n".join(lines) + "\n"


def markdown(results: Sequence[TaskResult], code: int, base: str | None) -> str:
    """The batch as GitHub-flavoured markdown for $GITHUB_STEP_SUMMARY."""
    done = sum(1 for r in results if r.completed)
    lines = [
        f"### ptysup batch: {done}/{len(results)} complete {'✅' if code == 0 else '❌'}",
        "",
        *(
            [f"Base commit `{base}`; each task's work is on its branch, not merged.", ""]
            if base
            else []
        ),
        "| task | outcome | exit | branch | changes | run | cost |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        cells = [c.replace("|", "\\|") for c in _cells(r)]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [f"\n**{r.id}:** {' '.join(r.error.split())}" for r in results if r.error]
    return "\n".join(lines) + "\n"


def append_step_summary(text: str, env: Mapping[str, str]) -> None:
    """Append to $GITHUB_STEP_SUMMARY when running in GitHub Actions."""
    path = env.get("GITHUB_STEP_SUMMARY")
    if in_github_actions(env) and path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)
