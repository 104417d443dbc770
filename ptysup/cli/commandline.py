"""The command line: options → RunConfig → a run → an exit code, errors mapped in one place."""

from __future__ import annotations

import functools
import gc
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import click
import typer

from ptysup import __version__
from ptysup.cli import configfile
from ptysup.cli.help import EPILOG, GroupedCommand
from ptysup.cli.optioncheck import check_given, checks
from ptysup.config import (
    DEFAULT_IDLE,
    DEFAULT_MAX_WAITS,
    DEFAULT_NOTIFY_ON,
    DEFAULT_START_TIMEOUT,
    DEFAULT_SUPERVISOR_BACKOFF,
    DEFAULT_SUPERVISOR_RETRIES,
    DEFAULT_SUPERVISOR_TIMEOUT,
    DEFAULT_SUPERVISOR_TOOLS,
    DEFAULT_TURN_TIMEOUT,
    DEFAULT_VERIFY_TIMEOUT,
    DEFAULT_WAIT_BASE,
    ConfigError,
    RunConfig,
    parse_duration,
    split_command,
)
from ptysup.exitcodes import ExitCode
from ptysup.terminal.keys import DEFAULT_ESCAPE_KEY, parse_escape_key

ENV_PREFIX = "PTYSUP"
# Options read only from a config file, not from the command line.
_FILE_ONLY = ("prompt_template",)
# Repeatable: one item per line in PTYSUP_VERIFY etc.
_LIST_OPTIONS = ("verify", "redact", "notify", "notify_url", "notify_on")
_NOT_FROM_ENV = ("version", "help")
# PTYSUP_* variables that are no run option but that ptysup's own tools, tests and
# deployments set: never warned about.
OTHER_VARIABLES = frozenset(
    {
        "PTYSUP_CLAUDE_BIN",  # ptysup.testing.claude_env: which Claude Code to run
        "PTYSUP_LINT_TOOLS",  # ptysup.testing.lint_tools: where the linters are
        "PTYSUP_REQUIRE_E2E",  # scripts/test.sh, CI: a test that cannot run fails
        "PTYSUP_SOAK_DECISIONS",  # scripts/test.sh: the soak test's length
        "PTYSUP_TEST_RUN",  # the tests' marker in a child's environment
        "PTYSUP_REPOSITORY",  # deploy/k8s/job.yaml: the repository to clone
    }
)

# No rich markup: it would swallow "[tool.ptysup]" in the help text.
app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)

# Subcommands: NAME → "module:function", a `function(args) -> int` imported only when used.
# A task that is literally one of these words runs as `ptysup -- WORD`.
SUBCOMMANDS: dict[str, str] = {
    "replay": "ptysup.views.replay:main",
    "doctor": "ptysup.cli.doctor:main",
    "completion": "ptysup.cli.completion:main",
    "help": "ptysup.cli.commandline:help_main",
    "version": "ptysup.cli.commandline:version_main",
    "check": "ptysup.cli.check:main",
    "resume": "ptysup.cli.resume:main",
    "runs": "ptysup.views.runs:main",
    "attach": "ptysup.attach.client:main",
    "batch": "ptysup.batch.command:main",
    "serve": "ptysup.serve.cli:main",
}
_TAKE_ENV = frozenset({"resume", "batch"})  # called with the environment main() was given


def _opt(help: str, **kw: Any) -> Any:
    return typer.Option(help=help, **kw)


