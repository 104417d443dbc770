"""What a run builds once its agent is started — the supervisor's runners, the screen model
and the session, the recording, the heartbeat, the checks, the plan, the decision loop,
the attach socket — and the drive: the relay in this thread, the loop in another.

`compose` calls these in order; it spawns the agent first and imports this module only
then, so the agent boots while Python loads the screen model, the loop and the
supervisor (scripts/bench.py: a run's fixed cost before the agent's first byte).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ptysup.agents.events import (
    AgentExit,
    HaltRequest,
    ScreenState,
    ScreenUpdate,
    StopRequest,
)
from ptysup.agents.person import Person, PersonKeys
from ptysup.agents.profile import AgentProfile
from ptysup.agents.session import AgentSession, Timings
from ptysup.agents.waits import WaitPolicy
from ptysup.attach.server import AttachError, AttachServer, Tap, socket_dir
from ptysup.attach.snapshot import render
from ptysup.attach.steerproto import Request
from ptysup.config import RunConfig, backoff_schedule
from ptysup.events import EventLog, failure_text
from ptysup.exitcodes import Outcome, RunResult
from ptysup.notify import Notifier, TerminalChannel
from ptysup.redact import Redactor
from ptysup.run.app import Conversation, Hooks, Window
from ptysup.run.evidence import Journal, RunEvidence, Start
from ptysup.run.gitstate import git_fingerprint
from ptysup.run.heartbeat import Heartbeat
from ptysup.run.loop import AFRESH, Judging, LoopConfig, RunLoop, Spent
from ptysup.run.plandriver import MakeVerifier, PlanDriver
from ptysup.run.second import SecondJudge
from ptysup.run.steering import answer_line, dialog_text, steering_for
from ptysup.run.tamper import ChecksIn, TamperGuard
from ptysup.run.turns import TURNS, TurnLog
from ptysup.run.verify import Verifier, VerifyStop
from ptysup.run.waiting import WaitBoard
from ptysup.store import pagelink
from ptysup.store.rundir import Part, RunDir
from ptysup.store.runstate import StateTracker
from ptysup.supervisor.decide import Supervisor
from ptysup.supervisor.judge import (
    JudgeOptions,
    judge_dir,
    lean_argv,
    lean_env,
    takes_system_prompt,
)
from ptysup.supervisor.parse import Action, Decision
from ptysup.supervisor.prompt import SUPERVISOR_MARKER
from ptysup.supervisor.runner import SupervisorRunner
from ptysup.terminal.cursor import QUERY, WAIT_S, CursorAnswer
from ptysup.terminal.inject import Typist
from ptysup.terminal.keys import EscapeKeys, describe
from ptysup.terminal.modes import BRACKETED_PASTE, ModeTracker
from ptysup.terminal.pty_ import AgentProcess
from ptysup.terminal.record import Recording
from ptysup.terminal.relay import STOP, OutputTime, Relay, RelayHandlers, write_to_terminal
from ptysup.terminal.screen import ScreenFeeder, ScreenModel, ScreenSnapshot
from ptysup.terminal.signals import STOP_SIGNALS, signal_pipe
from ptysup.terminal.status import StatusLine, StatusSink
from ptysup.terminal.ticker import Ticker
from ptysup.terminal.tty_ import raw

AGENT_GONE = "the agent's exit"  # what overtook a decision when the agent exited
SUSPENDED = "the agent suspended itself (Ctrl-Z) where no shell can bring it back: resumed it"
STOP_GRACE_S = 5.0  # after a stop signal, the most the run may take to wind down
BLOCKED_SETTLE_S = 2.0  # without a person, a first-run dialog shown this long ends the start
CATCH_UP_S = 0.2  # after a grow, the most the relay waits for the model to catch up
SCREEN_TAIL = 25  # lines of the agent's screen printed when a run fails without a terminal


def runners(
    config: RunConfig,
    env: Mapping[str, str],
    part: Part,
    second_opinion: Sequence[str] | None,
    stack: contextlib.ExitStack,
) -> tuple[SupervisorRunner, SupervisorRunner | None]:
    """The supervisor's runner in its own folder, and the second opinion's, if asked;
    `stack` closes them."""
    judge = stack.enter_context(judge_dir(config.supervisor_cmd, env, part.run_id))
    options = JudgeOptions(config.supervisor_tools, config.supervisor_model, judge)
    runner = SupervisorRunner(
        lean_argv(config.supervisor_cmd, options),
        timeout=config.supervisor_timeout,
        cwd=str(config.cwd),
        env=lean_env(config.supervisor_cmd, env, judge),
        warm=config.warm_supervisor,
        prelude=SUPERVISOR_MARKER + "\n",  # every prompt's first line (see build_prompt)
    )
    stack.callback(runner.close)
    second = _second_runner(config, env, second_opinion)
    if second is not None:
        stack.callback(second.close)
    return runner, second


@dataclass(frozen=True)
class Watched:
    """The agent's screen as ptysup models it, and the session that reads it."""

    screen: ScreenModel
    modes: ModeTracker  # the terminal modes the agent switched on
    feeder: ScreenFeeder
    moved: OutputTime  # the relay's clock of the agent's output
    session: AgentSession
    board: WaitBoard  # what the run waits on a person for, for whoever steers it


