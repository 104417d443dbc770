"""The run's record: its outputs checked, its event log opened with the sinks that listen
to it, run_start (or run_resume) … run_end, the summaries, a bug or a refusal as a result.

`compose` opens the record first and finishes it last: whatever happens after the log is
open — a missing command, a signal, a bug — the last event written is run_end.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ptysup import __version__, notify
from ptysup.agents import hookchannel as hooks
from ptysup.agents import private
from ptysup.config import RunConfig
from ptysup.events import Event, EventLog, failure_text
from ptysup.exitcodes import ExitCode, Outcome, RunResult
from ptysup.redact import Redactor
from ptysup.run import app, outputs, report
from ptysup.run.evidence import Journal
from ptysup.store import runstate
from ptysup.store.rundir import Part, RunDir, read_events, remove_left_temps

Fail = Callable[[str, int], int]
Preflight = Callable[[RunConfig, Mapping[str, str]], "tuple[str, int] | None"]

_PREFLIGHT_OUTCOMES = {
    ExitCode.USAGE: Outcome.USAGE,
    ExitCode.AGENT: Outcome.AGENT_EXITED,
    ExitCode.SUPERVISOR: Outcome.SUPERVISOR_FAILED,
}


def record_path(config: RunConfig, log_path: Path, run_id: str) -> Path | None:
    """Where the agent's terminal is recorded: --record, else next to the event log.

    Next to a --log-file, which may be reused by run after run, the name carries the run
    id, so no run's recording overwrites another's.
    """
    if not config.recording:
        return None
    if config.record is not None:
        return config.record
    if config.log_file is not None:
        return log_path.with_name(f"{log_path.stem}.{run_id}.cast")
    return log_path.with_suffix(".cast")


def unwritable_outputs(config: RunConfig, part: Part) -> str | None:
    """Why the run's outputs cannot be written, checked before anything is created (the
    run directory included); None when they can."""
    log_path, recording = _outputs(config, part)
    # A path the person gave is named by its option; a default one by what it is, so the
    # line does not send them looking for an option they never used.
    named = [
        ("--log-file" if config.log_file is not None else "the event log", log_path),
        ("--record" if config.record is not None else "the recording", recording),
        ("--summary-json", config.summary_json),
    ]
    return outputs.first_problem(named) or outputs.same_file(named)


def unwritable(err: OSError, path: Path) -> str:
    """`cannot write PATH: REASON`, the form every failed write is said in."""
    if not err.filename:
        err = OSError(err.errno, err.strerror or str(err), str(path))
    return failure_text(err)


def numbered(config: RunConfig, part: Part) -> Part:
    """A resumed part with its number: after the earlier parts the log names, and past
    any recording already made (a part whose run_resume the log lost), so no part's
    recording is ever overwritten."""
    if part.resumed is None:
        return part
    number = max(part.resumed.parts, 1) + 1  # the run_start is part 1, even if lost
    while (recording := _recording(config, part, number)) is not None and recording.exists():
        number += 1
    return dataclasses.replace(part, number=number)


def _recording(config: RunConfig, part: Part, number: int) -> Path | None:
    recording = record_path(config, app.log_path(config, part.run_id), part.run_id)
    if recording is not None and number > 1:
        # Each part records its own terminal: the earlier recordings stay as they were.
        recording = recording.with_name(f"{recording.stem}.part{number}.cast")
    return recording


def _outputs(config: RunConfig, part: Part) -> tuple[Path, Path | None]:
    """The run's event log and this part's recording."""
    return app.log_path(config, part.run_id), _recording(config, part, part.number)


@dataclass(frozen=True)
class Record:
    """The run's record, open: its event log with every sink that listens to it, from
    run_start (or run_resume) to run_end."""

    log: EventLog
    log_path: Path
    recording: Path | None  # this part's terminal recording, if one is made
    summary: report.RunSummary  # every part's events, for the summaries at the end
    notifier: notify.Notifier | None
    tracker: runstate.StateTracker  # state.json
    journal: Journal  # the supervisor's memory of the run, every part of it
    run_dir: RunDir
    began: float  # on the monotonic clock; a resumed run's earlier parts count


def open_record(
    config: RunConfig, env: Mapping[str, str], part: Part, run_dir: RunDir, streams: app.Streams
) -> Record | str:
    """The run's record opened and run_start written, or why it cannot be (a line for
    `ptysup:`). The run directory's lock is held."""
    log_path, recording = _outputs(config, part)
    earlier = read_events(log_path) if part.resumed is not None else []
    if part.resumed is not None:  # the lock is held: no other part of this run is alive
        hooks.remove_left(part.run_id)
        private.remove_left(part.run_id, env)
        remove_left_temps(run_dir.path)
    try:
        github = report.in_github_actions(env) and config.log_format == "text"
        log = app.open_log(
            config, log_path, streams, report.GITHUB_PRINTS if github else frozenset()
        )
    except OSError as exc:
        return unwritable(exc, log_path)
    # Every run has its run directory (run.json, the lock), whatever --log-file says.
    # (.ptysup/ for the default runs_dir; a batch's child gets an absolute one)
    outputs.ignore_in_git((config.cwd / config.runs_dir).parent)
    summary, notifier = _listeners(config, env, log, earlier, streams)
    began = time.monotonic()
    if part.resumed is not None:
        began -= part.resumed.elapsed_s  # run_end's elapsed_s counts every part
    try:
        run_dir.store(config, part.session_id, log_path, recording)
    except OSError as exc:
        log.close()
        return unwritable(exc, run_dir.path)
    # state.json follows the run from run_start to run_end (see ptysup.store.runstate).
    tracker = runstate.StateTracker(
        run_dir.path / runstate.STATE_FILE,
        part.run_id,
        os.getpid(),
        redact=Redactor.with_extra(config.redact),
        warn=lambda err: _say(failure_text(err)),
    )
    started = _started(config, log, part, log_path, recording)
    if log.errors:
        log.close()
        return unwritable(log.errors[0], log_path)
    # state.json starts once the log holds the start: a disk full from the outset is said
    # in one line (the log's), not once more for state.json.
    tracker.write(started)
    log.add(tracker)
    journal = Journal()
    journal.replay(earlier)
    for sink in journal.sinks():
        log.add(sink)
    # From here on, a failed write is said at once, marked for runs and resume, and
    # ends the run (wiring) with its own exit code, never as a success.
    log.on_failure(lambda err: _failed_write(err, run_dir, part))
    return Record(log, log_path, recording, summary, notifier, tracker, journal, run_dir, began)