@app.command(
    cls=GroupedCommand,
    help="Run an AI coding agent on TASK in a PTY and supervise it with a fresh `claude -p` "
    "at every turn end. Every option can also be set as PTYSUP_<NAME> or in .ptysup.yaml / "
    "[tool.ptysup] in pyproject.toml (looked up from here to the repository root).",
    epilog=EPILOG,
)
def run_command(
    ctx: typer.Context,
    task: Annotated[
        str | None,
        typer.Argument(
            help="What the agent should do (or --task-file; optional with --plan).",
            show_default=False,
        ),
    ] = None,
    plan: Annotated[
        Path | None,
        _opt(
            "A YAML plan of steps, each with its own check (see `ptysup check`).",
            show_default=False,
        ),
    ] = None,
    task_file: Annotated[
        str | None,
        _opt(
            "Read the task from FILE ('-': standard input) instead of TASK.",
            show_default=False,
            metavar="FILE",
        ),
    ] = None,
    max_iter: Annotated[int, _opt("The most supervisor decisions in one run.", min=1)] = 50,
    max_time: Annotated[
        str | None, _opt("A second hard budget, e.g. 90m or 1h30m (exit 3).", show_default=False)
    ] = None,
    max_cost: Annotated[
        float | None,
        _opt(
            "Stop once the run's cost, agent and supervisor, reaches USD (exit 3).",
            # More than 0, as the help says (x>0): a cap of 0 would end the run before its
            # first turn. One range object validates and describes it.
            click_type=click.FloatRange(min=0, min_open=True),
        ),
    ] = None,
    agent_cmd: Annotated[
        str, _opt("The agent's command line (split like a shell, never run through one).")
    ] = "claude",
    supervisor_cmd: Annotated[
        str, _opt("Run fresh for each decision; the prompt goes on its stdin.")
    ] = "claude -p",
    supervisor_timeout: Annotated[
        float, _opt("Seconds before a supervisor is killed with its process group.", min=0.1)
    ] = DEFAULT_SUPERVISOR_TIMEOUT,
    supervisor_retries: Annotated[
        int, _opt("Retries of one failed decision before giving up (exit 5).", min=0)
    ] = DEFAULT_SUPERVISOR_RETRIES,
    supervisor_backoff: Annotated[
        float, _opt("Seconds before the first retry; each next one waits 4x longer.", min=0)
    ] = DEFAULT_SUPERVISOR_BACKOFF,
    supervisor_model: Annotated[
        str | None,
        _opt("The model of a claude supervisor (default: Claude Code's).", show_default=False),
    ] = None,
    supervisor_tools: Annotated[
        str,
        _opt("Tools of a claude supervisor, comma-separated (e.g. Read,Grep,Glob,Bash)."),
    ] = DEFAULT_SUPERVISOR_TOOLS,
    warm_supervisor: Annotated[
        bool, _opt("Start the next supervisor ahead of time, so it answers sooner.")
    ] = True,
    verify: Annotated[
        list[str] | None,
        _opt(
            "A command that must pass before [COMPLETE] is accepted (repeatable).",
            show_default=False,
        ),
    ] = None,
    verify_timeout: Annotated[
        float, _opt("Seconds a --verify command may run.", min=0.1)
    ] = DEFAULT_VERIFY_TIMEOUT,
    wait: Annotated[
        bool, _opt("On API errors and usage limits, wait and type 'continue' (else exit 6).")
    ] = True,
    max_waits: Annotated[
        int, _opt("The most such waits in one run; one more ends it (exit 6).", min=0)
    ] = DEFAULT_MAX_WAITS,
    wait_base: Annotated[
        float, _opt("Seconds of the first wait without a reset time; then doubled.", min=0)
    ] = DEFAULT_WAIT_BASE,
    log_file: Annotated[
        Path | None,
        _opt("JSONL event log (default: .ptysup/runs/RUN-ID/events.jsonl).", show_default=False),
    ] = None,
    log_format: Annotated[
        str, _opt("What to print when stdout is not a terminal: text or json.")
    ] = "text",
    record: Annotated[
        Path | None,
        _opt(
            "The agent's terminal as asciicast v2 (default: next to the event log).",
            show_default=False,
        ),
    ] = None,
    recording: Annotated[bool, _opt("Record the agent's terminal.")] = True,
    summary_json: Annotated[
        Path | None, _opt("Write the final summary as JSON here.", show_default=False)
    ] = None,
    redact: Annotated[
        list[str] | None,
        _opt(
            "A regex whose matches are hidden in logs and prompts (repeatable).", show_default=False
        ),
    ] = None,
    status: Annotated[
        bool, _opt("In a terminal, show iteration, time and last decision on the bottom row.")
    ] = True,
    escape_key: Annotated[
        str,
        _opt(
            "ptysup's own key in a terminal, then: s stop the run (exit 8), p pause/resume "
            "supervision, the key again sends it to the agent; none turns it off."
        ),
    ] = DEFAULT_ESCAPE_KEY,
    idle: Annotated[
        float, _opt("Quiet seconds that end a turn for agents without hooks.", min=0.1)
    ] = DEFAULT_IDLE,
    turn_timeout: Annotated[
        float,
        _opt("Seconds with no output and no turn end before the supervisor is asked.", min=1),
    ] = DEFAULT_TURN_TIMEOUT,
    questions: Annotated[
        str, _opt("Who answers the agent's questions: supervisor or person.")
    ] = "supervisor",
    notify: Annotated[
        list[str] | None,
        _opt(
            "On a notification, run CMD with the event as JSON on stdin (repeatable).",
            show_default=False,
        ),
    ] = None,
    notify_url: Annotated[
        list[str] | None,
        _opt(
            "Send notifications to this apprise URL (repeatable; pip install 'ptysup[notify]').",
            show_default=False,
        ),
    ] = None,
    notify_on: Annotated[
        list[str] | None,
        _opt(
            f"Which events notify (repeatable or comma-separated; default "
            f"{','.join(DEFAULT_NOTIFY_ON)}).",
            show_default=False,
        ),
    ] = None,
    start_timeout: Annotated[
        float,
        _opt(
            "Seconds the agent may take to reach its input box (exit 4); without a terminal "
            "a first-run dialog ends the start at once.",
            min=1,
        ),
    ] = DEFAULT_START_TIMEOUT,
    config: Annotated[
        Path | None,
        _opt(
            "A YAML config file (default: .ptysup.yaml, or [tool.ptysup] in pyproject.toml).",
            show_default=False,
        ),
    ] = None,
    debug: Annotated[bool, _opt("Show tracebacks.")] = False,
    version: Annotated[
        bool, typer.Option("--version", "-V", help="Print the version and exit.", is_eager=True)
    ] = False,
) -> None:
    for param in ctx.command.params:  # the same checks as every file's values get
        name = param.name or ""
        try:
            check_given(name, ctx.params.get(name))
        except ValueError as exc:
            raise ConfigError(f"--{name.replace('_', '-')}: {exc}{_origin(ctx, name)}") from None
    # Imported here, not at the top: `ptysup --help` never gets this far.
    from ptysup.cli.tasktext import resolve_task
    from ptysup.notify import parse_kinds

    loaded = ctx.meta.get("plan")
    if (
        task is None
        and task_file is None
        and (loaded is not None or not ctx.meta.get("need_task", True))
    ):
        task = ""  # a plan's goal and steps stand for the task; a resume keeps its own
    else:
        task = resolve_task(task, task_file, sys.stdin)
    ctx.meta["explicit"] = frozenset(
        name
        for name in ctx.params
        if ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE
    )
    file_only: dict[str, Any] = ctx.meta.get("file_only") or {}
    template = file_only.get("prompt_template")
    escape = parse_escape_key(escape_key)  # each value passed check_given above
    notify_kinds = parse_kinds(notify_on) if notify_on else DEFAULT_NOTIFY_ON
    duration = parse_duration(max_time, "--max-time") if max_time else None
    ctx.obj = RunConfig(
        task=task or (loaded.goal if loaded is not None else ""),
        plan=loaded,
        max_iter=max_iter,
        max_time=duration,
        max_cost=max_cost,
        agent_cmd=split_command(agent_cmd, "--agent-cmd"),
        supervisor_cmd=split_command(supervisor_cmd, "--supervisor-cmd"),
        supervisor_timeout=supervisor_timeout,
        supervisor_retries=supervisor_retries,
        supervisor_backoff=supervisor_backoff,
        supervisor_model=supervisor_model or None,
        supervisor_tools=supervisor_tools,
        warm_supervisor=warm_supervisor,
        verify=tuple(split_command(v, "--verify") for v in verify or ()),
        verify_timeout=verify_timeout,
        wait=wait,
        max_waits=max_waits,
        wait_base=wait_base,
        log_file=log_file,
        log_format=log_format,
        record=record,
        recording=recording,
        summary_json=summary_json,
        redact=tuple(redact or ()),
        status=status,
        escape_key=escape,
        prompt_template=template,
        idle=idle,
        turn_timeout=turn_timeout,
        start_timeout=start_timeout,
        cwd=Path.cwd(),
        debug=debug,
        questions=questions,
        notify=tuple(split_command(n, "--notify") for n in notify or ()),
        notify_url=tuple(notify_url or ()),
        notify_on=notify_kinds,
    )


