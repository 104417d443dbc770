"""The verify command: run without a shell, bounded in time, described in one line."""

from __future__ import annotations

import os
from pathlib import Path

from ptysup.verify import Verifier


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
