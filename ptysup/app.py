"""One run, wired together: the agent PTY, relay, screen, hooks, loop and event log."""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from ptysup.agents.claude import ClaudeProfile
from ptysup.agents.events import AgentExit, ScreenUpdate, StopRequest
from ptysup.agents.generic import GenericProfile
from ptysup.agents.hooks import HookChannel
from ptysup.agents.profile import AgentProfile, is_claude
from ptysup.agents.session import AgentSession, Timings
from ptysup.config import RunConfig, backoff_schedule
from ptysup.events import ConsoleSink, EventLog, JsonlSink
from ptysup.exitcodes import Outcome
from ptysup.heartbeat import Heartbeat
from ptysup.loop import LoopConfig, RunLoop, RunResult
from ptysup.redact import Redactor
from ptysup.supervisor.decide import Supervisor
from ptysup.supervisor.runner import SupervisorRunner
from ptysup.terminal.inject import Typist
from ptysup.terminal.pty_ import AgentProcess, AgentStartError
from ptysup.terminal.record import Recording
from ptysup.terminal.relay import STOP, Relay, RelayHandlers, write_all
from ptysup.terminal.screen import ScreenFeeder, ScreenModel
from ptysup.terminal.signals import STOP_SIGNALS, signal_pipe
from ptysup.terminal.status import StatusLine, StatusSink
from ptysup.terminal.tty_ import raw, window_size
from ptysup.verify import Verifier
from ptysup.waits import WaitPolicy

STOP_GRACE_S = 5.0  # after a stop signal, the most the run may take to wind down
BLOCKED_SETTLE_S = 2.0  # without a person, a first-run dialog shown this long ends the start
SCREEN_TAIL = 25  # lines of the agent's screen printed when a run fails without a terminal


@dataclass
class Streams:
    """The process's streams and whether they are terminals (fakes in tests)."""

    stdin: IO[str] = field(default_factory=lambda: sys.stdin)
    stdout: IO[str] = field(default_factory=lambda: sys.stdout)
    stderr: IO[str] = field(default_factory=lambda: sys.stderr)

    @property
    def interactive(self) -> bool:
        """A person watches: stdout is a terminal (and stdin one they can type on)."""
        return _isatty(self.stdout)

    def fd(self, stream: IO[str]) -> int | None:
        try:
            return stream.fileno()
        except (OSError, ValueError, AttributeError):
            return None


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (ValueError, AttributeError):
        return False


def new_run_id() -> str:
    """A sortable, unique run id: date-time plus random hex."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def log_path(config: RunConfig, run_id: str) -> Path:
    """Where the run's JSONL events go: --log-file, else under the runs directory."""
    return config.log_file or (config.cwd / config.runs_dir / run_id / "events.jsonl")


def open_log(
    config: RunConfig, path: Path, streams: Streams, skip: frozenset[str] = frozenset()
) -> EventLog:
    """The event log with its sinks; raises OSError if the log file cannot be written.

    `skip`: events the console leaves to another sink (GitHub's workflow commands)."""
    log = EventLog(redact=Redactor.with_extra(config.redact))
    log.add(JsonlSink(path))
    if not streams.interactive:
        log.add(ConsoleSink(streams.stdout, config.log_format, skip))
    return log