@functools.cache
def _command() -> click.Command:
    """The click command typer builds from `app` (built once: it reads every annotation)."""
    command = typer.main.get_command(app)
    for param in command.params:
        if param.name in _NOT_FROM_ENV and isinstance(param, click.Option):
            param.allow_from_autoenv = False  # a stray PTYSUP_VERSION is no request for it
    return command


def _fail(message: str, code: int) -> int:
    first = " ".join(message.split())
    print(f"ptysup: {first}", file=sys.stderr)
    return int(code)


def _scan(args: Sequence[str], env: Mapping[str, str], name: str) -> Path | None:
    """--NAME's value (scanned before parsing, since the file supplies defaults), else the
    env variable PTYSUP_NAME."""
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg == f"--{name}" and i + 1 < len(args):
            return Path(args[i + 1])
        if arg.startswith(f"--{name}="):
            return Path(arg.split("=", 1)[1])
    if env.get(f"{ENV_PREFIX}_{name.upper()}"):
        return Path(env[f"{ENV_PREFIX}_{name.upper()}"])
    return None


def _config_path(args: Sequence[str], env: Mapping[str, str], cwd: Path) -> Path | None:
    """--config, else the env variable, else the file found in cwd."""
    return _scan(args, env, "config") or configfile.find(cwd)


