"""The agent process: waiting for its end without polling, and ending it for sure."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from ptysup.terminal.pty_ import AgentProcess, ExitStatus
from tests.helpers import wait_for


def spawn(script: str, tmp_path: Path) -> AgentProcess:
    return AgentProcess.spawn(
        ["/bin/sh", "-c", script], cwd=str(tmp_path), env=dict(os.environ), size=(24, 80)
    )


def test_wait_returns_the_status_once_the_agent_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = spawn("read line; exit 3", tmp_path)
    if hasattr(os, "pidfd_open"):  # Linux: an event to wait for, no polling loop
        no_sleep = SimpleNamespace(
            monotonic=time.monotonic, sleep=lambda _s: pytest.fail("wait() polled")
        )
        monkeypatch.setattr("ptysup.terminal.pty_.time", no_sleep)
    try:
        assert agent.wait(0) is None  # still waiting for its line
        agent.write(b"go\r")
        assert agent.wait(30) == ExitStatus(3, None)
        assert agent.wait(30) == ExitStatus(3, None)  # reaped once, remembered
    finally:
        agent.terminate(grace=0.5)
        agent.close()


def test_wait_gives_up_on_a_live_agent(tmp_path: Path) -> None:
    agent = spawn("read line", tmp_path)
    try:
        assert agent.wait(0.1) is None
    finally:
        agent.terminate(grace=0.5)
        agent.close()


def test_terminate_ends_an_agent_that_ignores_hangup_and_term(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    agent = spawn(f"trap '' HUP TERM; touch {ready}; while :; do read line; done", tmp_path)
    try:
        wait_for(ready.exists, 30, "the agent to set its traps")
        status = agent.terminate(grace=0.2)
        assert status == ExitStatus(None, signal.SIGKILL)
    finally:
        agent.close()


@pytest.mark.parametrize(("hung_up", "first"), [(False, "TERM"), (True, "HUP")])
def test_terminate_sends_term_first_and_hup_only_when_the_terminal_went_away(
    tmp_path: Path, hung_up: bool, first: str
) -> None:
    # Full-screen programs (htop, less, vim) clean up on TERM; HUP is for a lost terminal.
    ready, got = tmp_path / "ready", tmp_path / "got"
    agent = spawn(
        f"trap 'echo HUP >> {got}; exit 0' HUP; trap 'echo TERM >> {got}; exit 0' TERM; "
        f"touch {ready}; while :; do sleep 0.05; done",
        tmp_path,
    )
    try:
        wait_for(ready.exists, 30, "the agent to set its traps")
        agent.hung_up = hung_up
        assert agent.terminate(grace=5) is not None
        assert got.read_text().split()[0] == first
    finally:
        agent.close()
