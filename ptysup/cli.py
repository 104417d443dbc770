"""The command line: options → RunConfig → a run → an exit code, errors mapped in one place."""

from __future__ import annotations

import os
import shutil
import sys
import time
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import click
import typer

from ptysup import __version__
from ptysup.config import (
    DEFAULT_IDLE,
    DEFAULT_SUPERVISOR_BACKOFF,
    DEFAULT_SUPERVISOR_RETRIES,
    DEFAULT_SUPERVISOR_TIMEOUT,
    DEFAULT_TURN_TIMEOUT,
    ConfigError,
    RunConfig,
    split_command,
)
from ptysup.exitcodes import ExitCode, Outcome
from ptysup.loop import RunResult

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

_LOG_FORMATS = ("text", "json")


@app.command(
    help="Run an AI coding agent on TASK in a PTY and supervise it with a fresh `claude -p` "
    "at every turn end.",
    epilog="Exit codes: 0 complete, 1 abort, 2 usage error, 3 budget exhausted, "
    "4 agent exited or could not start, 5 supervisor failed, 128+N killed by signal N.",
)
def run_command(
    ctx: typer.Context,
    task: Annotated[str, typer.Argument(help="What the agent should do.", show_default=False)],
    max_iter: Annotated[
        int,
        typer.Option(
            envvar="PTYSUP_MAX_ITER", min=1, help="The most supervisor decisions in one run."
        ),
    ] = 50,
    agent_cmd: Annotated[
        str,
        typer.Option(
            envvar="PTYSUP_AGENT_CMD",
            help="The agent's command line (split like a shell, never run through one).",
        ),
    ] = "claude",
    supervisor_cmd: Annotated[
        str,
        typer.Option(
            envvar="PTYSUP_SUPERVISOR_CMD",
            help="Run fresh for each decision; the prompt goes on its stdin.",
        ),
    ] = "claude -p",
    supervisor_timeout: Annotated[
        float,
        typer.Option(
            envvar="PTYSUP_SUPERVISOR_TIMEOUT",
            min=0.1,
            help="Seconds before a supervisor is killed with its process group.",
        ),
    ] = DEFAULT_SUPERVISOR_TIMEOUT,
    supervisor_retries: Annotated[
        int,
        typer.Option(
            envvar="PTYSUP_SUPERVISOR_RETRIES",
            min=0,
            help="Retries of one failed decision before giving up (exit 5).",
        ),
    ] = DEFAULT_SUPERVISOR_RETRIES,
    supervisor_backoff: Annotated[
        float,
        typer.Option(
            envvar="PTYSUP_SUPERVISOR_BACKOFF",
            min=0,
            help="Seconds before the first retry; each next one waits 4x longer (max 60).",
        ),
    ] = DEFAULT_SUPERVISOR_BACKOFF,
    log_file: Annotated[
        Path | None,
        typer.Option(
            envvar="PTYSUP_LOG_FILE",
            help="JSONL event log (default: .ptysup/runs/RUN-ID/events.jsonl).",
            show_default=False,
        ),
    ] = None,
    log_format: Annotated[
        str,
        typer.Option(
            envvar="PTYSUP_LOG_FORMAT",
            help="What to print when stdout is not a terminal: text or json.",
        ),
    ] = "text",
    idle: Annotated[
        float,
        typer.Option(
            envvar="PTYSUP_IDLE",
            min=0.1,
            help="Quiet seconds that end a turn for agents without hooks.",
        ),
    ] = DEFAULT_IDLE,
    turn_timeout: Annotated[
        float,
        typer.Option(
            envvar="PTYSUP_TURN_TIMEOUT",
            min=1,
            help="Seconds with no output and no turn end before the supervisor is asked anyway.",
        ),
    ] = DEFAULT_TURN_TIMEOUT,
    debug: Annotated[bool, typer.Option(envvar="PTYSUP_DEBUG", help="Show tracebacks.")] = False,
    version: Annotated[
        bool, typer.Option("--version", is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    if log_format not in _LOG_FORMATS:
        raise typer.BadParameter("must be text or json", param_hint="--log-format")
    ctx.obj = RunConfig(
        task=task,
        max_iter=max_iter,
        agent_cmd=split_command(agent_cmd, "--agent-cmd"),
        supervisor_cmd=split_command(supervisor_cmd, "--supervisor-cmd"),
        supervisor_timeout=supervisor_timeout,
        supervisor_retries=supervisor_retries,
        supervisor_backoff=supervisor_backoff,
        log_file=log_file,
        log_format=log_format,
        idle=idle,
        turn_timeout=turn_timeout,
        cwd=Path.cwd(),
        debug=debug,
    )


def _version_flag(args: Sequence[str]) -> bool:
    return "--version" in args and "--" not in args[: list(args).index("--version")]


def parse_args(args: Sequence[str], env: Mapping[str, str]) -> RunConfig | int:
    """Options → RunConfig, or the exit code after printing help/version/an error."""
    if _version_flag(args):
        print(f"ptysup {__version__}")
        return 0
    command = typer.main.get_command(app)
    try:
        with command.make_context("ptysup", list(args), default_map=None) as ctx:
            _with_env(ctx, env)
            command.invoke(ctx)
            config = ctx.obj
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.UsageError as exc:
        return _fail(exc.format_message(), ExitCode.USAGE)
    except ConfigError as exc:
        return _fail(str(exc), ExitCode.USAGE)
    assert isinstance(config, RunConfig)
    return config


def _with_env(ctx: click.Context, env: Mapping[str, str]) -> None:
    """Make click read PTYSUP_* from `env` rather than the process environment."""
    for key in [k for k in os.environ if k.startswith("PTYSUP_") and k not in env]:
        del os.environ[key]
    for key, value in env.items():
        if key.startswith("PTYSUP_"):
            os.environ[key] = value


def _fail(message: str, code: int) -> int:
    first = " ".join(message.split())
    print(f"ptysup: {first}", file=sys.stderr)
    return int(code)


def preflight(config: RunConfig, env: Mapping[str, str]) -> tuple[str, int] | None:
    """Problems found before anything starts: (one-line message, exit code)."""
    path = env.get("PATH", os.defpath)
    if not config.task.strip():
        return "the task is empty", ExitCode.USAGE
    if shutil.which(config.agent_cmd[0], path=path) is None:
        return f"agent command not found: {config.agent_cmd[0]}", ExitCode.AGENT
    if shutil.which(config.supervisor_cmd[0], path=path) is None:
        return f"supervisor command not found: {config.supervisor_cmd[0]}", ExitCode.SUPERVISOR
    return None


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """The whole program; returns the exit code."""
    from ptysup import app as run_app  # keeps `ptysup --help` light

    args = list(sys.argv[1:] if argv is None else argv)
    environ = dict(os.environ if env is None else env)
    parsed = parse_args(args, environ)
    if isinstance(parsed, int):
        return parsed
    config = parsed
    streams = run_app.Streams()
    run_id = run_app.new_run_id()
    try:
        log = run_app.open_log(config, run_id, streams)
    except OSError as exc:
        return _fail(
            f"cannot write the event log: {exc.strerror or exc}: {exc.filename or config.log_file}",
            ExitCode.USAGE,
        )
    start = time.monotonic()
    log.emit(
        "run_start",
        run_id=run_id,
        version=__version__,
        task=config.task,
        max_iter=config.max_iter,
        agent_cmd=list(config.agent_cmd),
        supervisor_cmd=list(config.supervisor_cmd),
        cwd=str(config.cwd),
    )
    if log.errors:
        log.close()
        err, path = log.errors[0], run_app.log_path(config, run_id)
        return _fail(
            f"cannot write the event log: {err.strerror or err}: {path}",
            ExitCode.USAGE,
        )
    result = RunResult(Outcome.ERROR, 0, "not started")
    try:
        problem = preflight(config, environ)
        if problem is not None:
            message, code = problem
            _fail(message, code)
            outcome = {
                ExitCode.USAGE: Outcome.USAGE,
                ExitCode.AGENT: Outcome.AGENT_EXITED,
                ExitCode.SUPERVISOR: Outcome.SUPERVISOR_FAILED,
            }[ExitCode(code)]
            result = RunResult(outcome, 0, message)
            return result.exit_code
        result = run_app.run(config, log, streams, environ)
        if streams.interactive or (
            result.outcome is Outcome.AGENT_EXITED and result.iterations == 0
        ):
            print(run_app.summary_line(result, run_app.log_path(config, run_id)), file=sys.stderr)
        return result.exit_code
    except Exception as exc:  # the one place a bug becomes an exit code
        detail = traceback.format_exc()
        log.emit("error", message=f"{type(exc).__name__}: {exc}", traceback=detail)
        if config.debug:
            sys.stderr.write(detail)
        result = RunResult(Outcome.ERROR, 0, f"{type(exc).__name__}: {exc}")
        _fail(f"internal error: {type(exc).__name__}: {exc}", ExitCode.INTERNAL)
        return result.exit_code
    finally:
        log.emit(
            "run_end",
            outcome=result.outcome.value,
            exit_code=result.exit_code,
            iterations=result.iterations,
            reason=result.reason,
            elapsed_s=round(time.monotonic() - start, 3),
        )
        log.close()


def entry(*_: Any) -> None:
    """Console-script entry point."""
    sys.exit(main())
