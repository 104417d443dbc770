"""The shell-free half of the GitHub Action, the reusable workflow and the Kubernetes Job.

`python -m ptysup.engines.ci claude-config` prepares Claude Code for an unattended run,
`collect` copies a finished run's directory where upload-artifact can see it and writes the
step's outputs, `table` turns the collected runs into the batch's job summary. Values come
from the environment and files, never from a workflow expression, so nothing a task says
can become shell code.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from ptysup.agents.release import Setup
from ptysup.attach.server import RECORD as ATTACH
from ptysup.batch.worktrees import EXCLUDE
from ptysup.cli import gitauth
from ptysup.redact import redact_strings
from ptysup.run.report import _cell
from ptysup.store import readback
from ptysup.store.listing import describe
from ptysup.store.rundir import LOCK_FILE, RUN_FILE, RUNS_DIR, RunDir
from ptysup.testing.kit import offline_home

SUMMARY_FILE = "summary.json"  # the run's --summary-json, copied next to its events
PATCH_FILE = "changes.patch"  # what the run changed in its git work tree, for `git apply`


def claude_config(config_dir: Path, project: Path, env: Mapping[str, str]) -> None:
    """Onboarding done, PROJECT trusted, $ANTHROPIC_API_KEY approved: no first-run screen."""
    setup = Setup("", (project,), api_key=env.get("ANTHROPIC_API_KEY", ""))
    offline_home("claude").fill(config_dir, setup, env, None)  # its environment is not used


def new_runs(workdir: Path, before: set[str]) -> list[Path]:
    """Run directories under WORKDIR that were not there before, oldest first."""
    runs = workdir / RUNS_DIR
    found = (
        [p for p in runs.iterdir() if p.is_dir() and p.name not in before] if runs.is_dir() else []
    )
    return sorted(found, key=lambda p: p.name)


def _redact_record(run: RunDir, copy: Path) -> None:
    """run.json keeps the task as given (a resumed run may type it again); the copy that
    leaves the machine is redacted like the event log."""
    try:
        data = readback.read_json(copy)
    except (OSError, ValueError):
        return
    clean = redact_strings(data, run.redactor())
    copy.write_text(json.dumps(clean, indent=2, ensure_ascii=False) + "\n", "utf-8")


def collect(
    workdir: Path,
    summary_path: Path,
    before: set[str],
    dest: Path,
    env: Mapping[str, str],
    batch_id: str = "",
) -> dict[str, str]:
    """Copy the run's directory to DEST/<run id> and return the step's outputs."""
    summary = _read_json(summary_path)
    run_id = str(summary.get("run_id") or "")
    run_dir = workdir / RUNS_DIR / run_id if run_id else None
    if run_dir is None or not run_dir.is_dir():
        # No summary: the run was killed before it could write one (or never started).
        fresh = new_runs(workdir, before)
        run_dir = fresh[-1] if fresh else None
    if run_dir is None:
        return {"outcome": str(summary.get("outcome") or ""), "exit-code": "", "run-id": ""}
    row = describe(RunDir(run_dir))
    target = dest / run_dir.name
    # The lock file means nothing once the run has left this machine.
    shutil.copytree(
        run_dir, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns(LOCK_FILE, ATTACH)
    )
    _redact_record(RunDir(run_dir), target / RUN_FILE)
    if not summary:  # what the event log says stands in for the missing summary
        summary = {k: row.get(k) for k in ("run_id", "task", "outcome", "iterations", "cost_usd")}
    if batch_id:
        summary["batch_id"] = batch_id
    patch = work_diff(workdir)
    if patch:
        (target / PATCH_FILE).write_bytes(patch)
    (target / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    exit_code = summary.get("exit_code")
    return {
        "outcome": str(summary.get("outcome") or row["state"] or ""),
        "exit-code": "" if exit_code is None else str(exit_code),
        "run-id": run_dir.name,
        "cost-usd": str(summary.get("cost_usd") if summary.get("cost_usd") is not None else ""),
        "run-dir": str(target),
        # Unique across a matrix (the run id) and across re-runs of one job (the attempt).
        "artifact-name": "-".join(
            [
                "ptysup",
                run_dir.name,
                env.get("GITHUB_JOB", "job"),
                env.get("GITHUB_RUN_ATTEMPT", "1"),
            ]
        ),
    }


def work_diff(workdir: Path) -> bytes:
    """WORKDIR's changes against HEAD, new files included, as a binary patch ('' outside git).

    A `batch run` or a task works in the job's checkout itself, and the runner's disk goes
    away with the job: the patch in the artifact is how the work comes back. A private
    index keeps the checkout's own index untouched; ptysup's own folder and the agents'
    own files (their chat histories) are left out.
    """
    git = shutil.which("git")
    if git is None:
        return b""
    with tempfile.TemporaryDirectory(prefix="ptysup-index-") as tmp:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        steps = (
            ["read-tree", "HEAD"],
            ["add", "--all", "--", ":(top)", *EXCLUDE],
            ["diff", "--cached", "--binary", "HEAD"],
        )
        out = b""
        for argv in steps:
            done = subprocess.run(
                [git, "-C", str(workdir), *argv], env=env, capture_output=True, timeout=120
            )
            if done.returncode != 0:
                return b""
            out = done.stdout
        return out


def write_outputs(path: Path, outputs: Mapping[str, str]) -> None:
    """Append OUTPUTS to $GITHUB_OUTPUT, each in a heredoc no value can close early."""
    with path.open("a", encoding="utf-8") as f:
        for name, value in outputs.items():
            delimiter = f"ptysup_{uuid.uuid4().hex}"
            f.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")


def table(root: Path, expected: Sequence[str] = ()) -> str:
    """The collected runs under ROOT (any depth) as one markdown table.

    A task of EXPECTED (the matrix's ids) with no run uploaded gets a row of its own, so a
    job that died before its run is not missing from the table.
    """
    summaries = [_read_json(p) for p in sorted(root.rglob(SUMMARY_FILE))] if root.is_dir() else []
    seen = {str(s.get("batch_id")) for s in summaries}
    summaries += [{"batch_id": i, "outcome": "no run"} for i in expected if i not in seen]
    rows = []
    for s in summaries:
        ok = s.get("exit_code") == 0
        rows.append(
            f"| {_cell(s.get('batch_id') or '-')} | {_cell(s.get('outcome') or 'unknown')} "
            f"{'✅' if ok else '❌'} | {'' if s.get('exit_code') is None else s['exit_code']} "
            f"| {s.get('iterations') or 0} "
            f"| ${s.get('cost_usd') or 0:.4f} | {_cell(s.get('run_id'))} |"
        )
    head = ["### ptysup batch", ""]
    if not rows:
        return "\n".join([*head, "No run directory was uploaded."]) + "\n"
    grid = ["| task | outcome | exit code | iterations | cost | run |", "|---|---|---|---|---|---|"]
    return "\n".join([*head, *grid, *rows]) + "\n"


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = readback.read_json(path)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def main(
    argv: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
    out: TextIO = sys.stdout,
    stdin: TextIO | None = None,
) -> int:
    """The subcommands the Action, the workflow and the Job call."""
    env = os.environ if env is None else env
    parser = argparse.ArgumentParser(prog="python -m ptysup.engines.ci")
    sub = parser.add_subparsers(dest="command", required=True)
    cc = sub.add_parser("claude-config", help="prepare Claude Code for an unattended run")
    cc.add_argument("--config-dir", type=Path, default=None)
    cc.add_argument("--project", type=Path, default=Path.cwd())
    co = sub.add_parser("collect", help="copy the run directory and write the outputs")
    co.add_argument("--workdir", type=Path, default=Path.cwd())
    co.add_argument("--summary", type=Path, required=True)
    co.add_argument("--before", type=Path, required=True, help="run ids present before")
    co.add_argument("--dest", type=Path, required=True)
    co.add_argument("--batch-id", default="")
    gc = sub.add_parser(
        "git-credential", help="git's credential helper: $PTYSUP_GIT_TOKEN for $PTYSUP_REPOSITORY"
    )
    gc.add_argument("operation", nargs="?", default="get")
    ta = sub.add_parser("table", help="the collected runs as a markdown table")
    ta.add_argument("root", type=Path)
    ta.add_argument("--matrix", default="", help="the plan's github-matrix JSON")
    args = parser.parse_args(argv)
    if args.command == "claude-config":
        config_dir = args.config_dir or Path(env.get("CLAUDE_CONFIG_DIR") or "")
        if not str(config_dir) or str(config_dir) == ".":
            print("ptysup: claude-config needs --config-dir or $CLAUDE_CONFIG_DIR", file=sys.stderr)
            return 2
        claude_config(config_dir, args.project.resolve(), env)
        return 0
    if args.command == "git-credential":
        return git_credential(args.operation, env, out, stdin or sys.stdin)
    if args.command == "table":
        include = json.loads(args.matrix).get("include", []) if args.matrix else []
        out.write(table(args.root, [str(row.get("id")) for row in include]))
        return 0
    before = set(_read_lines(args.before))
    outputs = collect(args.workdir.resolve(), args.summary, before, args.dest, env, args.batch_id)
    github_output = env.get("GITHUB_OUTPUT")
    if github_output:
        write_outputs(Path(github_output), outputs)
    for name, value in outputs.items():
        out.write(f"{name}={value}\n")
    return 0


def git_credential(operation: str, env: Mapping[str, str], out: TextIO, request: TextIO) -> int:
    """git's credential helper for ptysup's own push (given with `-c credential.helper`
    on that command line only): the token of a Secret, from $PTYSUP_GIT_TOKEN, for `get`
    of the one remote, $PTYSUP_REPOSITORY (protocol, host, path); nothing for any other
    host, never stored (`store`, `erase` do nothing). The token reaches git on a pipe,
    never a command line or a file."""
    if operation != "get":
        return 0
    answer = gitauth.credential(gitauth.parse_request(request.read()), env)
    out.write("".join(f"{key}={value}\n" for key, value in answer.items()))
    return 0


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").split()
    except OSError:
        return []


if __name__ == "__main__":
    sys.exit(main())