def run(
    config: RunConfig,
    log: EventLog,
    streams: Streams,
    env: Mapping[str, str],
    record: Path | None = None,
) -> RunResult:
    """Start the agent, supervise it to an outcome, and leave nothing running behind."""
    profile: AgentProfile = ClaudeProfile() if is_claude(config.agent_cmd) else GenericProfile()
    interactive = streams.interactive
    out_fd = streams.fd(streams.stdout) if interactive else None
    in_fd = streams.fd(streams.stdin) if interactive and _isatty(streams.stdin) else None
    rows, cols = window_size(out_fd)
    clock = time.monotonic
    status = None
    if out_fd is not None and config.status and StatusLine.fits(rows):
        status = StatusLine(functools.partial(write_all, out_fd), rows, cols, clock)
        rows, cols = status.agent_size()
    runner = SupervisorRunner(
        config.supervisor_cmd, timeout=config.supervisor_timeout, cwd=str(config.cwd), env=env
    )

    with contextlib.ExitStack() as stack:
        holder: list[AgentSession] = []
        channel = None
        if profile.uses_hooks:
            channel = stack.enter_context(
                HookChannel(
                    on_event=lambda ev: holder[0].post(ev) if holder else None,
                    on_foreign=lambda why: log.emit("warning", message=f"hook ignored: {why}"),
                    clock=clock,
                )
            )
        argv = profile.argv(config.agent_cmd, channel.command() if channel else None)
        try:
            agent = AgentProcess.spawn(argv, cwd=str(config.cwd), env=env, size=(rows, cols))
        except AgentStartError as exc:
            log.emit("error", message=str(exc))
            return RunResult(Outcome.AGENT_EXITED, 0, str(exc))
        stack.callback(agent.close)
        stack.callback(agent.terminate)
        log.emit(
            "agent_start",
            pid=agent.pid,
            argv=list(config.agent_cmd),
            profile=profile.name,
            size=[rows, cols],
            interactive=interactive,
        )

        # Without a person's terminal, the screen model answers the agent's terminal queries.
        screen = ScreenModel(rows, cols, answer=None if interactive else agent.write)
        session = AgentSession(
            profile,
            Typist(agent.write),
            screen.snapshot,
            log,
            Timings(
                ready=config.start_timeout,
                blocked=None if interactive else BLOCKED_SETTLE_S,
                idle=config.idle,
                turn=config.turn_timeout,
            ),
            clock,
            kill=agent.terminate,
        )
        holder.append(session)
        feeder = ScreenFeeder(
            screen,
            on_update=lambda: session.post(
                ScreenUpdate(profile.screen_state(screen.snapshot()), clock())
            ),
            on_error=lambda exc: log.emit(
                "warning", message=f"screen model error: {type(exc).__name__}: {exc}"
            ),
        )
        feeder.start()
        stack.callback(feeder.stop)
        recording = None
        if record is not None:
            recording = Recording(record, rows, cols, clock, env={"TERM": env.get("TERM", "")})
            log.add(recording)  # markers and typed text
            stack.callback(_finish_recording, recording, log)
        if not interactive:
            heartbeat = Heartbeat(log, tools=lambda: len(session.activity.tools))
            log.add(heartbeat)
            heartbeat.start()
            stack.callback(heartbeat.stop)
        loop = _loop(config, session, runner, log, clock, env)
        parts = _Parts(agent, session, screen, feeder, runner, log, recording, status)
        result = _drive(loop, parts, out_fd, in_fd)
        if not interactive and result.exit_code != 0:
            _log_screen_tail(screen, feeder, log)
        return result
    raise AssertionError("unreachable")  # pragma: no cover


def _log_screen_tail(screen: ScreenModel, feeder: ScreenFeeder, log: EventLog) -> None:
    """Show the agent's last screen in a CI log, so a failure is readable without the
    recording (redacted like every event)."""
    feeder.drained(1.0)
    lines = screen.snapshot().text().splitlines()[-SCREEN_TAIL:]
    if any(line.strip() for line in lines):
        log.emit("agent_screen", lines=lines)


def _finish_recording(recording: Recording, log: EventLog) -> None:
    """Complete the recording before run_end, so a failure can still be logged."""
    recording.close()
    if recording.error is not None:
        log.emit("warning", message=f"recording incomplete: {recording.error}")


def _loop(
    config: RunConfig,
    session: AgentSession,
    runner: SupervisorRunner,
    log: EventLog,
    clock: Callable[[], float],
    env: Mapping[str, str],
) -> RunLoop:
    """The decision loop with its supervisor, verifier and wait policy."""
    waits = WaitPolicy(enabled=config.wait, max_waits=config.max_waits, base_s=config.wait_base)
    backoff = backoff_schedule(config.supervisor_backoff, config.supervisor_retries)
    verifier = (
        Verifier(config.verify, cwd=str(config.cwd), env=env, timeout=config.verify_timeout)
        if config.verify
        else None
    )
    loop_config = LoopConfig(
        config.task,
        config.max_iter,
        max_time=config.max_time,
        max_cost=config.max_cost,
        prompt_template=config.prompt_template,
    )
    supervisor = Supervisor(runner, log, backoff, waits, clock)
    return RunLoop(
        loop_config,
        session,
        supervisor,
        log,
        clock,
        verifier,
        waits,
        redact=Redactor.with_extra(config.redact),
    )


