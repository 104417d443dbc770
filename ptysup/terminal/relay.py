"""The hot path: one select loop moving the agent's bytes to the person at once.

Agent output is written to the person's terminal before anything else looks at it; only
then is it handed to observers (the screen model's feeder and the recording), which must
not block. The person's keystrokes go to the agent, signals arrive as fd events.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ptysup.terminal.signals import read_signals
from ptysup.terminal.tty_ import HUNG_UP, window_size

BATCH = 64 * 1024  # the most agent output read per wake-up, and handed to observers at once
HOLD = 0.002  # seconds output may wait for more before the observers get it


@dataclass
class RelayHandlers:
    """What the relay tells the rest of ptysup; each must return quickly."""

    on_output: Callable[[bytes], object]  # (what it returns is ignored)
    on_agent_eof: Callable[[], None]
    on_signal: Callable[[int], None]
    on_resize: Callable[[int, int], None]
    to_person: Callable[[bytes], bytes] | None = None  # agent output → what the person gets
    on_written: Callable[[bytes], None] | None = None  # after output reached the person
    on_poke: Callable[[], None] | None = None  # the wake fd got a byte other than STOP
    on_pause: Callable[[], None] | None = None  # output paused: nothing more within HOLD
    on_input: Callable[[bytes], bytes] | None = None  # the person's keys → what the agent gets


class OutputTime:
    """When the relay last moved the agent's output: the clock a quiet spell is timed on.

    Set by the relay's thread once per read burst (one float, no parsing), read by any:
    the screen model may lag the relay by seconds under a flood on a loaded machine, so
    a quiet spell timed on the model's updates ended turns while output still poured in.
    """

    at: float = -math.inf


class AgentSide(Protocol):
    """The agent's end of the relay (an AgentProcess: its PTY master)."""

    @property
    def fd(self) -> int: ...

    def read(self) -> bytes: ...

    def write(self, data: bytes) -> None: ...


STOP = b"x"  # on the wake fd: the run is over; any other byte is a poke


