"""Many decisions in one run: ptysup's memory and open files must not grow with them.

The real `ptysup` command drives the fake agent (generic path, small --idle) with a fast
fake supervisor for $PTYSUP_SOAK_DECISIONS decisions (default 200). While it runs, the
test follows the event log and samples ptysup's VmRSS and open fds; it compares a window
after ~10% of the decisions (warmed up) with one over the last 10%. Minimums and medians
over many samples keep a supervisor call caught mid-flight (its pipes, its buffers) from
counting as growth on a loaded machine.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.helpers import FAKES, kill_all, processes_with, ptysup_argv, read_events

pytestmark = [pytest.mark.soak, pytest.mark.alone]  # it measures the process

DECISIONS = int(os.environ.get("PTYSUP_SOAK_DECISIONS", "200"))
SECONDS_PER_DECISION = 6.0  # the most one decision may take on a loaded 2-core machine
FD_TOLERANCE = 2  # a leak of one fd per decision would be dozens
RSS_TOLERANCE_KB = 4 * 1024  # a leak of 32 KB (one prompt) per decision would be ~5 MB at 180


@dataclass
class Samples:
    """Resource samples of one process, keyed by how many decisions were made."""

    rss_kb: dict[int, list[int]] = field(default_factory=dict)
    fds: dict[int, list[int]] = field(default_factory=dict)

    def take(self, pid: int, decisions: int) -> None:
        try:
            with open(f"/proc/{pid}/status") as f:
                rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
            fds = len(os.listdir(f"/proc/{pid}/fd"))
        except (OSError, StopIteration):
            return  # it just ended
        self.rss_kb.setdefault(decisions, []).append(rss)
        self.fds.setdefault(decisions, []).append(fds)

    def window(self, first: int, last: int) -> tuple[list[int], list[int]]:
        """(RSS samples, fd samples) taken while first <= decisions <= last."""
        keys = [k for k in self.rss_kb if first <= k <= last]
        return (
            [v for k in keys for v in self.rss_kb[k]],
            [v for k in keys for v in self.fds[k]],
        )


class LogFollower:
    """Counts decision events as ptysup appends them (reading only what is new)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._offset = 0
        self._partial = b""
        self.decisions = 0

    def poll(self) -> int:
        try:
            with open(self._path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return self.decisions
        self._offset += len(data)
        *lines, self._partial = (self._partial + data).split(b"\n")
        self.decisions += sum(1 for line in lines if json.loads(line)["event"] == "decision")
        return self.decisions


@pytest.fixture
def marker() -> Iterator[str]:
    value = uuid.uuid4().hex
    yield value
    leftovers = processes_with(value)
    kill_all(leftovers)
    assert not leftovers, "processes of the run outlived ptysup"


@pytest.mark.timeout(int(DECISIONS * SECONDS_PER_DECISION) + 300)
def test_many_decisions_do_not_grow_memory_or_open_files(tmp_path: Path, marker: str) -> None:
    assert DECISIONS >= 20, "too few decisions to compare a warm window with the end"
    answers = ["[CONTINUE] next step"] * (DECISIONS - 1) + ["[COMPLETE] soak done"]
    (tmp_path / "answers.json").write_text(json.dumps(answers))
    env = dict(os.environ)
    env.update(
        FAKE_AGENT_LOG=str(tmp_path / "agent.jsonl"),
        FAKE_AGENT_WORK="0.05",
        FAKE_SUPERVISOR_LOG=str(tmp_path / "supervisor.jsonl"),
        FAKE_SUPERVISOR_ANSWERS=str(tmp_path / "answers.json"),
        PTYSUP_TEST_RUN=marker,
    )
    log = tmp_path / "events.jsonl"
    argv = ptysup_argv(
        "soak task",
        "--agent-cmd",
        f"{sys.executable} {FAKES / 'agent.py'}",
        "--supervisor-cmd",
        f"{sys.executable} {FAKES / 'supervisor.py'}",
        "--idle",
        "0.3",
        "--max-iter",
        str(DECISIONS + 10),
        "--max-repeats",  # the same step again and again is the point here, not spinning
        "0",
        "--log-file",
        str(log),
    )
    follower, samples = LogFollower(log), Samples()
    deadline = time.monotonic() + DECISIONS * SECONDS_PER_DECISION + 120
    with (tmp_path / "stdout.txt").open("w") as out, (tmp_path / "stderr.txt").open("w") as err:
        proc = subprocess.Popen(
            argv, cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err
        )
        try:
            while proc.poll() is None:
                assert time.monotonic() < deadline, f"stuck at {follower.decisions} decisions"
                samples.take(proc.pid, follower.poll())
                time.sleep(0.05)  # the sampling interval, not a wait for an event
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0, (tmp_path / "stderr.txt").read_text()
    assert follower.poll() == DECISIONS
    end = read_events(log)[-1]
    assert (end["outcome"], end["iterations"]) == ("complete", DECISIONS)
    messages = (tmp_path / "agent.jsonl").read_text().split("\n")[:-1]
    # The task, then an instruction per [CONTINUE]; on a loaded machine a quiet spell may
    # end a turn early, and the last instruction may still be unread when [COMPLETE] comes.
    assert DECISIONS - 2 <= len(messages) <= DECISIONS

    tenth = DECISIONS // 10
    warm_rss, warm_fds = samples.window(tenth, 2 * tenth)
    end_rss, end_fds = samples.window(DECISIONS - tenth, DECISIONS - 1)
    print(
        f"soak: {DECISIONS} decisions; fds min {min(warm_fds)} -> {min(end_fds)}; "
        f"RSS median {statistics.median(warm_rss):.0f} -> {statistics.median(end_rss):.0f} kB"
    )
    assert len(warm_fds) >= 10 and len(end_fds) >= 10, "too few samples to compare"
    # The end's fewest against the warm window's usual: a sample taken as a file was
    # closed and reopened (17 among 20s) is no baseline.
    warm = statistics.median_low(warm_fds)
    assert min(end_fds) <= warm + FD_TOLERANCE, (warm, min(end_fds), sorted(warm_fds))
    growth = statistics.median(end_rss) - statistics.median(warm_rss)
    assert growth <= RSS_TOLERANCE_KB, (
        f"RSS grew by {growth} kB over {DECISIONS - 2 * tenth} decisions "
        f"(warm median {statistics.median(warm_rss)} kB, end {statistics.median(end_rss)} kB)"
    )
