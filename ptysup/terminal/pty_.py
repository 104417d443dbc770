"""The agent process in a PTY that ptysup owns: spawn, read, write, resize, end, reap."""

from __future__ import annotations

import contextlib
import errno
import os
import select
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ptyprocess import PtyProcess

# How long an agent gets to end on SIGTERM (full-screen programs restore the terminal on
# it) before SIGKILL; the tests' rigs end what a run left behind the same way.
TERM_GRACE_S = 2.0


class AgentStartError(Exception):
    """The agent command could not be started (missing, not executable, bad cwd)."""


@dataclass(frozen=True)
class ExitStatus:
    """How the agent ended: an exit code or the signal that killed it."""

    code: int | None
    signal: int | None

    def describe(self) -> str:
        """'exit 1' or 'signal 9'."""
        return f"signal {self.signal}" if self.signal is not None else f"exit {self.code}"


class AgentProcess:
    """A child process on a PTY; the master fd is read by the relay, written by anyone."""

    def __init__(self, proc: PtyProcess) -> None:
        self._proc = proc
        self._write_lock = threading.Lock()
        self._reap_lock = threading.Lock()
        self.fd: int = proc.fd
        self.pid: int = proc.pid
        self._status: ExitStatus | None = None
        self.hung_up = False  # the person's terminal is gone: end the agent with HUP first

    @classmethod
    def spawn(
        cls,
        argv: Sequence[str],
        *,
        cwd: str | None,
        env: Mapping[str, str],
        size: tuple[int, int],
    ) -> AgentProcess:
        """Start argv (never through a shell) on a new PTY of `size` (rows, cols)."""
        if cwd is not None and not os.path.isdir(cwd):
            raise AgentStartError(f"working directory does not exist: {cwd}")
        try:
            proc = PtyProcess.spawn(list(argv), cwd=cwd, env=dict(env), dimensions=size)
        except FileNotFoundError as exc:
            raise AgentStartError(f"agent command not found: {argv[0]}") from exc
        except OSError as exc:
            raise AgentStartError(f"cannot start agent {argv[0]}: {exc.strerror or exc}") from exc
        return cls(proc)

    def read(self, size: int = 65536) -> bytes:
        """Bytes the agent wrote; b'' once its side of the PTY is closed (EOF or EIO)."""
        try:
            return os.read(self.fd, size)
        except OSError as exc:
            if exc.errno == errno.EIO:  # Linux reports a closed slave as EIO
                return b""
            raise

    def write(self, data: bytes) -> None:
        """Write all of `data` to the agent, looping over partial writes."""
        with self._write_lock:
            view = memoryview(data)
            while view:
                try:
                    n = os.write(self.fd, view)
                except BlockingIOError:
                    time.sleep(0.001)  # PTY input queue full: the agent is reading slowly
                    continue
                view = view[n:]

    def resize(self, rows: int, cols: int) -> None:
        """Tell the agent its window changed (it gets SIGWINCH)."""
        self._proc.setwinsize(rows, cols)

    def poll(self) -> ExitStatus | None:
        """The exit status if the agent has ended, else None; never blocks.

        Called from the relay and the run loop: one lock, so only one waitpid reaps it.
        """
        with self._reap_lock:
            if self._status is None:
                try:
                    alive = self._proc.isalive()
                except ChildProcessError:  # reaped elsewhere; the status is gone
                    self._status = ExitStatus(None, None)
                else:
                    if not alive:
                        self._status = ExitStatus(self._proc.exitstatus, self._proc.signalstatus)
            return self._status

    def wait(self, timeout: float) -> ExitStatus | None:
        """Wait up to `timeout` seconds for the agent to end."""
        status = self.poll()
        if status is not None or timeout <= 0:
            return status
        try:  # waitpid has no time-out, but a pidfd turns readable when the process ends
            pidfd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):  # not Linux 5.3+, or already gone: poll
            deadline = time.monotonic() + timeout
            while (status := self.poll()) is None and time.monotonic() < deadline:
                time.sleep(0.02)
            return status
        try:
            select.select([pidfd], [], [], timeout)
        finally:
            os.close(pidfd)
        return self.poll()

    def terminate(self, grace: float = TERM_GRACE_S) -> ExitStatus | None:
        """End the agent and its process group: TERM (what full-screen programs clean up
        on: htop, less and vim leave the alternate screen), then KILL; reap it. HUP comes
        first only once the person's terminal went away (`hung_up`)."""
        steps = [(signal.SIGTERM, grace), (signal.SIGKILL, 2.0)]
        if self.hung_up:
            steps.insert(0, (signal.SIGHUP, grace))
        for sig, wait_s in steps:
            if self.poll() is not None:
                break
            self._signal_group(sig)
            self.wait(wait_s)
        self._signal_group(signal.SIGKILL)  # anything the agent left in its group
        return self.poll()

    def resume(self) -> None:
        """Continue the agent's process group after it stopped itself (SIGCONT)."""
        self._signal_group(signal.SIGCONT)

    def _signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.pid, sig)

    def close(self) -> None:
        """Close the master side; the agent, if alive, loses its terminal."""
        if self.poll() is not None:
            # Reaped already (terminate() runs first): ptyprocess's pause for the kernel
            # to note a SIGHUP'd child's death would only delay ptysup's exit by 0.1 s.
            self._proc.delayafterclose = 0
        with contextlib.suppress(OSError):
            self._proc.close(force=True)
