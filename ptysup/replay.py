"""`ptysup replay RUN`: a past run's decisions, each with the screen the supervisor saw."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from ptysup.argspec import ArgSpec
from ptysup.rundir import RunDir, RunNotFound, find_run, part_recordings, read_events
from ptysup.terminal.record import as_bytes, read_cast, size_of, wait_complete
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


def screens_at_decisions(cast: Path) -> Iterator[tuple[int, str]]:
    """(iteration, screen text) at each decision marker of a recording."""
    wait_complete(cast, COMPLETE_WAIT_S)  # if it is still incomplete, show what is there
    header, events = read_cast(cast)
    model = ScreenModel(int(header["height"]), int(header["width"]))
    for _, kind, data in events:
        if kind == "o":
            model.feed(as_bytes(data))
        elif kind == "r":
            model.resize(*size_of(data))
        elif kind == "m" and data.startswith("decision:"):
            yield int(data.split(":")[1]), model.snapshot().text()


def render(events: list[dict[str, Any]], screens: dict[int, str], out: TextIO) -> None:
    """Print the run: task, then each decision under the screen it was made on."""
    start = next((e for e in events if e["event"] == "run_start"), {})
    out.write(f"run {start.get('run_id', '?')}: {start.get('task', '?')}\n")
    for e in events:
        if e["event"] == "verify":
            out.write(
                f"  verify {' '.join(e['command'])}: "
                f"{'passed' if e['passed'] else 'FAILED (exit ' + str(e['exit_code']) + ')'}\n"
            )
        if e["event"] != "decision":
            continue
        i = e["iteration"]
        out.write(
            f"\n── decision {i}/{e.get('max_iter', '?')}: {e['action']} "
            f"({e.get('duration_s', 0):.1f}s) " + "─" * 30 + "\n"
        )
        screen = screens.get(i)
        out.write((screen if screen is not None else "(no recording of this screen)") + "\n")
        out.write(f"── the supervisor said: [{e['action'].upper()}] {e.get('content', '')}\n")
    end = events[-1] if events and events[-1]["event"] == "run_end" else None
    if end:
        out.write(
            f"\nrun_end: {end['outcome']} (exit {end['exit_code']}) after "
            f"{end['iterations']} iteration(s), {end.get('elapsed_s', 0):.0f}s, "
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
    try:
        log = find_run(args[0])
        events = one_run(read_events(log), args[1] if len(args) == 2 else None)
        # A resumed run has one recording per part; decision numbers go on across them.
        casts = part_recordings(events, log.with_suffix(".cast"))
        redact = RunDir(log.parent).redactor()  # the recording is raw; what is printed not
        screens = {
            i: redact(text) for c in casts if c.is_file() for i, text in screens_at_decisions(c)
        }
    except RunNotFound as exc:
        print(f"ptysup: {exc}", file=sys.stderr)
        return 2
    render(events, screens, out)
    return 0
