"""What a run must keep reaches the disk at the moments that matter, seen with strace.

A power cut cannot be made here: what is shown is that ptysup fsyncs each file (and the
folder naming it) right after the writes that matter, in the thread that made them, and
nowhere else (never per chunk of the agent's output). See ptysup.store.durable.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ptysup.events import SYNC_AT
from tests.helpers import FAKES, ptysup_argv

AGENT = f"{sys.executable} {FAKES / 'agent.py'}"
SUPERVISOR = f"{sys.executable} {FAKES / 'supervisor.py'}"
# `1234 write(4</path/events.jsonl>, "{\"ts\": 1.5, \"event\": \"decision\"..., 296) = 296`
# `1234 rename("/a/.x.tmp", "/a/x") = 0`, `1234 mkdir("/a", 0777) = 0`
# strace pads a pid of fewer than 5 digits with spaces (pids wrap on a busy machine).
_CALL = re.compile(
    r'^(\d+)\s+(\w+)\((?:(\d+)<([^>]*)>(?:, "(.*?)"(?:\.\.\.)?, \d+)?|"([^"]*)"(?:, "([^"]*)")?)'
)


@dataclass(frozen=True)
class Call:
    """One system call strace saw: the thread, the call, the file and what it wrote."""

    tid: int
    name: str
    path: str  # of the fd; a rename's target, a mkdir's folder
    data: str = ""  # the start of what was written, as strace quotes it
    source: str = ""  # a rename's source
    result: int | None = None  # None: strace shows it on a later line


def _traced(tmp_path: Path, *answers: str) -> tuple[list[Call], Path]:
    """ptysup on a task with the fake agent, under strace; the calls and the run dir."""
    strace = shutil.which("strace")
    assert strace, "the tests need strace (scripts/setup.sh installs it)"
    (tmp_path / "answers.json").write_text(json.dumps(list(answers)))
    env = dict(os.environ, FAKE_SUPERVISOR_ANSWERS=str(tmp_path / "answers.json"))
    env.update(
        FAKE_AGENT_LOG=str(tmp_path / "agent.jsonl"),
        FAKE_SUPERVISOR_LOG=str(tmp_path / "supervisor.jsonl"),
    )
    trace = tmp_path / "trace.txt"
    calls = "write,fsync,fdatasync,rename,mkdir"
    argv = ptysup_argv(
        "build it", "--agent-cmd", AGENT, "--supervisor-cmd", SUPERVISOR, "--idle", "0.5"
    )
    done = subprocess.run(
        [strace, "-f", "-qq", "-y", "-s", "64", "-e", f"trace={calls}", "-o", str(trace), *argv],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    found = []
    for line in trace.read_text().splitlines():
        m = _CALL.match(line)
        if m:
            tid, name, _, fd_path, data, first, target = m.groups()
            path, source = (target, first) if target else (fd_path or first, None)
            end = re.search(r"\) += (-?\d+)", line)
            result = int(end.group(1)) if end else None
            found.append(Call(int(tid), name, path or "", data or "", source or "", result))
    (run_dir,) = (tmp_path / ".ptysup" / "runs").iterdir()
    return found, run_dir


def _next_by(calls: list[Call], i: int, path: str) -> Call | None:
    """The next call after calls[i] by the same thread on `path`."""
    return next((c for c in calls[i + 1 :] if c.tid == calls[i].tid and c.path == path), None)


def _event(call: Call) -> str | None:
    m = re.search(r'\\"event\\": \\"(\w+)', call.data)
    return m.group(1) if m else None


def test_the_event_log_is_fsynced_after_each_decision_and_the_run_s_end(tmp_path: Path) -> None:
    calls, run_dir = _traced(tmp_path, "[CONTINUE] step two", "[COMPLETE] all done")
    log = str(run_dir / "events.jsonl")
    # The empty write that checks the log can be written before the run is not a line.
    writes = [
        (i, _event(c))
        for i, c in enumerate(calls)
        if c.path == log and c.name == "write" and c.data.strip('"')
    ]
    names = [name for _, name in writes]
    assert names.count("decision") == 2 and names[0] == "run_start" and names[-1] == "run_end"
    for i, name in writes:
        after = _next_by(calls, i, log)
        if name in SYNC_AT:  # fsynced by the thread that wrote it, before its next write
            assert after is not None and after.name == "fsync", (name, after)
    fsyncs = [c for c in calls if c.path == log and c.name == "fsync"]
    assert len(fsyncs) == sum(name in SYNC_AT for name in names)  # nowhere else
    # The new log's name is made durable: its folder is fsynced once it is made.
    made = writes[0][0]
    assert any(c.name == "fsync" and c.path == str(run_dir) for c in calls[:made])


def test_the_recording_is_fsynced_at_each_decision_and_at_its_end_only(tmp_path: Path) -> None:
    calls, run_dir = _traced(tmp_path, "[CONTINUE] step two", "[COMPLETE] all done")
    cast = str(run_dir / "events.cast")
    on_cast = [(i, c) for i, c in enumerate(calls) if c.path == cast]
    markers = [i for i, c in on_cast if c.name == "write" and '\\"decision:' in c.data]
    assert len(markers) == 2
    for i in markers:
        after = _next_by(calls, i, cast)
        assert after is not None and after.name == "fsync"
    fsyncs = [c for _, c in on_cast if c.name == "fsync"]
    assert len(fsyncs) == len(markers) + 1  # and once the file is complete: never for output
    assert on_cast[-1][1].name == "fsync"


def test_state_json_run_json_and_the_run_s_folder_are_replaced_and_made_durably(
    tmp_path: Path,
) -> None:
    calls, run_dir = _traced(tmp_path, "[COMPLETE] all done")
    for name in ("state.json", "run.json"):
        renames = [i for i, c in enumerate(calls) if c.name == "rename" and c.path.endswith(name)]
        assert renames, name
        for i in renames:
            rename = calls[i]
            before = [c for c in calls[:i] if c.tid == rename.tid and c.path == rename.source]
            assert before and before[-1].name == "fsync", (name, before[-1:])
            after = _next_by(calls, i, str(run_dir))
            assert after is not None and after.name == "fsync", (name, after)
    # The run's own folder, made at the start, is named durably: its parent is fsynced.
    # (Output paths are checked first: a folder made for the check is removed again.)
    made = [
        i for i, c in enumerate(calls) if (c.name, c.path, c.result) == ("mkdir", str(run_dir), 0)
    ]
    after = _next_by(calls, made[-1], str(run_dir.parent))
    assert after is not None and after.name == "fsync"
