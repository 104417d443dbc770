"""`ptysup replay RUN`: a past run's decisions, each with the screen the supervisor saw."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from ptysup.argspec import ArgSpec
from ptysup.events import (
    baseline_detail,
    repeat_detail,
    second_detail,
    shown,
    tamper_detail,
    wind_down_detail,
)
from ptysup.logread import skipped_note
from ptysup.store.rundir import RunDir, RunNotFound, find_run, part_recordings, read_log
from ptysup.terminal.castread import CastError, load_cast
from ptysup.terminal.record import as_bytes, size_of, wait_complete
from ptysup.terminal.screen import ScreenModel

ARGS = ArgSpec(args=("file", "text"))  # RUN [RUN-ID], as main() reads them
COMPLETE_WAIT_S = 60.0  # for a writer still completing a recording after its run ended


def one_run(events: list[dict[str, Any]], run_id: str | None = None) -> list[dict[str, Any]]:
    """The events of one run in a log that several runs appended to (a reused --log-file):
    the run whose id starts with `run_id`, else the newest."""
    runs: list[list[dict[str, Any]]] = []
    for event in events:
        if event.get("event") == "run_start" or not runs:
            runs.append([])
        runs[-1].append(event)
    if run_id is None:
        return runs[-1] if runs else []
    chosen = [r for r in runs if str(r[0].get("run_id", "")).startswith(run_id)]
    if len(chosen) != 1:
        ids = ", ".join(str(r[0].get("run_id")) for r in runs)
        raise RunNotFound(f"{len(chosen)} runs in the log match {run_id!r} (it holds {ids})")
    return chosen[0]


def screens_at_decisions(cast: Path) -> tuple[list[tuple[int, str]], int]:
    """(iteration, screen text) at each decision marker of a recording, and how many of
    its lines were skipped; CastError if it is no recording, OSError if unreadable."""
    wait_complete(cast, COMPLETE_WAIT_S)  # if it is still incomplete, show what is there
    read = load_cast(cast)
    model = ScreenModel(int(read.header["height"]), int(read.header["width"]))
    screens = []
    for _, kind, data in read.events:
        if kind == "o":
            model.feed(as_bytes(data))
        elif kind == "r":
            model.resize(*size_of(data))
        elif kind == "m" and data.startswith("decision:"):
            number = data.split(":")[1]
            if number.isdigit():  # a marker ptysup wrote; any other is not a decision's
                screens.append((int(number), model.snapshot().text()))
    return screens, read.skipped


def render(events: list[dict[str, Any]], screens: dict[int, str], out: TextIO) -> None:
    """Print the run: task, then each decision under the screen it was made on."""
    start = next((e for e in events if e["event"] == "run_start"), {})
    out.write(f"run {start.get('run_id', '?')}: {start.get('task', '?')}\n")
    for e in events:
        if e["event"] == "verify":
            failed = f"FAILED (exit {e.get('exit_code')})"
            out.write(
                f"  verify {' '.join(e.get('command') or ())}: "
                f"{'passed' if e.get('passed') else failed}\n"
            )
        if e["event"] == "repeat":
            out.write(f"  repeat: {repeat_detail(e)}\n")
        if e["event"] == "verify_baseline":
            out.write(f"  checks {baseline_detail(e)}\n")
        if e["event"] == "tamper":
            out.write(f"  tamper guard: {tamper_detail(e)}\n")
        if e["event"] == "second_opinion":
            out.write(f"  second opinion: {second_detail(e)}\n")
        if e["event"] == "wind_down":
            out.write(f"  wind down: {wind_down_detail(e)}\n")
        if e["event"] == "escalation":
            out.write(f"  escalation ({shown(e.get('at'))}): {shown(e.get('reason', ''), 1000)}\n")
        if e["event"] != "decision":
            continue
        i = e.get("iteration")
        action = str(e.get("action") or "?")
        out.write(
            f"\n── decision {i}/{e.get('max_iter', '?')}: {action} "
            f"({e.get('duration_s') or 0:.1f}s) " + "─" * 30 + "\n"
        )
        screen = screens.get(i) if isinstance(i, int) else None
        out.write((screen if screen is not None else "(no recording of this screen)") + "\n")
        out.write(f"── the supervisor said: [{action.upper()}] {e.get('content', '')}\n")
    end = events[-1] if events and events[-1]["event"] == "run_end" else None
    if end:
        out.write(
            f"\nrun_end: {end.get('outcome')} (exit {end.get('exit_code')}) after "
            f"{end.get('iterations') or 0} iteration(s), {end.get('elapsed_s') or 0:.0f}s, "
            f"${end.get('cost_usd') or 0:.4f}\n"
        )
    else:
        out.write("\n(the run has no run_end: it is still going, or was killed)\n")


def main(args: Sequence[str], out: TextIO | None = None) -> int:
    """Entry point of `ptysup replay RUN`."""
    out = out or sys.stdout
    usage = (
        "usage: ptysup replay RUN [RUN-ID]   (RUN: a run id, 'last', a run directory or an "
        "events file; RUN-ID picks one run of a file several runs appended to, else the newest)"
    )
    if "-h" in args or "--help" in args:
        print(usage, file=out)
        return 0
    if len(args) not in (1, 2):
        print(usage, file=sys.stderr)
        return 2
    notes: list[str] = []
    try:
        log = find_run(args[0])
        read = read_log(log)
        if read.skipped:
            notes.append(skipped_note(read.skipped, str(log)))
        events = one_run(read.events, args[1] if len(args) == 2 else None)
        # A resumed run has one recording per part; decision numbers go on across them.
        casts = part_recordings(events, log.with_suffix(".cast"))
        redact = RunDir(log.parent).redactor()  # the recording is raw; what is printed not
        screens: dict[int, str] = {}
        for cast in (c for c in casts if c.is_file()):
            found, skipped = screens_at_decisions(cast)
            screens.update((i, redact(text)) for i, text in found)
            if skipped:
                notes.append(skipped_note(skipped, str(cast)))
    except (RunNotFound, CastError) as exc:
        print(f"ptysup: replay: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"ptysup: replay: cannot read {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    for note in notes:  # before the run, so a person reading it knows it has gaps
        print(f"ptysup: replay: {note}", file=sys.stderr)
    render(events, screens, out)
    return 0