def _listeners(
    config: RunConfig,
    env: Mapping[str, str],
    log: EventLog,
    earlier: list[dict[str, Any]],
    streams: app.Streams,
) -> tuple[report.RunSummary, notify.Notifier | None]:
    """The log's first sinks: the summary (of every part), the notifier, and GitHub's
    workflow commands in a GitHub Actions job."""
    summary = report.RunSummary()
    for old in earlier:  # the summary covers every part of the run
        fields = {k: v for k, v in old.items() if k not in ("ts", "event")}
        summary.write(Event(str(old["event"]), float(old.get("ts") or 0), fields))
    log.add(summary)
    notifier = notify.notifier(
        config.notify,
        config.notify_url,
        config.notify_on,
        cwd=str(config.cwd),
        env=env,
        warn=lambda text: log.emit("warning", **notify.warning_fields(text)),
    )
    log.add(notifier)
    if report.in_github_actions(env):
        log.add(report.GithubSink(streams.stdout))
    return summary, notifier


def _started(
    config: RunConfig, log: EventLog, part: Part, log_path: Path, recording: Path | None
) -> Event:
    """run_start, or a resumed part's run_resume."""
    return log.emit(
        "run_start" if part.resumed is None else "run_resume",
        run_id=part.run_id,
        version=__version__,
        task=config.task,
        max_iter=config.max_iter,
        max_time_s=config.max_time,
        max_cost_usd=config.max_cost,
        wind_down=config.wind_down,
        agent_cmd=list(config.agent_cmd),
        supervisor_cmd=list(config.supervisor_cmd),
        second_opinion=list(config.second_opinion) if config.second_opinion else None,
        verify=[list(v) for v in config.verify],
        cwd=str(config.cwd),
        log_file=str(log_path),
        record=str(recording) if recording else None,
        **_part_fields(config, part),
    )


