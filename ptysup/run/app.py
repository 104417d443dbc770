"""The run's start, up to the agent's spawn: its streams, run id and event log, the
project's start (the checks' baseline, a snapshot), the second opinion, the conversation
the agent starts in, the person's window, and the agent in its PTY with its hooks.

This module loads as little of ptysup as it can: `compose` spawns the agent and only then
imports `wiring`, so the agent boots while Python loads the screen model, the loop and
the supervisor.
"""

from __future__ import annotations

import contextlib
import functools
import secrets
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

from ptysup.agents import registry
from ptysup.agents.events import HookEvent, Interrupted, TimeUp
from ptysup.agents.hookchannel import HookChannel
from ptysup.agents.private import private_dir
from ptysup.agents.profile import AgentProfile, Unanswered
from ptysup.config import RunConfig
from ptysup.events import CUT, ConsoleSink, EventLog, JsonlSink, cost_parts, shown
from ptysup.exitcodes import Outcome, RunResult
from ptysup.redact import Redactor
from ptysup.run import startstate
from ptysup.run.verify import Verifier, VerifyStop
from ptysup.store import durable
from ptysup.store.rundir import Part, RunDir
from ptysup.terminal.pty_ import AgentProcess, AgentStartError
from ptysup.terminal.relay import write_to_terminal
from ptysup.terminal.status import StatusLine
from ptysup.terminal.tty_ import window_size

if TYPE_CHECKING:
    from ptysup.agents.session import AgentSession
    from ptysup.store.runstate import StateTracker


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
    durable.make_dirs(path.parent)  # a new folder's name reaches the disk too
    log.add(JsonlSink(path))
    if not streams.interactive:
        log.add(ConsoleSink(streams.stdout, config.log_format, skip))
    return log


@dataclass(frozen=True)
class Conversation:
    """Which conversation the agent starts in: a resumed part's, reopened, or a new one."""

    profile: AgentProfile
    session_id: str | None  # the conversation's id, when the agent takes one
    resume: bool  # the agent reopens an earlier part's conversation
    # What a resumed part's agent did with the earlier conversation ("reopened …"); None:
    # it started afresh (a generic agent, or a conversation that was never saved).
    reopens: str | None


def conversation(
    config: RunConfig, part: Part, env: Mapping[str, str], log: EventLog
) -> Conversation:
    """The agent's profile, and the conversation a resumed part reopens (without a
    killed part's unanswered prompt)."""
    kind = registry.find(config.agent_cmd, config.agent)
    session_id = part.session_id if kind.resumes else None
    resume = part.reopen
    if part.unsaved is not None:
        log.emit(
            "warning",
            message=f"the agent never saved conversation {part.unsaved}: a new one starts",
        )
    reopens = kind.reopens if resume and kind.resumes else None
    left = kind.unanswered(session_id, env) if reopens and session_id else None
    if reopens and left is not None:
        reopens, session_id = _unanswered(left, reopens, session_id, log)
        resume = left.dropped
    return Conversation(kind.profile(session_id, resume), session_id, resume, reopens)


@dataclass(frozen=True)
class Window:
    """The person's terminal, if they watch, and the agent's size in it."""

    rows: int  # the agent's size (the terminal's, less the status row)
    cols: int
    in_fd: int | None  # the person's keyboard, if they can type
    out_fd: int | None  # the person's terminal, if they watch
    status: StatusLine | None
    interactive: bool


def window(config: RunConfig, streams: Streams, clock: Callable[[], float]) -> Window:
    """The person's terminal and the status row, when it fits, below the agent."""
    interactive = streams.interactive
    out_fd = streams.fd(streams.stdout) if interactive else None
    in_fd = streams.fd(streams.stdin) if interactive and _isatty(streams.stdin) else None
    rows, cols = window_size(out_fd)
    status = None
    if out_fd is not None and config.status and StatusLine.fits(rows):
        status = StatusLine(functools.partial(write_to_terminal, out_fd), rows, cols, clock)
        rows, cols = status.agent_size()
    return Window(rows, cols, in_fd, out_fd, status, interactive)