def write_all(fd: int, data: bytes) -> None:
    """Write every byte, looping over partial writes."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            select.select([], [fd], [])


def write_to_terminal(fd: int, data: bytes) -> None:
    """Write every byte to the person's terminal; nothing if it is gone (a hangup ends
    the run through SIGHUP and the relay, not through whichever write saw it first)."""
    try:
        write_all(fd, data)
    except OSError as exc:
        if exc.errno not in HUNG_UP:
            raise


class Relay:
    """agent PTY → the person's terminal; keystrokes → agent; signals → handlers."""

    def __init__(
        self,
        agent: AgentSide,
        handlers: RelayHandlers,
        *,
        signal_fd: int,
        wake_fd: int,
        out_fd: int | None = None,
        in_fd: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        moved: OutputTime | None = None,
    ) -> None:
        self._agent = agent
        self._moved = moved
        self._clock = clock
        self._h = handlers
        self._signal_fd = signal_fd
        self._wake_fd = wake_fd
        self._out_fd = out_fd
        self._in_fd = in_fd
        self._held: list[bytes] = []  # output the person has, the observers not yet
        self._held_size = 0
        self._held_since = 0.0
        self._last_read = 0.0
        self._paused = True  # no output since the last on_pause
        self._gone = False  # the person's terminal hung up
        self._hangup_told = False

    def run(self) -> None:
        """Relay until something writes to the wake fd (the run is over)."""
        fds = [self._agent.fd, self._signal_fd, self._wake_fd]
        if self._in_fd is not None:
            fds.append(self._in_fd)
        # Non-blocking, so one wake-up can drain what the agent wrote (see _agent_readable).
        blocking = os.get_blocking(self._agent.fd)
        os.set_blocking(self._agent.fd, False)
        try:
            self._loop(fds)
        finally:
            with contextlib.suppress(OSError):
                os.set_blocking(self._agent.fd, blocking)

    def _loop(self, fds: list[int]) -> None:
        while True:
            now = self._clock()
            timeout = None  # nothing held or due: sleep until something happens
            if self._held:
                timeout = max(0.0, self._held_since + HOLD - now)
            elif not self._paused:
                timeout = max(0.0, self._last_read + HOLD - now)
            try:
                ready, _, _ = select.select(fds, [], [], timeout)
            except InterruptedError:  # pragma: no cover - PEP 475 retries select
                continue
            now = self._clock()
            if self._held and (not ready or now - self._held_since >= HOLD):
                self._observe()
            if not ready and not self._paused and now - self._last_read >= HOLD:
                self._paused = True  # HOLD without output: a pause, not just a held batch
                if self._h.on_pause is not None:
                    self._h.on_pause()
            if self._agent.fd in ready and not self._agent_readable():
                fds.remove(self._agent.fd)
            if self._in_fd is not None and self._in_fd in ready and not self._stdin_readable():
                fds.remove(self._in_fd)
            if self._signal_fd in ready:
                self._observe()  # a resize must not overtake output from before it
                for signum in read_signals(self._signal_fd):
                    self._signal(signum)
            if self._wake_fd in ready:
                pokes = os.read(self._wake_fd, 512)
                if STOP in pokes or not pokes:
                    self._observe()
                    return
                if self._h.on_poke is not None:
                    self._h.on_poke()

    def _agent_readable(self) -> bool:
        # A PTY hands out at most about 4 KB per read. One wake-up reads on until the PTY
        # is empty (or BATCH is reached), saving a select per read; each piece goes to the
        # person at once, since the agent and the person's terminal work in parallel with
        # ptysup and wait for it (measured: writing 64 KB at once cost a quarter of the
        # throughput). The observers get output in pieces of up to BATCH, at most HOLD
        # seconds after the person did: the recording's cost per call is then paid once
        # per 64 KB instead of once per 4 KB.
        size = 0
        eof = False
        while size < BATCH:
            try:
                data = self._agent.read()
            except BlockingIOError:
                break
            if not data:
                eof = True
                break
            if self._out_fd is not None:
                shown = data if self._h.to_person is None else self._h.to_person(data)
                try:
                    write_all(self._out_fd, shown)  # the person first, before any parsing
                except OSError as exc:
                    if exc.errno not in HUNG_UP:
                        raise
                    self._hung_up()
                else:
                    if self._h.on_written is not None:
                        self._h.on_written(shown)
            self._paused = False
            if not self._held:
                self._held_since = self._clock()
            self._held.append(data)
            self._held_size += len(data)
            size += len(data)
        if size:
            self._last_read = self._clock()
            if self._moved is not None:
                self._moved.at = self._last_read
        if self._held_size >= BATCH:
            self._observe()
        if eof:
            self._observe()
            self._h.on_agent_eof()
            return False
        return True

    def _hung_up(self) -> None:
        """The person's terminal is gone: relay on without it (the agent must not block
        on a full PTY) and end the run as its SIGHUP would, in case that never comes."""
        self._out_fd = None
        self._gone = True
        self._tell_hangup()

    def _observe(self) -> None:
        """Hand held output to the observers (screen feeder, recording)."""
        if self._held:
            held = self._held[0] if len(self._held) == 1 else b"".join(self._held)
            self._held = []
            self._held_size = 0
            self._h.on_output(held)

    def _stdin_readable(self) -> bool:
        assert self._in_fd is not None
        try:
            data = os.read(self._in_fd, 65536)
        except OSError:
            data = b""
        if not data:
            return False
        if self._h.on_input is not None:
            data = self._h.on_input(data)  # ptysup's escape key is taken out here
            if not data:
                return True
        self._agent.write(data)
        return True

    def _signal(self, signum: int) -> None:
        if signum == signal.SIGHUP:
            self._tell_hangup()
        elif signum == signal.SIGWINCH:
            if self._gone or (self._out_fd is not None and not os.isatty(self._out_fd)):
                return  # a terminal that is gone has no size to follow
            rows, cols = window_size(self._out_fd)
            self._h.on_resize(rows, cols)
        else:
            self._h.on_signal(signum)

    def _tell_hangup(self) -> None:
        """SIGHUP, or a write that found the terminal gone, whichever came first: once."""
        if not self._hangup_told:
            self._hangup_told = True
            self._h.on_signal(signal.SIGHUP)
