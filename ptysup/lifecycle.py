"""One supervised run from the outside: log opened, run_start … run_end, summaries, exit code.

Whatever happens after the log is open — a missing command, a signal, a bug — the last
event written is run_end.
"""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path

from ptysup import __version__, app, outputs, report
from ptysup.config import RunConfig
from ptysup.events import EventLog
from ptysup.exitcodes import ExitCode, Outcome
from ptysup.loop import RunResult

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


def supervise(
    config: RunConfig, env: Mapping[str, str], *, fail: Fail, preflight: Preflight
) -> int:
    """Run one supervised session and return the process exit code."""
    streams = app.Streams()
    run_id = app.new_run_id()
    log_path = app.log_path(config, run_id)
    recording = record_path(config, log_path, run_id)
    named = [
        ("--log-file", log_path),
        ("--record", recording),
        ("--summary-json", config.summary_json),
    ]
    unwritable = outputs.first_problem(named) or outputs.same_file(named)
    if unwritable is not None:
        return fail(unwritable, ExitCode.USAGE)
    try:
        github = report.in_github_actions(env) and config.log_format == "text"
        log = app.open_log(
            config, log_path, streams, report.GITHUB_PRINTS if github else frozenset()
        )
    except OSError as exc:
        return fail(
            f"cannot write the event log: {exc.strerror or exc}: {log_path}", ExitCode.USAGE
        )
    if config.log_file is None:
        outputs.ignore_in_git(config.cwd / config.runs_dir.parts[0])
    summary = report.RunSummary()
    log.add(summary)
    if report.in_github_actions(env):
        log.add(report.GithubSink(streams.stdout))
    start = time.monotonic()
    log.emit(
        "run_start",
        run_id=run_id,
        version=__version__,
        task=config.task,
        max_iter=config.max_iter,
        max_time_s=config.max_time,
        max_cost_usd=config.max_cost,
        agent_cmd=list(config.agent_cmd),
        supervisor_cmd=list(config.supervisor_cmd),
        verify=[list(v) for v in config.verify],
        cwd=str(config.cwd),
        log_file=str(log_path),
        record=str(recording) if recording else None,
    )
    if log.errors:
        log.close()
        err = log.errors[0]
        return fail(
            f"cannot write the event log: {err.strerror or err}: {log_path}", ExitCode.USAGE
        )
    result = RunResult(Outcome.ERROR, 0, "not started")
    try:
        problem = preflight(config, env)
        if problem is not None:
            message, code = problem
            fail(message, code)
            result = RunResult(_PREFLIGHT_OUTCOMES[ExitCode(code)], 0, message)
        else:
            result = app.run(config, log, streams, env, recording)
    except Exception as exc:  # the one place a bug becomes an exit code
        detail = traceback.format_exc()
        log.emit("error", message=f"{type(exc).__name__}: {exc}", traceback=detail)
        if config.debug:
            sys.stderr.write(detail)
        result = RunResult(Outcome.ERROR, 0, f"{type(exc).__name__}: {exc}")
        fail(f"internal error: {type(exc).__name__}: {exc}", ExitCode.INTERNAL)
    finally:
        _finish(log, result, time.monotonic() - start, config, summary, env)
    if streams.interactive:
        print(app.summary_line(result, log_path), file=sys.stderr)
    return result.exit_code


def _finish(
    log: EventLog,
    result: RunResult,
    elapsed: float,
    config: RunConfig,
    summary: report.RunSummary,
    env: Mapping[str, str],
) -> None:
    log.emit(
        "run_end",
        outcome=result.outcome.value,
        exit_code=result.exit_code,
        iterations=result.iterations,
        reason=result.reason,
        elapsed_s=round(elapsed, 3),
        cost_usd=round(result.cost_usd, 6),
    )
    log.close()
    data = summary.to_dict()
    try:
        if config.summary_json is not None:
            report.write_json(config.summary_json, data)
        report.append_step_summary(data, env)
    except OSError as exc:
        where = exc.filename or config.summary_json
        print(f"ptysup: cannot write the summary: {exc.strerror or exc}: {where}", file=sys.stderr)
