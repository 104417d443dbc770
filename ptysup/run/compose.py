"""One supervised run, composed in one place: what is built, in which order, what closes it.

Read top to bottom:

1. `supervise`: the outputs checked, the run directory locked.
2. `_recorded`: the run's record opened (lifecycle: the event log and its sinks, run.json,
   state.json, run_start or run_resume); the preflight; then the run; run_end and the
   summaries whatever happened (a bug becomes exit code 70 here, and only here).
3. `_run`: the project's start (app: the checks' baseline, a snapshot), the second
   opinion, the conversation the agent starts in, the person's window, and the agent
   spawned with its hook channel and private folder.
4. `_supervised`: only then are the heavy parts loaded (wiring), while the agent boots:
   the supervisor's runners, the screen model and the session, the recording, the
   heartbeat, the checks, the plan, the decision loop and the attach socket; then the
   drive, the relay in this thread and the loop in another, to an outcome.

Everything `_run` and `_supervised` build that must be closed goes on one ExitStack, and
is closed last built, first closed, before run_end: the attach socket, the heartbeat,
the recording, the screen feeder, the supervisor's runners and folder, then the agent
(ended, then its PTY closed), its private folder and its hook channel.
"""

from __future__ import annotations

import contextlib
import functools
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from ptysup.config import RunConfig
from ptysup.exitcodes import ExitCode, Outcome, RunResult
from ptysup.run import app, lifecycle
from ptysup.run.lifecycle import Fail, Preflight, Record
from ptysup.run.startstate import Prepared
from ptysup.run.verify import VerifyStop
from ptysup.store.rundir import Part, RunDir, RunLocked
from ptysup.terminal.pty_ import AgentProcess


def supervise(
    config: RunConfig,
    env: Mapping[str, str],
    *,
    fail: Fail,
    preflight: Preflight,
    part: Part | None = None,
) -> int:
    """Run one supervised session (or resume one: `part`) and return the exit code."""
    part = lifecycle.numbered(config, part or Part(app.new_run_id(), str(uuid.uuid4())))
    unwritable = lifecycle.unwritable_outputs(config, part)
    if unwritable is not None:
        return fail(unwritable, ExitCode.USAGE)
    run_dir = RunDir.of(config, part.run_id)
    try:
        with run_dir.lock():
            return _recorded(config, env, fail, preflight, part, run_dir)
    except RunLocked as exc:
        return fail(f"run {part.run_id} is still running ({exc})", ExitCode.USAGE)
    except OSError as exc:
        return fail(lifecycle.unwritable(exc, run_dir.path), ExitCode.USAGE)


def _recorded(
    config: RunConfig,
    env: Mapping[str, str],
    fail: Fail,
    preflight: Preflight,
    part: Part,
    run_dir: RunDir,
) -> int:
    """The run between its run_start and its run_end, which is the last event whatever
    happens in between."""
    streams = app.Streams()
    record = lifecycle.open_record(config, env, part, run_dir, streams)
    if isinstance(record, str):
        return fail(record, ExitCode.USAGE)
    result = RunResult(Outcome.ERROR, 0, "not started")
    try:
        problem = preflight(config, env)
        if problem is not None:
            result = lifecycle.refused(problem, fail)
        else:
            result = _run(config, env, part, record, streams)
    except Exception as exc:  # the one place a bug becomes an exit code
        result = lifecycle.crashed(exc, record.log, config.debug, fail)
    finally:
        result = lifecycle.finish(record, result, config, env)
    if streams.interactive:
        print(lifecycle.said(record, result), file=streams.stderr)
    return result.exit_code


def _run(
    config: RunConfig, env: Mapping[str, str], part: Part, record: Record, streams: app.Streams
) -> RunResult:
    """Take the project's start, start the agent, supervise it to an outcome, and leave
    nothing running behind."""
    began = time.monotonic()
    log = record.log
    prepared = app.prepare(config, log, env, part, streams)
    if isinstance(prepared, RunResult):
        return prepared
    second_opinion = app.second_opinion(config, log, env, streams)
    talk = app.conversation(config, part, env, log)
    size = app.window(config, streams, time.monotonic)
    learner = app.SessionLearner(
        talk.session_id, functools.partial(lifecycle.learnt_session, record.run_dir, log)
    )
    # The hooks reach state.json at once, and the session once it exists (wiring.watch).
    hooks = app.Hooks(talk.profile, record.tracker, learner)
    with contextlib.ExitStack() as stack:
        agent = app.spawn(config, env, part, talk, size, log, stack, hooks)
        if isinstance(agent, RunResult):
            return agent
        started = _Started(agent, talk, size, hooks, began)
        return _supervised(config, env, part, record, stack, started, prepared, second_opinion)
    raise AssertionError("unreachable")  # pragma: no cover


@dataclass(frozen=True)
class _Started:
    """The agent just spawned, and what its start decided for the rest of the run."""

    agent: AgentProcess
    talk: app.Conversation
    size: app.Window
    hooks: app.Hooks
    began: float  # when the run's start began (on the monotonic clock)


def _supervised(
    config: RunConfig,
    env: Mapping[str, str],
    part: Part,
    record: Record,
    stack: contextlib.ExitStack,
    started: _Started,
    prepared: Prepared,
    second_opinion: tuple[str, ...] | None,
) -> RunResult:
    """The started agent supervised to an outcome."""
    # Imported only now: the agent boots while Python loads the rest of ptysup.
    from ptysup.run import wiring

    head_start_s = time.monotonic() - started.began  # the checks' baseline, the spawn
    log, agent, talk, size = record.log, started.agent, started.talk, started.size
    runner, second = wiring.runners(config, env, part, second_opinion, stack)
    runners = tuple(r for r in (runner, second) if r is not None)
    watched = wiring.watch(config, agent, talk, size, log, started.hooks, runners, stack)
    recording = wiring.record_terminal(record.recording, size, env, log, stack)
    wiring.start_heartbeat(config, part, log, watched, size, stack)
    stop_verify = VerifyStop()  # a stop signal ends a verification command at once
    verifier_for = wiring.verifiers(config, env, stop_verify)
    steps = wiring.plan_driver(config, log, part, verifier_for)
    checks_in = wiring.checks_in(verifier_for, env)
    judging = wiring.judging(config, log, prepared.start, record.journal, checks_in, part)
    loop = wiring.run_loop(
        config,
        watched.session,
        runner,
        log,
        time.monotonic,
        part,
        steps,
        size.in_fd is not None,
        verifier_for,
        record.recording,
        judging,
        head_start_s,
        talk.reopens,
        (second, second_opinion or ()),
        watched.board,
    )
    # The run's spend is kept as the agent reports it (state.json).
    watched.session.on_spend.append(lambda _: record.tracker.spent(loop.cost))
    steer = wiring.steering(part, watched, agent, loop, log, record.tracker)
    attach = wiring.attach_server(
        config, part, log, watched.screen, watched.feeder, watched.session, agent, steer
    )
    if attach is not None:
        stack.callback(attach.close)
    parts = wiring.Parts(
        agent,
        watched.session,
        watched.screen,
        watched.feeder,
        runners,
        log,
        recording,
        size.status,
        watched.modes,
        stop_verify,
        record.notifier,
        attach,
        watched.moved,
    )
    escape = wiring.escape_keys(config, size)
    result = wiring.drive(loop, parts, size.out_fd, size.in_fd, escape)
    return wiring.ended(result, watched, log, size, attach, steps)
