"""--verify: commands that must pass before a [COMPLETE] is accepted."""

from __future__ import annotations

import os
import shlex
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ptysup.agents.events import Interrupted, TimeUp
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


class Verify(Protocol):
    """Checks that run in order up to the first failure (a Verifier, a plan step's gate)."""

    commands: list[tuple[str, ...]]

    def run(self, deadline: float | None = None) -> list[VerifyResult]: ...


class VerifyStop:
    """A stop signal for every verifier of a run (any thread): the command running is
    ended at once and no other starts; the verifier raises Interrupted."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: set[int] = set()  # process groups
        self.signum: int | None = None

    def __call__(self, signum: int) -> None:
        with self._lock:
            if self.signum is None:
                self.signum = signum
            for pid in self._running:
                kill_group(pid)

    def check(self) -> None:
        """Raise Interrupted once a stop signal came."""
        if self.signum is not None:
            raise Interrupted(self.signum)

    def started(self, pid: int) -> None:
        with self._lock:
            self._running.add(pid)
            if self.signum is not None:
                kill_group(pid)  # the signal came while it was starting

    def ended(self, pid: int) -> None:
        with self._lock:
            self._running.discard(pid)


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
        stop: VerifyStop | None = None,
    ) -> None:
        self.commands = [tuple(c) for c in commands]
        self._cwd = cwd
        self._env = dict(env)
        self._timeout = timeout
        self._clock = clock
        self._stop = stop or VerifyStop()

    def run(self, deadline: float | None = None) -> list[VerifyResult]:
        """Results up to and including the first failure. A stop signal raises
        Interrupted; reaching `deadline` (the time budget, on `clock`) raises TimeUp."""
        results = []
        for command in self.commands:
            result = self._one(command, deadline)
            results.append(result)
            if not result.passed:
                break
        return results

    def _one(self, command: tuple[str, ...], deadline: float | None) -> VerifyResult:
        self._stop.check()
        start = self._clock()
        limit = self._timeout
        if deadline is not None:
            if deadline <= start:
                raise TimeUp()
            limit = min(limit, deadline - start)
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
        self._stop.started(proc.pid)
        try:
            out, _ = proc.communicate(timeout=limit)
            code: int | None = proc.returncode
            note = ""
        except subprocess.TimeoutExpired:
            kill_group(proc.pid)
            out, _ = proc.communicate()
            if limit < self._timeout:
                raise TimeUp() from None  # the time budget ended it, not its own time-out
            code = None
            note = f"\n(timed out after {self._timeout:.0f}s)"
        finally:
            self._stop.ended(proc.pid)
        self._stop.check()  # a signal ended it: its exit says nothing about the work
        tail = out.decode(errors="replace")[-TAIL_CHARS:] + note
        return VerifyResult(command, code, tail, round(self._clock() - start, 3))
