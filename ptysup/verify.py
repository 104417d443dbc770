"""--verify: commands that must pass before a [COMPLETE] is accepted."""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ptysup.procutil import dies_with, kill_group

TAIL_CHARS = 2000  # of a failing command's output, shown to the agent and the supervisor


@dataclass(frozen=True)
class VerifyResult:
    """One command's verdict."""

    command: tuple[str, ...]
    exit_code: int | None  # None: timed out or could not start
    output_tail: str
    duration_s: float

    @property
    def passed(self) -> bool:
        """Whether the command exited 0."""
        return self.exit_code == 0

    def describe(self) -> str:
        """One line: the command and how it ended."""
        cmd = shlex.join(self.command)
        if self.exit_code is None:
            last = (self.output_tail.splitlines() or ["?"])[-1]
            return f"`{cmd}` did not finish ({last})"
        return f"`{cmd}` exited {self.exit_code}"

    def instruction(self) -> str:
        """What the agent is told when the command failed."""
        return (
            f"Verification failed: {self.describe()}. The task is not done until it passes.\n"
            f"Last output:\n{self.output_tail}\nFix the cause, then say what you changed."
        )


class Verifier:
    """Runs every --verify command in the agent's working directory, in order."""

    def __init__(
        self,
        commands: Sequence[Sequence[str]],
        *,
        cwd: str,
        env: Mapping[str, str],
        timeout: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.commands = [tuple(c) for c in commands]
        self._cwd = cwd
        self._env = dict(env)
        self._timeout = timeout
        self._clock = clock

    def run(self) -> list[VerifyResult]:
        """Results up to and including the first failure."""
        results = []
        for command in self.commands:
            result = self._one(command)
            results.append(result)
            if not result.passed:
                break
        return results

    def _one(self, command: tuple[str, ...]) -> VerifyResult:
        start = self._clock()
        try:
            proc = subprocess.Popen(
                command,
                cwd=self._cwd,
                env=self._env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=dies_with(os.getpid()),
            )
        except OSError as exc:
            return VerifyResult(command, None, f"cannot start: {exc.strerror or exc}", 0.0)
        try:
            out, _ = proc.communicate(timeout=self._timeout)
            code: int | None = proc.returncode
            note = ""
        except subprocess.TimeoutExpired:
            kill_group(proc.pid)
            out, _ = proc.communicate()
            code = None
            note = f"\n(timed out after {self._timeout:.0f}s)"
        tail = out.decode(errors="replace")[-TAIL_CHARS:] + note
        return VerifyResult(command, code, tail, round(self._clock() - start, 3))