@dataclass(frozen=True)
class _Parts:
    """The running pieces the relay's handlers talk to."""

    agent: AgentProcess
    session: AgentSession
    screen: ScreenModel
    feeder: ScreenFeeder
    runner: SupervisorRunner
    log: EventLog
    recording: Recording | None
    status: StatusLine | None


def _drive(loop: RunLoop, parts: _Parts, out_fd: int | None, in_fd: int | None) -> RunResult:
    """The relay in this (main) thread, the run loop in another; both end together."""
    agent, session, runner = parts.agent, parts.session, parts.runner
    waker = _Waker()
    results: list[RunResult] = []

    def loop_thread() -> None:
        try:
            results.append(loop.run())
        finally:
            waker.wake()

    def on_signal(signum: int) -> None:
        session.post(StopRequest(signum, session.now()))
        runner.cancel()
        # If the loop cannot wind down in time, the relay stops anyway.
        timer = threading.Timer(STOP_GRACE_S, waker.wake)
        timer.daemon = True
        timer.start()
        results.append(RunResult(Outcome.SIGNAL, loop.iterations, f"signal {signum}", signum))

    def on_eof() -> None:
        parts.feeder.drained(1.0)  # whoever handles the exit sees the agent's last screen
        session.post(AgentExit(agent.wait(1.0), session.now()))

    def on_resize(rows: int, cols: int) -> None:
        parts.log.emit("resize", rows=rows, cols=cols)  # the person's window
        if parts.status is not None:
            parts.status.resize(rows, cols)
            rows, cols = parts.status.agent_size()
        parts.screen.resize(rows, cols)  # the model first, so the repaint lands in the new size
        agent.resize(rows, cols)
        if parts.recording is not None:
            parts.recording.resize(rows, cols)

    def on_output(data: bytes) -> None:
        parts.feeder.put(data)
        if parts.recording is not None:
            parts.recording.output(data)

    handlers = RelayHandlers(
        on_output=on_output, on_agent_eof=on_eof, on_signal=on_signal, on_resize=on_resize
    )
    if parts.status is not None:
        handlers.on_written = parts.status.after_output
        handlers.on_poke = parts.status.flush
        handlers.on_pause = parts.status.flush
        parts.log.add(StatusSink(parts.status, waker.poke, loop.max_iter))
    signals = [*STOP_SIGNALS, signal.SIGWINCH]
    worker = threading.Thread(target=loop_thread, name="ptysup-loop", daemon=True)
    try:
        with signal_pipe(signals) as sig_fd, raw(in_fd):
            relay = Relay(
                agent, handlers, signal_fd=sig_fd, wake_fd=waker.fd, out_fd=out_fd, in_fd=in_fd
            )
            if parts.status is not None:
                parts.status.start()
            worker.start()
            try:
                relay.run()
            finally:
                if parts.status is not None:
                    parts.status.stop()
    finally:
        worker.join(timeout=STOP_GRACE_S)
        waker.close()
    # A signal's outcome wins over whatever the loop made of the interruption.
    signalled = [r for r in results if r.outcome is Outcome.SIGNAL and r.signum is not None]
    if signalled:
        first = signalled[0]
        return RunResult(Outcome.SIGNAL, loop.iterations, first.reason, first.signum, loop.cost)
    return results[0] if results else RunResult(Outcome.ERROR, loop.iterations, "run loop died")


class _Waker:
    """A pipe whose read end wakes the relay; safe to poke from any thread, even late."""

    def __init__(self) -> None:
        self.fd, self._w = os.pipe()
        os.set_blocking(self._w, False)  # a full pipe already wakes the relay
        self._lock = threading.Lock()
        self._closed = False

    def wake(self) -> None:
        """End the relay."""
        self._send(STOP)

    def poke(self) -> None:
        """Have the relay call its on_poke handler (e.g. to draw the status line)."""
        self._send(b"p")

    def _send(self, byte: bytes) -> None:
        with self._lock:
            if not self._closed:
                with contextlib.suppress(BlockingIOError):
                    os.write(self._w, byte)

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                os.close(self._w)
                os.close(self.fd)


def summary_line(result: RunResult, path: Path) -> str:
    """The one line printed after a run in a terminal."""
    where = f"; events: {path}"
    return (
        f"ptysup: {result.outcome.value} after {result.iterations} iteration(s) "
        f"(exit {result.exit_code}){where}"
    )
