"""The runs' rows as the table a person reads (`ptysup runs`, and each redraw of `--watch`)."""

from __future__ import annotations

from typing import Any, TextIO

from ptysup.logread import skipped_note
from ptysup.store import runstate
from ptysup.store.listing import elapsed
from ptysup.store.rundir import RUNS_DIR
from ptysup.supervisor.prompt import format_elapsed

WAITING = (runstate.NEEDS_INPUT, runstate.API_WAIT)  # states whose detail the table shows


def render(
    rows: list[dict[str, Any]], out: TextIO, now: float | None = None, width: int | None = None
) -> None:
    """The rows as an aligned table; with `now`, a live run's elapsed time up to it; with
    `width` (a terminal's), each line fits in it."""
    if not rows:
        out.write(f"no runs in {RUNS_DIR}/\n")
        return
    table: list[tuple[str, ...]] = [
        ("RUN", "STATE", "OUTCOME", "STEP", "ITER", "PARTS", "ELAPSED", "COST", "TASK")
    ]
    for r in rows:
        step = f"{r['step_index']}/{r['steps_of']} {r['step']}" if r["step"] else "-"
        outcome = r.get("outcome") or ("damaged" if r.get("damaged") else "-")
        if r.get("reason"):  # why, in a few words: the whole reason is in `runs --json`
            outcome = _cut(f"{outcome}: {' '.join(str(r['reason']).split())}", 40)
        more = "+" if r.get("log_incomplete") else ""  # at least this much: the log is cut
        its = f"{r['iterations']}{more}" + (f"/{r['max_iter']}" if r["max_iter"] else "")
        task = " ".join(str(r["task"] or "").split())
        if r.get("detail") and r["state"] in WAITING:  # what it waits on comes first
            task = f"[{r['detail']}] {task}"
        table.append(
            (
                r["run_id"],
                r["state"],
                outcome,
                step,
                its,
                str(r.get("parts") or 1),
                format_elapsed(
                    r["elapsed_s"] if now is None else elapsed(r["elapsed_s"], r["clock_from"], now)
                ),
                f"${r['cost_usd']:.4f}{more}",
                _cut(task, 60),
            )
        )
    _write(table, out, width)
    for r in rows:  # said once per run, under the table: its row may be missing events
        if r.get("unreadable_lines"):
            out.write(skipped_note(r["unreadable_lines"], f"run {r['run_id']}'s event log") + "\n")
        if r.get("damaged"):
            out.write(f"run {r['run_id']} is damaged: {' '.join(str(r['damaged']).split())}\n")


# Columns that say nothing while every run has their default (no plan: STEP "-"; one part
# each: PARTS "1") are left out, so the task still shows in an 80-column terminal.
_IDLE = {"STEP": "-", "PARTS": "1"}
# In a narrow terminal the free-text columns are cut first, down to these widths...
_SHRINK = {"OUTCOME": 12, "FILE": 12, "TASK": 12}
# ...then these columns go, the least telling first, before any line would wrap.
_DROP = ("ELAPSED", "PARTS", "STEP", "QUEUED")
_GAP = 2


def _write(table: list[tuple[str, ...]], out: TextIO, width: int | None = None) -> None:
    """Aligned columns, the last one (free text) as it is; within `width` if given."""
    table = _without_idle_columns(table)
    if width is not None:
        table = _fitted(table, width)
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]) - 1)]
    for row in table:
        cells = [c.ljust(w) for c, w in zip(row[:-1], widths, strict=True)]
        out.write("  ".join([*cells, row[-1]]).rstrip() + "\n")


def _fitted(table: list[tuple[str, ...]], width: int) -> list[tuple[str, ...]]:
    """TABLE cut to lines of at most WIDTH: its free-text columns cut (never below
    _SHRINK's widths), and if that is not enough, its least telling columns left out."""
    whole = table
    for drop in (None, *_DROP):
        if drop is not None and drop in whole[0] and len(whole[0]) > 2:
            at = whole[0].index(drop)
            whole = [row[:at] + row[at + 1 :] for row in whole]
        table = whole
        widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
        over = sum(widths) + _GAP * (len(widths) - 1) - width
        for name, least in _SHRINK.items():
            if over <= 0 or name not in table[0]:
                continue
            at = table[0].index(name)
            cut_to = max(least, widths[at] - over)
            over -= widths[at] - cut_to
            table = [(*row[:at], _cut(row[at], cut_to), *row[at + 1 :]) for row in table]
        if over <= 0:
            return table
    return table


def _without_idle_columns(table: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    head, rows = table[0], table[1:]
    keep = [
        i
        for i, name in enumerate(head)
        if name not in _IDLE or any(r[i] != _IDLE[name] for r in rows)
    ]
    return [tuple(row[i] for i in keep) for row in table]


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def render_batches(rows: list[dict[str, Any]], out: TextIO, width: int | None = None) -> None:
    """Each batch as one row (its tasks done / running / queued / failed), above the runs;
    with `width` (a terminal's), each line fits in it."""
    if not rows:
        return
    table: list[tuple[str, ...]] = [
        ("BATCH", "STATE", "DONE", "RUNNING", "QUEUED", "INTERRUPTED", "FAILED", "FILE")
    ]
    for b in rows:
        counts = (str(b[k]) for k in ("done", "running", "queued", "interrupted", "failed"))
        table.append((b["batch"], b["state"], *counts, str(b["tasks_file"])))
    _write(table, out, width)
    out.write("\n")