def watch(
    config: RunConfig,
    agent: AgentProcess,
    talk: Conversation,
    size: Window,
    log: EventLog,
    hooks: Hooks,
    runners: Sequence[SupervisorRunner],
    stack: contextlib.ExitStack,
) -> Watched:
    """The screen model, fed by its own thread, and the agent's session over it; the
    hooks post to the session from now on. `stack` stops the feeder."""
    profile, state, clock = talk.profile, hooks.state, time.monotonic
    # Without a person's terminal, the screen model answers the agent's terminal queries.
    screen = ScreenModel(size.rows, size.cols, answer=None if size.interactive else agent.write)
    modes = ModeTracker()
    board = WaitBoard()
    feeder = ScreenFeeder(  # started below, once the session it posts to exists
        screen,
        on_update=lambda: session.post(
            ScreenUpdate(_screen_state(profile, screen, state, board), clock())
        ),
        on_error=lambda exc: log.emit(
            "warning", message=f"screen model error: {type(exc).__name__}: {exc}"
        ),
        signal_osc=profile.signal_osc,
    )
    moved = OutputTime()
    session = AgentSession(
        profile,
        Typist(agent.write, bracketed=lambda: modes.on(BRACKETED_PASTE)),
        screen.snapshot,
        log,
        Timings(
            ready=config.start_timeout,
            blocked=None if size.interactive else BLOCKED_SETTLE_S,
            idle=config.idle,
            turn=config.turn_timeout,
        ),
        clock,
        kill=agent.terminate,
        person=Person(present=size.in_fd is not None, clock=clock),
        moved=moved,
        caught_up=feeder.caught_up,
    )
    session.person.enter_submits = not profile.uses_hooks
    session.reopened = talk.resume  # its earlier parts' spend is counted already
    # A run whose events cannot be recorded ends at once: nothing it does after counts.
    log.on_failure(functools.partial(_halt, session, runners))
    hooks.session = session
    stack.callback(_note_rejected, screen, log)  # after the feeder stopped (LIFO)
    feeder.start()
    stack.callback(feeder.stop)
    return Watched(screen, modes, feeder, moved, session, board)


def record_terminal(
    path: Path | None,
    size: Window,
    env: Mapping[str, str],
    log: EventLog,
    stack: contextlib.ExitStack,
) -> Recording | None:
    """The agent's terminal recorded, if asked; `stack` completes the file."""
    if path is None:
        return None
    # With a person at the terminal, ptysup exits as soon as the run ends and the
    # writer completes the file on its own; in CI, where the files are collected
    # right after, the run waits for it.
    made = Recording(
        path,
        size.rows,
        size.cols,
        time.monotonic,
        env={"TERM": env.get("TERM", "")},
        wait_at_close=not size.interactive,
    )
    log.add(made)  # markers and typed text
    stack.callback(_finish_recording, made, log)
    return made


def start_heartbeat(
    config: RunConfig,
    part: Part,
    log: EventLog,
    watched: Watched,
    size: Window,
    stack: contextlib.ExitStack,
) -> None:
    """Says "still working" in a quiet CI log; marks the run alive in every run."""
    beat = Heartbeat(
        log,
        tools=lambda: len(watched.session.activity.tools),
        say=not size.interactive,
        alive=RunDir.of(config, part.run_id).mark_alive,
    )
    log.add(beat)
    beat.start()
    stack.callback(beat.stop)


