"""The hot path: one select loop moving the agent's bytes to the person at once.

Agent output is written to the person's terminal before anything else looks at it; only
then is it handed to observers (the screen model's feeder and the recording), which must
not block. The person's keystrokes go to the agent, signals arrive as fd events.
"""

from __future__ import annotations

import os
import select
import signal
from collections.abc import Callable
from dataclasses import dataclass

from ptysup.terminal.pty_ import AgentProcess
from ptysup.terminal.signals import read_signals
from ptysup.terminal.tty_ import window_size


@dataclass
class RelayHandlers:
    """What the relay tells the rest of ptysup; each must return quickly."""

    on_output: Callable[[bytes], None]
    on_agent_eof: Callable[[], None]
    on_signal: Callable[[int], None]
    on_resize: Callable[[int, int], None]


def write_all(fd: int, data: bytes) -> None:
    """Write every byte, looping over partial writes."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            select.select([], [fd], [])


class Relay:
    """agent PTY → the person's terminal; keystrokes → agent; signals → handlers."""

    def __init__(
        self,
        agent: AgentProcess,
        handlers: RelayHandlers,
        *,
        signal_fd: int,
        wake_fd: int,
        out_fd: int | None = None,
        in_fd: int | None = None,
    ) -> None:
        self._agent = agent
        self._h = handlers
        self._signal_fd = signal_fd
        self._wake_fd = wake_fd
        self._out_fd = out_fd
        self._in_fd = in_fd
        self.agent_eof = False

    def run(self) -> None:
        """Relay until something writes to the wake fd (the run is over)."""
        fds = [self._agent.fd, self._signal_fd, self._wake_fd]
        if self._in_fd is not None:
            fds.append(self._in_fd)
        while True:
            try:
                ready, _, _ = select.select(fds, [], [])
            except InterruptedError:  # pragma: no cover - PEP 475 retries select
                continue
            if self._agent.fd in ready and not self._agent_readable():
                fds.remove(self._agent.fd)
            if self._in_fd is not None and self._in_fd in ready and not self._stdin_readable():
                fds.remove(self._in_fd)
            if self._signal_fd in ready:
                for signum in read_signals(self._signal_fd):
                    self._signal(signum)
            if self._wake_fd in ready:
                return

    def _agent_readable(self) -> bool:
        data = self._agent.read()
        if not data:
            self.agent_eof = True
            self._h.on_agent_eof()
            return False
        if self._out_fd is not None:
            write_all(self._out_fd, data)  # the person first, before any parsing
        self._h.on_output(data)
        return True

    def _stdin_readable(self) -> bool:
        assert self._in_fd is not None
        try:
            data = os.read(self._in_fd, 65536)
        except OSError:
            data = b""
        if not data:
            return False
        self._agent.write(data)
        return True

    def _signal(self, signum: int) -> None:
        if signum == signal.SIGWINCH:
            rows, cols = window_size(self._out_fd)
            self._h.on_resize(rows, cols)
        else:
            self._h.on_signal(signum)