def spawn(
    config: RunConfig,
    env: Mapping[str, str],
    part: Part,
    talk: Conversation,
    size: Window,
    log: EventLog,
    stack: contextlib.ExitStack,
    hooks: Hooks,
) -> AgentProcess | RunResult:
    """The agent started in its PTY, with its hook channel and private folder (`stack`
    ends the agent and removes them); agent_start said. A failed start is the result."""
    channel = None
    if talk.profile.uses_hooks:
        channel = stack.enter_context(
            HookChannel(
                on_event=hooks.hear,
                on_foreign=lambda why: log.emit("warning", message=f"hook ignored: {why}"),
                clock=time.monotonic,
                run_id=part.run_id,
            )
        )
    private = stack.enter_context(private_dir(part.run_id, env))
    launch = talk.profile.launch(config.agent_cmd, env, channel, private)
    try:
        agent = AgentProcess.spawn(
            launch.argv, cwd=str(config.cwd), env=launch.env, size=(size.rows, size.cols)
        )
    except AgentStartError as exc:
        log.emit("error", message=str(exc))
        return RunResult(Outcome.AGENT_EXITED, 0, str(exc))
    stack.callback(agent.close)
    stack.callback(agent.terminate)
    log.emit(
        "agent_start",
        pid=agent.pid,
        argv=list(config.agent_cmd),
        profile=talk.profile.name,
        size=[size.rows, size.cols],
        interactive=size.interactive,
        session_id=talk.session_id,
    )
    return agent


def prepare(
    config: RunConfig,
    log: EventLog,
    env: Mapping[str, str],
    part: Part | None,
    streams: Streams,
) -> startstate.Prepared | RunResult:
    """The run's start, before the agent exists: its checks' baseline (a stop signal ends
    the command running at once; the time budget counts) and a snapshot of the project.
    A gate the checks cannot tell with is said on stderr, once."""
    stop = VerifyStop()
    make = functools.partial(
        Verifier, cwd=str(config.cwd), env=env, timeout=config.verify_timeout, stop=stop
    )
    resumed = part is not None and part.resumed is not None
    done = part.resumed.iterations if part is not None and part.resumed is not None else 0
    deadline = time.monotonic() + config.max_time if config.max_time and not resumed else None
    run_dir = RunDir.of(config, part.run_id if part is not None else new_run_id()).path
    try:
        prepared = startstate.interruptible(
            lambda: startstate.prepare(
                config, log, run_dir, resumed=resumed, make=make, deadline=deadline
            ),
            stop,
        )
    except Interrupted as exc:
        return RunResult(Outcome.SIGNAL, done, f"signal {exc.signum}", exc.signum)
    except TimeUp:
        reason = "time budget used up by the checks' baseline"
        log.emit("warning", message=reason)
        return RunResult(Outcome.TIME, done, reason)
    warning = prepared.baseline.warning() if prepared.baseline is not None else None
    if warning is not None:
        log.emit("warning", message=warning)
        _say(streams, f"warning: {warning}")
    return prepared


def second_opinion(
    config: RunConfig, log: EventLog, env: Mapping[str, str], streams: Streams
) -> tuple[str, ...] | None:
    """The run's second opinion; the one `auto` picked is said on stderr and in an event
    (the preflight refused a run for which it found none)."""
    if not config.second_opinion:
        return None
    # Loaded here, not at the top: it brings the supervisor's modules, which load while
    # the agent boots (tests/pty/test_startup.py).
    from ptysup.run import second

    choice = second.choose(config, env.get("PATH"))
    if choice.auto and choice.argv is not None:
        log.emit(
            "second_opinion_auto",
            command=list(choice.argv),
            agent=choice.agent,
            judge=choice.judge,
        )
        _say(streams, choice.said())
    return choice.argv