def verifiers(
    config: RunConfig, env: Mapping[str, str], stop: VerifyStop
) -> Callable[..., Verifier]:
    """How the run makes its checks' commands; `stop` ends one at once at a stop signal."""
    return functools.partial(
        Verifier,
        cwd=str(config.cwd),
        env=env,
        timeout=config.verify_timeout,
        clock=time.monotonic,
        stop=stop,
    )


def checks_in(verifier_for: Callable[..., Verifier], env: Mapping[str, str]) -> ChecksIn:
    """The checks, run in another folder (the tamper guard's scratch copy)."""
    return functools.partial(_checks_in, verifier_for, env)


def escape_keys(config: RunConfig, size: Window) -> EscapeKeys | None:
    """ptysup's escape key, for a person who can type."""
    return EscapeKeys(config.escape_key) if config.escape_key and size.in_fd is not None else None


def ended(
    result: RunResult,
    watched: Watched,
    log: EventLog,
    size: Window,
    attach: AttachServer | None,
    steps: PlanDriver | None,
) -> RunResult:
    """Say the outcome to the viewers and the plan; without a terminal, a failed run's
    last screen goes to the log."""
    if attach is not None:
        attach.end(result.outcome.value, result.exit_code, result.reason)
    if steps is not None and result.outcome is not Outcome.COMPLETE:
        steps.end(result.outcome.value, result.iterations)
    if not size.interactive and result.exit_code != 0:
        screen = watched.session.last_screen or _settled(watched.screen, watched.feeder)
        _log_screen_tail(screen, log)
    return result


def _halt(session: AgentSession, runners: Sequence[SupervisorRunner], err: OSError) -> None:
    """End the run: a decision under way is cancelled, the agent interrupted and ended."""
    session.post(HaltRequest(failure_text(err), session.now()))
    for runner in runners:
        runner.cancel()


def _second_runner(
    config: RunConfig, env: Mapping[str, str], argv: Sequence[str] | None
) -> SupervisorRunner | None:
    """The second opinion's own runner: lean and read-only as the judge's (its own model:
    --supervisor-model is the judge's), no warm spare (it is asked only at a [COMPLETE])."""
    if argv is None:
        return None
    return SupervisorRunner(
        lean_argv(argv, JudgeOptions(config.supervisor_tools)),
        timeout=config.supervisor_timeout,
        cwd=str(config.cwd),
        env=lean_env(argv, env),
        prelude=SUPERVISOR_MARKER + "\n",
    )


def attach_server(
    config: RunConfig,
    part: Part,
    log: EventLog,
    screen: ScreenModel,
    feeder: ScreenFeeder,
    session: AgentSession,
    agent: AgentProcess,
    steer: Callable[[Request], str] | None = None,
) -> AttachServer | None:
    """The socket `ptysup attach` connects to, or None (a warning says why)."""

    def keys(data: bytes) -> None:  # a read-write viewer types like the person
        session.person.keys(data)
        agent.write(data)

    tap = Tap(
        feed=feeder.put,
        settle=feeder.drained,
        paint=lambda: screen.painted(render),
        size=screen.size,
        keys=keys,
        steer=steer,
    )
    run_dir = RunDir.of(config, part.run_id).path
    try:
        server = AttachServer(part.run_id, run_dir, tap, socket_dir())
    except (AttachError, OSError) as exc:
        log.emit("warning", message=f"ptysup attach is not available for this run: {exc}")
        return None
    try:
        server.start()
    except OSError as exc:
        server.close()
        log.emit("warning", message=f"ptysup attach is not available for this run: {exc}")
        return None
    return server


def _screen_state(
    profile: AgentProfile, screen: ScreenModel, state: StateTracker | None, board: WaitBoard
) -> ScreenState:
    """What the screen says; a dialog opening or closing also moves the run's state, and
    shows it, as drawn, to whoever steers the run."""
    snap = screen.snapshot()
    reading = profile.screen_state(snap)
    if state is not None:
        state.screen(reading is ScreenState.DIALOG)
    board.dialog(dialog_text(snap) if reading is ScreenState.DIALOG else None)
    return reading


def _note_rejected(screen: ScreenModel, log: EventLog) -> None:
    """One warning for the whole run if the screen model skipped sequences."""
    note = screen.rejected_note()
    if note is not None:
        log.emit("warning", message=note)