def refused(problem: tuple[str, int], fail: Fail) -> RunResult:
    """The preflight's refusal, said on stderr, as the run's result."""
    message, code = problem
    fail(message, code)
    return RunResult(_PREFLIGHT_OUTCOMES[ExitCode(code)], 0, message)


def crashed(exc: Exception, log: EventLog, debug: bool, fail: Fail) -> RunResult:
    """A bug, in the log with its traceback and on stderr, as the run's result."""
    detail = traceback.format_exc()
    log.emit("error", message=f"{type(exc).__name__}: {exc}", traceback=detail)
    if debug:
        sys.stderr.write(detail)
    fail(f"internal error: {type(exc).__name__}: {exc}", ExitCode.INTERNAL)
    return RunResult(Outcome.ERROR, 0, f"{type(exc).__name__}: {exc}")


def said(record: Record, result: RunResult) -> str:
    """The line said after a run in a terminal."""
    steps = report.steps_line(record.summary.to_dict())
    return app.summary_line(result, record.log_path, steps, record.log.redacted)


def _part_fields(config: RunConfig, part: Part) -> dict[str, object]:
    """run_start's plan and session; run_resume's account of what the earlier parts used."""
    fields: dict[str, object] = {
        "plan": config.plan.path if config.plan is not None else None,
        "session_id": part.session_id,
    }
    before = part.resumed
    if before is not None:
        fields.update(
            part=part.number,
            elapsed_before_s=before.elapsed_s,
            iterations=before.iterations,
            cost_usd=before.cost_usd,
            wound_down=before.wound_down,  # told already: this part does not tell it again
            step=before.step,
            said=part.say,
        )
    return fields


def learnt_session(run_dir: RunDir, log: EventLog, session_id: str) -> None:
    """The agent is in a conversation with another id: one it picked itself, or a
    new one after /clear. run.json keeps it at once, so that a resume after a kill reopens
    the conversation the run was in last."""
    try:
        run_dir.learn_session(session_id)
    except OSError as exc:
        log.emit("warning", message=f"cannot keep the session id in run.json: {exc}")
        return
    log.emit("session", session_id=session_id)


def _failed_write(err: OSError, run_dir: RunDir, part: Part) -> None:
    """A write to the event log failed: say so on stderr now, and mark the run."""
    text = failure_text(err)
    _say(text)
    run_dir.mark_incomplete(text, part.number)


def _say(text: str) -> None:
    """One `ptysup:` line on stderr, now; the terminal may be raw while the agent runs,
    so the line starts and ends at the left margin."""
    end = "\r\n" if sys.stderr.isatty() else "\n"
    sys.stderr.write(f"{end}ptysup: {text}{end}".lstrip("\n"))
    sys.stderr.flush()


def _unrecorded(log: EventLog, result: RunResult) -> RunResult:
    """A run whose log lost events ends with LOG_ERROR, whatever else it came to."""
    err = log.failed
    if err is None or result.outcome is Outcome.LOG_ERROR:
        return result
    came_to = f" (the run came to: {result.outcome.value})"
    return dataclasses.replace(
        result, outcome=Outcome.LOG_ERROR, reason=failure_text(err) + came_to, signum=None
    )


def finish(
    record: Record, result: RunResult, config: RunConfig, env: Mapping[str, str]
) -> RunResult:
    """Log run_end and write the summaries; the result, LOG_ERROR if the log failed."""
    log = record.log
    result = _unrecorded(log, result)
    log.emit(
        "run_end",
        outcome=result.outcome.value,
        exit_code=result.exit_code,
        iterations=result.iterations,
        reason=result.reason,
        elapsed_s=round(time.monotonic() - record.began, 3),
        cost_usd=round(result.cost_usd, 6),
        agent_cost_usd=result.agent_cost_usd,
        supervisor_cost_usd=result.supervisor_cost_usd,
    )
    log.close()
    result = _unrecorded(log, result)  # run_end itself, or the last flush, failed
    data = record.summary.to_dict()
    try:
        if config.summary_json is not None:
            report.write_json(config.summary_json, data)
        report.append_step_summary(data, env)
    except OSError as exc:
        where = exc.filename or config.summary_json
        print(f"ptysup: cannot write the summary: {exc.strerror or exc}: {where}", file=sys.stderr)
    return result
