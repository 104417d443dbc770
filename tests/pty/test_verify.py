"""The verify command: run without a shell, bounded in time, described in one line."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from ptysup.agents.events import Interrupted, TimeUp
from ptysup.run.verify import Verifier, VerifyStop
from tests.helpers import alive, wait_for


def test_a_command_that_runs_too_long_is_killed_and_said_so(tmp_path: Path) -> None:
    verifier = Verifier(
        [["sh", "-c", "echo started; exec sleep 60"]], cwd=str(tmp_path), env=os.environ, timeout=1
    )
    [result] = verifier.run()
    assert result.exit_code is None and not result.passed
    assert result.output_tail == "started\n\n(timed out after 1s)"
    cmd = "`sh -c 'echo started; exec sleep 60'`"
    assert result.describe() == f"{cmd} did not finish ((timed out after 1s))"


def test_a_failing_command_keeps_its_exit_code_and_output(tmp_path: Path) -> None:
    verifier = Verifier(
        [["sh", "-c", "echo FAILED >&2; exit 3"]], cwd=str(tmp_path), env=os.environ, timeout=30
    )
    [result] = verifier.run()
    assert (result.exit_code, result.output_tail) == (3, "FAILED\n")
    assert result.describe() == "`sh -c 'echo FAILED >&2; exit 3'` exited 3"


def _sleeper(tmp_path: Path, **kw: Any) -> Verifier:
    """A verifier whose first command writes its pid, then sleeps a minute."""
    script = f"echo $$ > {tmp_path / 'pid'}; exec sleep 60"
    return Verifier([["sh", "-c", script], ["true"]], cwd=str(tmp_path), env=os.environ, **kw)


def test_a_stop_signal_ends_the_running_command_and_raises_interrupted(tmp_path: Path) -> None:
    stop = VerifyStop()
    verifier = _sleeper(tmp_path, timeout=600, stop=stop)
    pid = tmp_path / "pid"

    def signal_once_running() -> None:
        wait_for(lambda: pid.exists() and pid.read_text().strip(), 10, "the command to start")
        stop(15)

    threading.Thread(target=signal_once_running, daemon=True).start()
    with pytest.raises(Interrupted) as caught:
        verifier.run()
    assert caught.value.signum == 15
    assert not alive(int(pid.read_text()))
    with pytest.raises(Interrupted):  # and no command starts afterwards
        Verifier([["true"]], cwd=str(tmp_path), env=os.environ, timeout=5, stop=stop).run()


def test_the_time_budget_ends_a_command_as_time_up_not_as_a_failure(tmp_path: Path) -> None:
    verifier = _sleeper(tmp_path, timeout=600)
    with pytest.raises(TimeUp):
        verifier.run(deadline=time.monotonic() + 1)
    assert not alive(int((tmp_path / "pid").read_text()))
    with pytest.raises(TimeUp):  # a budget already gone runs nothing
        Verifier([["true"]], cwd=str(tmp_path), env=os.environ, timeout=5).run(time.monotonic())


def test_a_command_s_own_time_out_shorter_than_the_budget_is_still_a_failure(
    tmp_path: Path,
) -> None:
    [result] = _sleeper(tmp_path, timeout=1).run(deadline=time.monotonic() + 600)
    assert result.exit_code is None and "(timed out after 1s)" in result.output_tail
