"""`ptysup runs`: the recent runs of this directory, for people or (`--json`) scripts."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from ptysup.argspec import ArgSpec
from ptysup.batch import prune
from ptysup.logread import skipped_note
from ptysup.store import runstate
from ptysup.store.rundir import RUNS_DIR, RunDir, RunNotFound, progress, run_dirs
from ptysup.supervisor.prompt import format_elapsed

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
WAITING = (runstate.NEEDS_INPUT, runstate.API_WAIT)  # states whose detail the table shows


def describe(run_dir: RunDir, clock: Callable[[], float] = time.time) -> dict[str, Any]:
    """One run as a JSON-able row: id, state, step, iterations, elapsed, cost, task. A
    live run's elapsed time is until now (`clock_from` says since when, to keep it
    ticking); an ended one's, until its end."""
    try:
        record = run_dir.read_record()
    except RunNotFound:  # a damaged run.json: the run still gets its row, from its events
        record = None
    events_file = Path(record.log_file) if record is not None else run_dir.default_events
    try:
        p = run_dir.read_progress(events_file) if events_file.is_file() else progress([])
    except RunNotFound:  # an unreadable log: the row says what it can
        p = progress([])
    pid = run_dir.holder()
    plan = record.plan if record is not None else None
    saved = runstate.read_state(run_dir.path / runstate.STATE_FILE)
    state = runstate.derive(saved, pid, p.outcome)
    current = saved if saved is not None and saved["state"] == state else None
    clock_from = p.clock_from if state in runstate.LIVE else None
    return {
        "run_id": run_dir.run_id,
        "state": state,
        "pid": pid,
        "outcome": p.outcome,
        "step": p.step,
        "step_index": p.step_index,
        "steps_of": p.steps_of,
        "steps_done": list(p.steps_done),
        "iterations": p.iterations,
        "max_iter": p.max_iter,
        "elapsed_s": round(elapsed(p.elapsed_s, clock_from, clock()), 3),
        "clock_from": clock_from,
        "cost_usd": round(p.cost_usd, 6),
        "task": p.task or (f"plan {plan}" if plan else ""),
        "parts": p.parts,
        "events": str(events_file),
        # Why the event log misses events (a write failed): iterations and cost are at least
        # what it shows.
        "log_incomplete": run_dir.incomplete(),
        # From state.json while it is current: when the state began, and what it waits on.
        "since": current.get("since") if current else None,
        "detail": str(current.get("detail") or "") if current else "",
        "unreadable_lines": p.unreadable,
    }


def render(rows: list[dict[str, Any]], out: TextIO, now: float | None = None) -> None:
    """The rows as an aligned table; with `now`, a live run's elapsed time up to it."""
    if not rows:
        out.write(f"no runs in {RUNS_DIR}/\n")
        return
    table = [("RUN", "STATE", "STEP", "ITER", "ELAPSED", "COST", "TASK")]
    for r in rows:
        step = f"{r['step_index']}/{r['steps_of']} {r['step']}" if r["step"] else "-"
        more = "+" if r.get("log_incomplete") else ""  # at least this much: the log is cut
        its = f"{r['iterations']}{more}" + (f"/{r['max_iter']}" if r["max_iter"] else "")
        task = " ".join(str(r["task"] or "").split())
        if r.get("detail") and r["state"] in WAITING:  # what it waits on comes first
            task = f"[{r['detail']}] {task}"
        table.append(
            (
                r["run_id"],
                r["state"],
                step,
                its,
                format_elapsed(
                    r["elapsed_s"] if now is None else elapsed(r["elapsed_s"], r["clock_from"], now)
                ),
                f"${r['cost_usd']:.4f}{more}",
                task if len(task) <= 60 else task[:59] + "…",
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]) - 1)]
    for row in table:
        cells = [c.ljust(w) for c, w in zip(row[:-1], widths, strict=True)]
        out.write("  ".join([*cells, row[-1]]).rstrip() + "\n")
    for r in rows:  # said once per run, under the table: its row may be missing events
        if r.get("unreadable_lines"):
            out.write(skipped_note(r["unreadable_lines"], f"run {r['run_id']}'s event log") + "\n")


def elapsed(logged_s: float, clock_from: float | None, now: float) -> float:
    """A run's elapsed time: a live one's (`clock_from` set) runs on to `now`."""
    return logged_s if clock_from is None else max(logged_s, now - clock_from)


def main(args: Sequence[str], out: TextIO = sys.stdout, runs_dir: Path = RUNS_DIR) -> int:
    """Entry point of `ptysup runs`."""
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
            print(f"ptysup: runs: unknown argument {arg!r}; {USAGE}", file=sys.stderr)
            return 2
    if watch:
        from ptysup.views import runswatch  # it imports this module

        return runswatch.watch(runs_dir, count, out, as_json)
    try:
        rows = [describe(r) for r in reversed(run_dirs(runs_dir)[-count:])]
    except RunNotFound as exc:
        print(f"ptysup: runs: {exc}", file=sys.stderr)
        return 2
    if as_json:
        out.write(json.dumps(rows, indent=2, ensure_ascii=False) + "\n")
    else:
        render(rows, out)
    return 0