def _settled(screen: ScreenModel, feeder: ScreenFeeder) -> ScreenSnapshot:
    """The screen once the feeder has caught up with the agent's output."""
    feeder.drained(1.0)
    return screen.snapshot()


def _log_screen_tail(snapshot: ScreenSnapshot, log: EventLog) -> None:
    """Show the agent's last screen in a CI log, so a failure is readable without the
    recording (redacted like every event): as the run left it, before /clear or /exit."""
    # Redacted whole, then cut: a key the cut or a line break split would not be seen.
    lines = screen_tail(log.redacted(snapshot.text()))
    if lines:
        log.emit("agent_screen", lines=lines)


def screen_tail(text: str, count: int = SCREEN_TAIL) -> list[str]:
    """The last COUNT lines of a screen's text that show something, a run of blank lines
    kept as one: a full-screen agent (Claude Code 2.1.332) draws its conversation at the
    top and its input box at the bottom, with the rows between blank."""
    lines: list[str] = []
    for line in text.splitlines():
        if line.strip() or (lines and lines[-1]):
            lines.append(line.rstrip())
    while lines and not lines[-1]:
        lines.pop()
    return lines[-count:]


def _finish_recording(recording: Recording, log: EventLog) -> None:
    """Complete the recording before run_end, so a failure can still be logged."""
    recording.close()
    if recording.error is not None:
        log.emit("warning", message=f"recording incomplete: {recording.error}")


def plan_driver(
    config: RunConfig, log: EventLog, part: Part, verifier_for: MakeVerifier
) -> PlanDriver | None:
    """The plan's driver, at the step where an earlier part left it."""
    if config.plan is None:
        return None
    done = part.resumed
    return PlanDriver(
        config.plan,
        log,
        verifier_for,
        task=config.task,
        done=done.steps_done if done else (),
        started=bool(done and done.step and done.step not in done.steps_done),
        used=done.step_iterations if done else 0,
    )


def _checks_in(
    verifier_for: Callable[..., Verifier],
    env: Mapping[str, str],
    commands: Sequence[tuple[str, ...]],
    folder: Path,
) -> Verifier:
    """The checks run in another folder (the tamper guard's scratch copy)."""
    return verifier_for(commands, cwd=str(folder), env={**env, "PWD": str(folder)})


def judging(
    config: RunConfig,
    log: EventLog,
    start: Start,
    journal: Journal,
    checks_in: ChecksIn,
    part: Part,
) -> Judging:
    """The evidence in every prompt, the tamper guard when files are protected, and the
    turn ends kept in the run directory (for `ptysup judge-bench save`)."""

    def warn(text: str) -> None:
        log.emit("warning", message=text)

    evidence = RunEvidence(journal, start, warn=warn)
    guard = None
    if start.tree is not None and start.snapshot is not None and start.protected:
        guard = TamperGuard(start.tree, start.snapshot, start.protected, start.cwd, checks_in)
    folder = RunDir.of(config, part.run_id).path / TURNS
    keep = TurnLog(folder, lambda: evidence.last, warn)
    return Judging(evidence, guard, tampered=journal.checks.tamper_refusals, keep=keep)


def _page_link(config: RunConfig, part: Part) -> Callable[[], str | None]:
    """The run's control page, looked for when an escalation waits (serve may start late)."""
    runs_dir = RunDir.of(config, part.run_id).path.parent
    return functools.partial(pagelink.control_link, runs_dir, part.run_id)