def _defaults(args: Sequence[str], env: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(click default_map, file-only values) from the config file and list-valued env vars."""
    head = args[: args.index("--")] if "--" in args else args
    if "-h" in head or "--help" in head:  # help never depends on a (broken) config file
        return {}, {}
    path = _config_path(args, env, Path.cwd())
    values = configfile.load(path, checks()) if path is not None else {}
    plan_path = _scan(args, env, "plan") or (
        Path(str(values["plan"])) if values.get("plan") else None
    )
    if plan_path is not None:
        from ptysup.cli import planoptions as plan_options

        plan = plan_options.load(plan_path)
        values.update(plan.options)  # the plan beats the config file
        values["plan"] = plan
    file_only = {k: values.pop(k) for k in (*_FILE_ONLY, "plan") if k in values}
    # Commands contain spaces, so list options take one item per line from the environment.
    for name in _LIST_OPTIONS:
        raw = env.get(f"{ENV_PREFIX}_{name.upper()}")
        if raw:
            values[name] = [line for line in raw.splitlines() if line.strip()]
        elif isinstance(values.get(name), str):
            values[name] = [values[name]]
        elif name in values and not isinstance(values[name], list):
            raise ConfigError(f"{path}: {name}: expected a string or a list of strings")
    return values, file_only


def parse_args(args: Sequence[str], env: Mapping[str, str]) -> RunConfig | int:
    """Options → RunConfig, or the exit code after printing help/version/an error."""
    parsed = parse_options(args, env)
    return parsed if isinstance(parsed, int) else parsed[0]


def option_params() -> list[click.Parameter]:
    """The run's options as click parameters (what a plan or config file may set)."""
    return list(_command().params)


def parse_options(
    args: Sequence[str], env: Mapping[str, str], *, need_task: bool = True
) -> tuple[RunConfig, frozenset[str]] | int:
    """(RunConfig, the options given on the command line), or the exit code after
    printing help/version/an error."""
    head = args[: args.index("--")] if "--" in args else args
    if "--version" in head or "-V" in head:
        return version_main([])
    command = _command()
    _warn_unknown_variables(command, env)
    # click reads PTYSUP_* from the process environment: make it the one we were given.
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(
        {
            k: v
            for k, v in env.items()
            if k not in {f"{ENV_PREFIX}_{n.upper()}" for n in _LIST_OPTIONS}
        }
    )
    try:
        default_map, file_only = _defaults(args, env)
        with command.make_context(
            "ptysup", list(args), default_map=default_map, auto_envvar_prefix=ENV_PREFIX
        ) as ctx:
            # List options from the environment reach click as defaults (see _defaults).
            ctx.meta["from_env"] = {n for n in _LIST_OPTIONS if env.get(_variable(n))}
            ctx.meta["file_only"] = file_only
            ctx.meta["plan"] = file_only.pop("plan", None)
            ctx.meta["need_task"] = need_task
            ctx.meta["config_file"] = _config_path(args, env, Path.cwd())
            command.invoke(ctx)
            config = ctx.obj
            explicit = ctx.meta["explicit"]
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.BadParameter as exc:
        return _fail(exc.format_message() + _source(exc, args, env), ExitCode.USAGE)
    except click.UsageError as exc:
        return _fail(exc.format_message(), ExitCode.USAGE)
    except ConfigError as exc:
        return _fail(str(exc), ExitCode.USAGE)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert isinstance(config, RunConfig)
    if "--" not in args and config.task.strip() in SUBCOMMANDS:
        word = config.task.strip()
        return _fail(
            f"{word!r} is a subcommand: put it first (ptysup {word} ...); "
            f"for a task that is just this word, run: ptysup -- {word}",
            ExitCode.USAGE,
        )
    return config, explicit


def _variable(name: str) -> str:
    """The environment variable of an option (parameter name)."""
    return f"{ENV_PREFIX}_{name.upper()}"


def _warn_unknown_variables(command: click.Command, env: Mapping[str, str]) -> None:
    """One line naming the PTYSUP_* variables that set nothing (a typo, or an option that
    is no more), as an unknown key would be named; a warning, since a variable may be
    meant for another ptysup version or tool."""
    known = {
        _variable(p.name)
        for p in command.params
        if p.name and isinstance(p, click.Option) and p.allow_from_autoenv
    }
    unknown = sorted(
        name
        for name in env
        if name.startswith(f"{ENV_PREFIX}_") and name not in known | OTHER_VARIABLES
    )
    if unknown:
        print(
            f"ptysup: warning: unknown variable{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(unknown)} (not a run option; see ptysup --help)",
            file=sys.stderr,
        )


def _origin(ctx: click.Context, name: str | None) -> str:
    """Where a bad value came from when it was not the command line: ' (from PTYSUP_X)'
    or ' (from FILE)'; `name` None: a value only a file can give."""
    source = None if name is None else ctx.get_parameter_source(name)
    if name is not None and (
        source is click.core.ParameterSource.ENVIRONMENT or name in ctx.meta.get("from_env", ())
    ):
        return f" (from {_variable(name)})"
    if name is None or source is click.core.ParameterSource.DEFAULT_MAP:
        plan = ctx.meta.get("plan")  # a plan's options beat the config file's
        if plan is not None and (name or "prompt_template") in plan.options:
            return f" (from {plan.path})"
        where = ctx.meta.get("config_file")
        return f" (from {where})" if where else ""
    return ""


def _source(exc: click.BadParameter, args: Sequence[str], env: Mapping[str, str]) -> str:
    """Where a bad value came from when it was not the command line: ' (from PTYSUP_X)'."""
    name = exc.param.name if exc.param is not None else None
    if exc.ctx is None or name is None:
        return ""
    # Raised while parsing, before the command set the file in ctx.meta.
    exc.ctx.meta.setdefault("config_file", _config_path(args, env, Path.cwd()))
    return _origin(exc.ctx, name)


def help_main(args: Sequence[str]) -> int:
    """`ptysup help [SUBCOMMAND]`: the run's help, or a subcommand's."""
    if args and args[0] in SUBCOMMANDS and args[0] != "help":
        return main([args[0], "--help"])
    if args and args[0] not in ("help", "-h", "--help"):
        return _fail(
            f"no subcommand {args[0]!r}; subcommands: {', '.join(SUBCOMMANDS)}", ExitCode.USAGE
        )
    shown = parse_args(["--help"], {})
    return shown if isinstance(shown, int) else 0


def version_main(args: Sequence[str]) -> int:
    """`ptysup version` / `-V`: the version."""
    print(f"ptysup {__version__}")
    return 0


def _near_subcommand(word: str) -> str | None:
    """The subcommand a one-word first argument was probably meant to be (`ptysup doctr`)."""
    if not word or word.startswith("-") or any(c.isspace() for c in word):
        return None
    import difflib

    close = difflib.get_close_matches(word.lower(), SUBCOMMANDS, n=1, cutoff=0.8)
    return close[0] if close else None


def preflight(config: RunConfig, env: Mapping[str, str]) -> tuple[str, int] | None:
    """Problems found before anything starts: (one-line message, exit code)."""
    path = env.get("PATH", os.defpath)
    if not config.task.strip() and config.plan is None:
        return "the task is empty", ExitCode.USAGE
    steps = config.plan.steps if config.plan is not None else ()
    named = [
        *(("verify", v[0], ExitCode.USAGE) for v in config.verify),
        *(("verify", v[0], ExitCode.USAGE) for step in steps for v in step.verify),
        *(("notify", n[0], ExitCode.USAGE) for n in config.notify),
        ("agent", config.agent_cmd[0], ExitCode.AGENT),
        ("supervisor", config.supervisor_cmd[0], ExitCode.SUPERVISOR),
    ]
    for role, command, code in named:
        if shutil.which(command, path=path) is None:
            return f"{role} command {_why_not_run(command)}: {command}", code
    return None


def _why_not_run(command: str) -> str:
    """Why shutil.which found nothing: a path that is there but cannot run, or nothing."""
    if os.sep in command and os.path.isfile(command):
        return "is not executable"
    return "not found"


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """The whole program; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    environ = dict(os.environ if env is None else env)
    if "_PTYSUP_COMPLETE" in environ:  # the shell asks for completions
        from ptysup.cli.completion import complete

        return complete(environ) or 0
    if not _cwd_exists() and not (args and args[0] in ("help", "version", "completion")):
        return _fail(
            "the current directory no longer exists (deleted or moved): cd to one that does",
            ExitCode.USAGE,
        )
    if args and args[0] in SUBCOMMANDS:
        import importlib

        module, function = SUBCOMMANDS[args[0]].split(":")
        run_sub = getattr(importlib.import_module(module), function)
        code: int = run_sub(args[1:], environ) if args[0] in _TAKE_ENV else run_sub(args[1:])
        return code
    meant = _near_subcommand(args[0]) if len(args) == 1 else None
    if meant is not None:
        return _fail(
            f"unknown subcommand {args[0]!r}; did you mean `ptysup {meant}`? "
            f"(for a task that is just this word, run: ptysup -- {args[0]})",
            ExitCode.USAGE,
        )
    parsed = parse_args(args, environ)
    if isinstance(parsed, int):
        return parsed
    from ptysup.run import lifecycle  # keeps `ptysup --help` light

    return lifecycle.supervise(parsed, environ, fail=_fail, preflight=preflight)


def _cwd_exists() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:
        return False
    return True


def entry(*_: Any) -> None:
    """Console-script entry point."""
    code = main()
    # The interpreter's last garbage collections walk every object ptysup made: ~15 ms
    # at every exit (scripts/bench.py `exit`). Frozen, they are skipped; atexit handlers,
    # flushes and finalizers still run.
    gc.freeze()
    sys.exit(code)
