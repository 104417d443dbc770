"""The page's replay of a resumed run: every part's recording, one after another."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from ptysup.serve import files, joined
from ptysup.serve.api import RunsIndex
from ptysup.serve.routes import Router, Stream
from ptysup.store.rundir import RUNS_DIR, RunDir, RunRecord
from ptysup.terminal.record import Recording, read_cast
from tests.helpers import Tick

RUN = "20260101-120000-aaaaaa"


def _resumed_run(project: Path) -> RunDir:
    """A run recorded in two parts, as a resume leaves it: events.cast, events.part2.cast
    (at another size), the events naming both, and run.json naming the last."""
    run_dir = RunDir(project / RUNS_DIR / RUN)
    first = Recording(run_dir.path / "events.cast", 24, 80, Tick())
    first.output(b"part one\r\n")  # at 0.5 s
    first.output(b"more\r\n")  # at 1.0 s
    first.close()
    second = Recording(run_dir.path / "events.part2.cast", 30, 100, Tick())
    second.output(b"part two\r\n")  # at 0.5 s of its own
    second.close()
    run_dir.write_record(
        RunRecord(
            run_id=RUN,
            config={},
            session_id=None,
            log_file=str(run_dir.default_events),
            record=str(second.path),
            cwd=str(project),
            started=time.time(),
        )
    )
    events = [
        {"event": "run_start", "ts": 1.0, "run_id": RUN, "record": str(first.path)},
        {"event": "run_resume", "ts": 9.0, "run_id": RUN, "record": str(second.path)},
    ]
    run_dir.default_events.write_text("".join(json.dumps(e) + "\n" for e in events))
    return run_dir


def test_a_resumed_runs_cast_is_every_part_in_order_and_its_duration_the_whole(
    tmp_path: Path,
) -> None:
    run_dir = _resumed_run(tmp_path)
    index = RunsIndex(tmp_path / RUNS_DIR)
    answer = Router(index, {}, lambda s: False, lambda: 0.0).get(f"/api/runs/{RUN}/cast")
    assert isinstance(answer, Stream) and answer.status == 200
    cast = tmp_path / "joined.cast"
    cast.write_bytes(b"".join(answer.chunks))
    header, events = read_cast(cast)  # one header: a file asciinema plays
    assert (header["version"], header["width"], header["height"]) == (2, 80, 24)
    assert events == [
        (0.5, "o", "part one\r\n"),
        (1.0, "o", "more\r\n"),
        (1.0, "r", "100x30"),  # part two's terminal, from where part one ended
        (1.5, "o", "part two\r\n"),
    ]
    assert index.details(run_dir)["cast_duration_s"] == pytest.approx(1.5)


def test_a_part_is_scanned_for_its_length_and_what_is_wrong(tmp_path: Path) -> None:
    cast = tmp_path / "a.cast"
    header = '{"version": 2, "width": 80, "height": 24}\n'
    cast.write_text(
        header + '[0.5, "o", "x"]\nnot json\n' + "[" * 100_000 + '\n[2.25, "m", "end"]\n[3'
    )
    part = joined.scan(cast)
    assert (part.problem, part.duration, part.skipped) == (None, 2.25, 2)  # a cut end is no damage
    with cast.open("a") as f:
        f.write('.0, "o", "y"]\n')  # the cut line, now whole
    more = joined.scan(cast, part)  # goes on from where the last scan stopped
    assert (more.duration, more.skipped, more.offset) == (3.0, 2, cast.stat().st_size)
    assert not joined.scan(tmp_path / "missing.cast").exists
    cast.write_text('[0.5, "o", "no header"]\n')
    assert joined.scan(cast).problem == joined.NO_HEADER
    fifo = tmp_path / "fifo.cast"
    os.mkfifo(fifo)  # opened for reading, it would wait for a writer forever
    assert joined.scan(fifo).problem == "a FIFO, not a regular file"
    with cast.open("wb") as f:
        f.truncate(files.CAST_MAX + (1 << 20))  # sparse: nothing is written
    assert joined.scan(cast).problem == "257 MiB: bigger than the 256 MiB serve reads"