def run_loop(
    config: RunConfig,
    session: AgentSession,
    runner: SupervisorRunner,
    log: EventLog,
    clock: Callable[[], float],
    part: Part,
    steps: PlanDriver | None,
    person: bool,
    verifier_for: MakeVerifier,
    record: Path | None,
    judging: Judging,
    head_start_s: float,
    resumed_as: str | None,
    second: tuple[SupervisorRunner | None, Sequence[str]] = (None, ()),
    board: WaitBoard | None = None,
) -> RunLoop:
    """The decision loop with its supervisor (and second opinion), verifier and wait
    policy; `resumed_as` is what a resumed part's agent did with the earlier
    conversation (None: it started afresh)."""
    waits = WaitPolicy(enabled=config.wait, max_waits=config.max_waits, base_s=config.wait_base)
    backoff = backoff_schedule(config.supervisor_backoff, config.supervisor_retries)
    verifier = verifier_for(config.verify) if config.verify else None
    before = part.resumed
    loop_config = LoopConfig(
        config.task or "Carry out the plan below, one step at a time.",
        config.max_iter,
        max_time=config.max_time,
        max_cost=config.max_cost,
        max_repeats=config.max_repeats,
        wind_down=config.wind_down,
        head_start_s=head_start_s,
        prompt_template=config.prompt_template,
        questions=config.questions,
        person_present=person,
        spent=(
            Spent(before.iterations, before.elapsed_s, before.cost_usd, before.wound_down)
            if before
            else Spent()
        ),
        resumed=part.reopen,
        resumed_as=resumed_as or AFRESH,
        say=part.say,
        decided=_unfinished(part),
        # A custom template is the whole prompt as written; otherwise a claude judge gets
        # the unchanging part as its system prompt (smaller, cacheable requests).
        split_prompt=config.prompt_template is None and takes_system_prompt(config.supervisor_cmd),
        escalate_wait=config.escalate_wait,
        answer_with=answer_line(part.run_id),
        page_link=_page_link(config, part),
    )
    supervisor = Supervisor(runner, log, backoff, waits, clock)
    session.person.on_takeover.append(supervisor.abandon)
    session.on_exit.append(functools.partial(supervisor.end, AGENT_GONE))
    second_runner, second_argv = second
    if second_runner is not None:
        # The agent's exit ends it; the person's message does not (as it does not end the
        # checks before it): its [CONTINUE] then waits, its agreement ends the run.
        other = Supervisor(second_runner, log, backoff, waits, clock)
        session.on_exit.append(functools.partial(other.end, AGENT_GONE))
        judging = dataclasses.replace(judging, second=SecondJudge(second_argv, other, clock))
    return RunLoop(
        loop_config,
        session,
        supervisor,
        log,
        clock,
        verifier,
        waits,
        redact=Redactor.with_extra(config.redact),
        steps=steps,
        # ptysup's own outputs in the project are no change of the agent's.
        fingerprint=functools.partial(
            git_fingerprint,
            config.cwd,
            [p for p in (config.log_file, record, config.summary_json) if p is not None],
        ),
        judging=judging,
        board=board,
    )


def steering(
    part: Part,
    watched: Watched,
    agent: AgentProcess,
    loop: RunLoop,
    log: EventLog,
    state: StateTracker | None,
) -> Callable[[Request], str]:
    """What a person asks of the run from elsewhere (`ptysup send/budget/stop`, the
    control page), carried out; the attach socket hands each request to it."""
    bracketed = functools.partial(watched.modes.on, BRACKETED_PASTE)
    steer = steering_for(part.run_id, watched.session, agent.write, bracketed, loop, log, state)
    return steer.handle


@dataclass(frozen=True)
class Parts:
    """The running pieces the relay's handlers talk to."""

    agent: AgentProcess
    session: AgentSession
    screen: ScreenModel
    feeder: ScreenFeeder
    runners: tuple[SupervisorRunner, ...]  # the judge's, then the second opinion's
    log: EventLog
    recording: Recording | None
    status: StatusLine | None
    modes: ModeTracker
    stop_verify: VerifyStop
    notifier: Notifier | None = None
    attach: AttachServer | None = None
    moved: OutputTime | None = None  # stamped by the relay: the session's quiet clock


def drive(
    loop: RunLoop,
    parts: Parts,
    out_fd: int | None,
    in_fd: int | None,
    escape: EscapeKeys | None = None,
) -> RunResult:
    """The relay in this (main) thread, the run loop in another; both end together."""
    waker = _Waker()
    relaying = _Relaying(loop, parts, waker)
    handlers, ticker = relaying.handlers(escape)
    time_up = threading.Timer(WAIT_S, relaying.answer_late)
    time_up.daemon = True
    signals = [*STOP_SIGNALS, signal.SIGWINCH]
    worker = threading.Thread(target=relaying.loop_thread, name="ptysup-loop", daemon=True)
    try:
        with signal_pipe(signals) as sig_fd, raw(in_fd):
            relay = Relay(
                parts.agent,
                handlers,
                signal_fd=sig_fd,
                wake_fd=waker.fd,
                out_fd=out_fd,
                in_fd=in_fd,
                clock=parts.session.now,  # the session times the agent's quiet on `moved`
                moved=parts.moved,
            )
            if in_fd is not None and out_fd is not None:
                # Asked, never waited for: the answer comes with the person's keys.
                write_to_terminal(out_fd, QUERY)
                time_up.start()
            else:
                relaying.cursor.unasked()
            if parts.status is not None:
                parts.status.start()
            worker.start()
            if ticker is not None:
                ticker.start()
            try:
                relay.run()
            finally:
                time_up.cancel()
                if ticker is not None:
                    ticker.stop()
                _leave(parts, relaying.cursor, out_fd)
    finally:
        worker.join(timeout=STOP_GRACE_S)
        waker.close()
    return relaying.outcome(worker.is_alive())


