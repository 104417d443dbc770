"""`ptysup runs`: the recent runs of this directory, for people or (`--json`) scripts."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from ptysup.argspec import ArgSpec
from ptysup.batch import prune, state
from ptysup.store.listing import describe
from ptysup.store.rundir import RUNS_DIR, RunNotFound, run_dirs
from ptysup.views.table import render, render_batches

USAGE = (
    "usage: ptysup runs [--json] [--watch] [-n N]   (the newest N runs of this directory, "
    "default 20; --watch: live until Ctrl-C)\n"
    "       ptysup runs prune [--dry-run]  (remove finished batch worktrees, keep branches)"
)
ARGS = ArgSpec(
    flags=("--json", "--watch"),
    options={"-n": "text", "--count": "text"},
    subcommands={"prune": prune.ARGS},
)
DEFAULT_COUNT = 20


def main(args: Sequence[str], out: TextIO | None = None, runs_dir: Path = RUNS_DIR) -> int:
    """Entry point of `ptysup runs` (OUT: standard output, as it is when called)."""
    out = out or sys.stdout
    if args[:1] == ["prune"]:
        return prune.main(args[1:], out)
    as_json = watch = False
    count = DEFAULT_COUNT
    it = iter(args)
    for arg in it:
        if arg in ("-h", "--help"):
            print(USAGE, file=out)
            return 0
        if arg == "--json":
            as_json = True
        elif arg == "--watch":
            watch = True
        elif arg in ("-n", "--count") or arg.startswith(("-n", "--count=")):
            attached = arg.removeprefix("--count=") if arg.startswith("--count=") else arg[2:]
            value = next(it, "") if arg in ("-n", "--count") else attached
            if not value.isdigit() or int(value) < 1:
                print(f"ptysup: {arg} needs a positive number", file=sys.stderr)
                return 2
            count = int(value)
        else:
            print(
                f"ptysup: runs: unknown argument {arg!r} (ptysup runs --help says what it takes)",
                file=sys.stderr,
            )
            return 2
    if watch:
        from ptysup.views import runswatch  # it imports this module

        return runswatch.watch(runs_dir, count, out, as_json)
    try:
        rows = [describe(r) for r in reversed(run_dirs(runs_dir)[-count:])]
    except RunNotFound as exc:
        print(f"ptysup: runs: {exc}", file=sys.stderr)
        return 2
    batches = state.rows(runs_dir)
    if as_json:  # runs as they were (a list); a batch's row is marked by its "batch" key
        out.write(json.dumps([*batches, *rows], indent=2, ensure_ascii=False) + "\n")
    else:
        width = terminal_width(out)  # in a terminal, no line wraps
        render_batches(batches, out, width)
        render(rows, out, width=width)
    return 0


def terminal_width(out: TextIO) -> int | None:
    """The columns of the terminal OUT is, or None when it is none (a pipe, a file)."""
    try:
        return os.get_terminal_size(out.fileno()).columns if out.isatty() else None
    except (OSError, ValueError, AttributeError):
        return None