def _say(streams: Streams, line: str) -> None:
    """One `ptysup:` line on stderr before the agent starts (its terminal is not raw yet)."""
    with contextlib.suppress(OSError, ValueError):
        streams.stderr.write(f"ptysup: {line}\n")
        streams.stderr.flush()


def _unanswered(
    left: Unanswered, reopens: str, session_id: str | None, log: EventLog
) -> tuple[str | None, str | None]:
    """A killed part's unanswered prompt, out of the conversation before it is reopened
    (the agent would join the next message to it): what the supervisor is told the agent
    did, and the conversation to reopen. When the prompt was all it held, a new one
    starts (None, None: the profile picks its id, and its SessionStart tells run.json)."""
    if not left.dropped:
        log.emit(
            "warning",
            message="the agent's only prompt was never answered: a new conversation starts",
            text=left.prompt,
        )
        return None, None
    log.emit(
        "warning",
        message="the agent's last prompt was never answered: it is taken out of the "
        "conversation, so that the next message arrives alone",
        text=left.prompt,
    )
    return f"{reopens}, without its last prompt, which was never answered", session_id


class SessionLearner:
    """The id of the conversation the agent is in, from each of its SessionStart hooks: the
    one it picked itself, and the new one each /clear starts (every agent
    that clears), so that a resume reopens the conversation the run was in last."""

    def __init__(self, known: str | None, on_session: Callable[[str], object] | None) -> None:
        self._known = known
        self._on_session = on_session

    def hear(self, event: HookEvent) -> None:
        """Pass a SessionStart's id on, if it is news."""
        session = event.payload.get("session_id")
        if event.name != "SessionStart" or not isinstance(session, str) or not session:
            return
        if session != self._known:
            self._known = session
            if self._on_session is not None:
                self._on_session(session)


class Hooks:
    """Where the agent's hooks go, in ptysup's vocabulary: the run's state hears each at
    once, the session (once there is one) in its turn. A waiting hook the profile drops
    is answered with nothing."""

    def __init__(self, profile: AgentProfile, state: StateTracker, learner: SessionLearner) -> None:
        self._profile = profile
        self.state = state
        self._learner = learner
        self.session: AgentSession | None = None  # set as soon as it exists

    def hear(self, event: HookEvent) -> None:
        translated = self._profile.hook(event)
        if translated is None:
            if event.reply is not None:
                event.reply.send("")
            return
        event = translated
        self._learner.hear(event)
        self.state.hook(event.name, event.payload)
        session = self.session
        if session is not None:
            session.post(event)


def summary_line(
    result: RunResult,
    path: Path,
    steps: str = "",
    redact: Callable[[str], str] = lambda text: text,
) -> str:
    """The one line printed after a run in a terminal, with why it ended: the status line
    that showed the last decision is gone by then."""
    where = f"; events: {path}"
    reason = redact(result.reason)
    # What the person must act on is shown whole; every reason on one line, nothing in it
    # acting on the terminal (a supervisor's words).
    whole = result.outcome in (Outcome.ESCALATED, Outcome.LOG_ERROR)
    why = f": {shown(reason, len(reason) if whole else CUT)}" if reason.strip() else ""
    if why.endswith(".") and not why.endswith(".."):  # a sentence's stop before "; events"
        why = why[:-1]
    steps = f"; {steps}" if steps else ""
    # A resumed run's cost is every part's: its breakdown names the earlier parts too.
    spent = {
        "cost_usd": result.cost_usd,
        "agent_cost_usd": result.agent_cost_usd,
        "supervisor_cost_usd": result.supervisor_cost_usd,
    }
    cost = f", cost ${result.cost_usd:.4f} ({cost_parts(spent)})"
    return (
        f"ptysup: {result.outcome.value} after {result.iterations} iteration(s) "
        f"(exit {result.exit_code}){cost}{why}{steps}{where}"
    )