class _Relaying:
    """What the relay's handlers do in the run: the agent's bytes to the screen model,
    the status row and the recording; the person's keys past the escape key; a signal,
    the agent's end of output and a resize to the run loop."""

    def __init__(self, loop: RunLoop, parts: Parts, waker: _Waker) -> None:
        self.loop, self.parts, self.waker = loop, parts, waker
        self.results: list[RunResult] = []
        self.model_started = threading.Event()
        model_input = parts.attach.output if parts.attach is not None else parts.feeder.put
        place = functools.partial(_place_model, parts)
        self.cursor = CursorAnswer(place, model_input, started=self.model_started.set)
        self.keys: PersonKeys | None = None
        self.notice = parts.session.profile.suspend_notice

    def handlers(self, escape: EscapeKeys | None) -> tuple[RelayHandlers, Ticker | None]:
        """The relay's handlers, and the status row's ticker if there is a status row."""
        parts = self.parts
        handlers = RelayHandlers(
            on_output=self.on_output,
            on_agent_eof=self.on_eof,
            on_signal=self.on_signal,
            on_resize=self.on_resize,
            on_input=self.on_input,
            on_poke=self.on_poke,
        )
        ticker = None
        sink = None
        if parts.status is not None:
            handlers.to_person = parts.status.for_person
            handlers.on_written = parts.status.after_output
            handlers.on_pause = parts.status.flush
            hint = describe(escape.prefix) if escape is not None else None
            sink = StatusSink(parts.status, self.waker.poke, self.loop.max_iter, escape_key=hint)
            parts.log.add(sink)
            ticker = Ticker(sink.tick)
            if parts.notifier is not None:
                parts.notifier.add(TerminalChannel(parts.status.alert, self.waker.poke))
        if escape is not None:
            menu = sink.menu if sink is not None else None
            session = parts.session
            self.keys = PersonKeys(
                escape, session.person, session.post, parts.log, menu, session.now
            )
        return handlers, ticker

    def loop_thread(self) -> None:
        session = self.parts.session
        try:
            # The loop reads the screen, and times the agent's quiet from it: it starts
            # with the model, which may wait for the terminal's answer (at most WAIT_S).
            self.model_started.wait()
            # Output held for the model was not quiet: the loop times it from here.
            session.last_output = max(session.last_output, session.now())
            self.results.append(self.loop.run())
        finally:
            self.waker.wake()

    def on_signal(self, signum: int) -> None:
        agent, session = self.parts.agent, self.parts.session
        agent.hung_up = agent.hung_up or signum == signal.SIGHUP
        session.post(StopRequest(signum, session.now()))
        for runner in self.parts.runners:
            runner.cancel()
        self.parts.stop_verify(signum)
        # If the loop cannot wind down in time, the relay stops anyway.
        timer = threading.Timer(STOP_GRACE_S, self.waker.wake)
        timer.daemon = True
        timer.start()
        reason = f"signal {signum}"
        self.results.append(RunResult(Outcome.SIGNAL, self.loop.iterations, reason, signum))

    def on_eof(self) -> None:
        parts = self.parts
        self.cursor.release()  # the last output must be modelled, answer or not
        parts.feeder.ended()  # no quiet spell to wait for: the output is over
        parts.feeder.drained(1.0)  # whoever handles the exit sees the agent's last screen
        parts.session.post(AgentExit(parts.agent.wait(1.0), parts.session.now()))

    def on_resize(self, rows: int, cols: int) -> None:
        parts = self.parts
        parts.log.emit("resize", rows=rows, cols=cols)  # the person's window
        self.cursor.release()  # the output so far is modelled in the old size
        if parts.status is not None:
            grown = rows - 1 > parts.status.agent_size()[0]
            parts.status.resize(rows, cols, _cursor_row(parts, self.cursor) if grown else None)
            parts.status.flush()  # the row and region now, before the agent writes again
            rows, cols = parts.status.agent_size()
        parts.screen.resize(rows, cols)  # the model first, so the repaint lands in the new size
        parts.agent.resize(rows, cols)
        if parts.recording is not None:
            parts.recording.resize(rows, cols)

    def on_output(self, data: bytes) -> None:
        parts = self.parts
        switched = parts.modes.feed(data)  # every byte, before the feeder may skip some
        if self.notice is not None and self.notice.search(data):
            parts.agent.resume()  # see AgentProfile.suspend_notice
            parts.log.emit("warning", message=SUSPENDED)
        if parts.status is not None:
            parts.status.observe(data)
            if switched:
                parts.status.erased()  # the other screen has a row of its own, not ours
        # The screen model (and any viewers), once it knows where to start.
        self.cursor.output(data)
        if parts.recording is not None:
            parts.recording.output(data)

    def past_escape(self, data: bytes) -> bytes:
        """The person's keys, ptysup's escape key taken out."""
        return self.keys.feed(data) if self.keys is not None and data else data

    def on_input(self, data: bytes) -> bytes:
        return self.past_escape(self.cursor.keys(data))  # the terminal's answer is not theirs

    def on_poke(self) -> None:
        if typed := self.past_escape(self.cursor.settle()):  # kept as an answer's start
            self.parts.agent.write(typed)
        if self.parts.status is not None:
            self.parts.status.flush()

    def answer_late(self) -> None:
        self.cursor.time_up()
        self.waker.poke()  # on_poke settles it in the relay's thread

    def outcome(self, loop_alive: bool) -> RunResult:
        """The run's result: a signal's outcome wins over whatever the loop made of the
        interruption."""
        loop = self.loop
        signalled = [
            r for r in self.results if r.outcome is Outcome.SIGNAL and r.signum is not None
        ]
        if signalled:
            if not loop_alive:
                self.parts.session.collect_cost()  # reported while the loop waited elsewhere
            first = signalled[0]
            return loop.result(Outcome.SIGNAL, first.reason, first.signum)
        if self.results:
            return self.results[0]
        return RunResult(Outcome.ERROR, loop.iterations, "run loop died")


