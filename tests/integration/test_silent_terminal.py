"""A terminal that never answers ptysup's cursor-position query (`script` with nothing
behind it, as CI runners give): the agent's output is not held back for the answer, and
an answer that comes late is still not typed into the agent."""

from __future__ import annotations

import os
import select
import sys
import time
from pathlib import Path

from ptyprocess import PtyProcess

from ptysup.terminal.cursor import QUERY
from tests.helpers import FAKES, ptysup_argv, read_events

# Says hi at once, then records every byte typed to it until the person's last word.
AGENT = """\
import os, sys, tty
tty.setraw(0)
os.write(1, b"hi-from-the-agent\\r\\n")
got = b""
while b"the-end" not in got:
    got += os.read(0, 1024)
open(sys.argv[1], "wb").write(got)
"""


def read_until(term: PtyProcess, seen: bytearray, want: bytes | None, timeout: float) -> None:
    """Read the terminal's output into `seen` until `want` shows (None: until EOF)."""
    deadline = time.monotonic() + timeout
    while want is None or want not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"timed out waiting for {want!r}; got {bytes(seen)!r}"
        if not select.select([term.fd], [], [], left)[0]:
            continue
        try:
            data = os.read(term.fd, 65536)
        except OSError:
            data = b""
        if not data:
            assert want is None, f"EOF before {want!r}; got {bytes(seen)!r}"
            return
        seen += data


def silent_terminal(argv: list[str], tmp_path: Path) -> PtyProcess:
    """ptysup started in a terminal of the test's own, one that never answers anything,
    its supervisor the fake one reading answers.json in `tmp_path`."""
    env = {
        **os.environ,
        "FAKE_SUPERVISOR_ANSWERS": str(tmp_path / "answers.json"),
        "FAKE_SUPERVISOR_LOG": str(tmp_path / "supervisor.jsonl"),
        "TERM": "xterm-256color",
    }
    return PtyProcess.spawn(argv, cwd=str(tmp_path), env=env, dimensions=(30, 100))


def test_the_agent_is_relayed_before_the_answer_and_a_late_answer_is_not_typed(
    tmp_path: Path,
) -> None:
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "answers.json").write_text('["[COMPLETE] unused"]')
    typed = tmp_path / "typed.bin"
    argv = ptysup_argv(
        "the task",
        "--agent-cmd",
        f"{sys.executable} {tmp_path / 'agent.py'} {typed}",
        "--supervisor-cmd",
        f"{sys.executable} {FAKES / 'supervisor.py'}",
        "--idle",
        "60",  # no turn end while the test types
        "--log-file",
        str(tmp_path / "events.jsonl"),
    )
    term = silent_terminal(argv, tmp_path)
    seen = bytearray()
    try:
        # Nothing answers the query, yet the agent's output comes. (Before, ptysup waited
        # a second for the answer first, and what the terminal sent after that went to
        # the agent: the answer below would have been typed into it.)
        read_until(term, seen, b"hi-from-the-agent", 30)
        assert QUERY in seen[: seen.index(b"hi-from-the-agent")]
        term.write(b"\x1b[7;1R")  # the answer, late
        term.write(b"person-keys the-end")
        read_until(term, seen, None, 30)
    finally:
        term.close(force=True)
    got = typed.read_bytes()
    assert b"person-keys the-end" in got
    assert b"7;1R" not in got and b"\x1b" not in got, got


# Prints for over a second, never pausing for long, then says when it stopped.
TICKER = """\
i=0; while [ $i -lt 50 ]; do echo tick $i; sleep 0.02; i=$((i+1)); done
date +%s.%N > stopped
exec cat > typed
"""


def test_output_held_for_the_answer_is_not_taken_for_a_quiet_agent(tmp_path: Path) -> None:
    # The screen model waits up to a second for the answer; the agent's quiet is timed
    # from what the model sees, so until then the output it holds must not count as quiet:
    # the task would be typed into an agent still printing.
    (tmp_path / "ticker.sh").write_text(TICKER)
    (tmp_path / "answers.json").write_text('["[COMPLETE] done"]')
    log = tmp_path / "events.jsonl"
    argv = ptysup_argv(
        "the task",
        "--agent-cmd",
        "sh ticker.sh",
        "--supervisor-cmd",
        f"{sys.executable} {FAKES / 'supervisor.py'}",
        "--idle",
        "0.6",
        "--log-file",
        str(log),
    )
    term = silent_terminal(argv, tmp_path)
    seen = bytearray()
    try:
        read_until(term, seen, None, 60)  # never answering
    finally:
        term.close(force=True)
    ready = [e for e in read_events(log) if e["event"] == "agent_ready"]
    stopped = float((tmp_path / "stopped").read_text())
    assert ready and ready[0]["ts"] >= stopped, (ready, stopped)
    assert (tmp_path / "typed").read_text().startswith("the task")