def _place_model(parts: Parts, row: int, col: int) -> None:
    """Start the screen model where the person's cursor was (see ScreenModel.place_cursor)."""
    if parts.status is not None:  # its start puts the cursor at the row's start, above it
        row, col = min(row, parts.status.agent_size()[0] - 1), 0
    parts.screen.place_cursor(row, col)


def _cursor_row(parts: Parts, cursor: CursorAnswer) -> int | None:
    """The person's cursor's row as the screen model has it, if the model knows it: it
    started where the terminal said, is on the main screen (a full-screen program repaints
    the other one), and has caught up with what the terminal got."""
    if not cursor.placed or not parts.feeder.drained(CATCH_UP_S):
        return None
    row, main = parts.screen.painted(lambda screen, alternate: (screen.cursor.y, not alternate))[0]
    return row if main else None


def _leave(parts: Parts, cursor: CursorAnswer, out_fd: int | None) -> None:
    """Leave the person's terminal as it was: the modes the agent left on switched off
    (first: the status row to clear is on the main screen), the status row cleared, and
    the cursor on a clean line below everything the agent drew, for the summary (not
    inside its input box, nor over a full-screen program's footer)."""
    cursor.release()  # the model must have everything the agent printed
    if out_fd is None:
        if parts.status is not None:
            parts.status.stop()
        return
    reset = parts.modes.reset()
    write_to_terminal(out_fd, reset)
    if parts.status is not None:
        parts.status.stop()
    parts.feeder.drained(0.5)
    parts.screen.feed(reset)  # back on the main screen, where the summary goes
    snap = parts.screen.snapshot()
    row = max([snap.cursor[0], *(y for y, line in enumerate(snap.lines) if line.strip())])
    write_to_terminal(out_fd, b"\x1b[%d;1H\r\n" % (row + 1))


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


def _unfinished(part: Part) -> Decision | None:
    """The decision a resumed run carries out: its earlier part's last, never finished
    (ptysup.store.rundir.Progress.unfinished), unless a person answers with --say."""
    if not part.reopen or part.say is not None or part.resumed is None:
        return None
    unfinished = part.resumed.unfinished
    return None if unfinished is None else Decision(Action(unfinished[0]), unfinished[1])
