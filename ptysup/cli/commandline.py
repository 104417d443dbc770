"""The command line: options → RunConfig → a run → an exit code, errors mapped in one place."""

from __future__ import annotations

import gc
import os
import select
import shutil
import signal
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from ptysup import __version__
from ptysup.cli import configfile, gitauth
from ptysup.cli.options import (
    _FILE_ONLY,
    _LIST_OPTIONS,
    ENV_PREFIX,
    SUBCOMMANDS,
    _command,
    _origin,
    _variable,
    checks,
)
from ptysup.config import (
    ConfigError,
    RunConfig,
)
from ptysup.exitcodes import ExitCode

# PTYSUP_* variables that are no run option but that ptysup's own tools, tests and
# deployments set: never warned about.
OTHER_VARIABLES = frozenset(
    {
        "PTYSUP_CLAUDE_BIN",  # ptysup.testing.pins: which Claude Code the tests run
        "PTYSUP_LINT_TOOLS",  # ptysup.testing.lint_tools: where the linters are
        "PTYSUP_TOOLS_DIR",  # ptysup.testing.pins: where the pinned agents are installed
        "PTYSUP_UNDER_TEST",  # scripts/test.sh: the shipped ptysup the e2e tests run
        "PTYSUP_REQUIRE_E2E",  # scripts/test.sh, CI: a test that cannot run fails
        "PTYSUP_SOAK_DECISIONS",  # scripts/test.sh: the soak test's length
        "PTYSUP_TEST_RUN",  # the tests' marker in a child's environment
        gitauth.REMOTE_VAR,  # deploy/k8s/job.yaml: the repository to clone and push to
        "PTYSUP_JOB_UID",  # deploy/k8s/job.yaml: the Job's folder on the state volume
        gitauth.TOKEN_VAR,  # ptysup.cli.gitauth: the token `batch run --push` pushes with
        gitauth.USER_VAR,  # ptysup.cli.gitauth: its user name
    }
)

# Called with the environment main() was given.
_TAKE_ENV = frozenset({"resume", "batch", "judge-bench"})


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
    if config.second_opinion is not None:  # (its module loads the supervisor's: only then)
        from ptysup.run.second import AUTO

        if config.second_opinion != (AUTO,):
            named.append(("second opinion", config.second_opinion[0], ExitCode.SUPERVISOR))
    for role, command, code in named:
        if shutil.which(command, path=path) is None:
            return f"{role} command {_why_not_run(command)}: {command}", code
    return _second_problem(config, path) or _protect_problem(config)


def _second_problem(config: RunConfig, path: str) -> tuple[str, int] | None:
    """`--second-opinion auto` without an installed CLI of another vendor: exit 2."""
    if config.second_opinion is None:
        return None
    from ptysup.run.second import AUTO, choose

    if config.second_opinion != (AUTO,):
        return None
    choice = choose(config, path)
    return None if choice.argv is not None else (choice.refusal(), ExitCode.USAGE)


def _protect_problem(config: RunConfig) -> tuple[str, int] | None:
    """A --protect pathspec git cannot read (a bad magic word, a path outside the work
    tree): exit 2, as for any bad value."""
    from ptysup.run.gitsnap import pathspec_problem
    from ptysup.run.protect import OFF

    specs = [p for p in config.protect if p != OFF]
    problem = pathspec_problem(config.cwd, specs)
    return None if problem is None else (f"--protect: {problem}", ExitCode.USAGE)


def _why_not_run(command: str) -> str:
    """Why shutil.which found nothing: a path that is there but cannot run, or nothing."""
    if os.sep in command and os.path.isfile(command):
        return "is not executable"
    return "not found"


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """The whole program; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    environ = dict(os.environ if env is None else env)
    gitauth.take(environ)  # for ptysup's own push: nothing it starts inherits the token
    if "_PTYSUP_COMPLETE" in environ:  # the shell asks for completions
        from ptysup.cli.completion import complete

        return _said(complete(environ) or 0)
    if not _cwd_exists() and not (args and args[0] in ("help", "version", "completion")):
        return _fail(
            "the current directory no longer exists (deleted or moved): cd to one that does",
            ExitCode.USAGE,
        )
    if args and args[0] in SUBCOMMANDS:
        import importlib

        refused = _unknown_option(args[0], args[1:])
        if refused is not None:
            return refused
        module, function = SUBCOMMANDS[args[0]].split(":")
        run_sub = getattr(importlib.import_module(module), function)
        code: int = run_sub(args[1:], environ) if args[0] in _TAKE_ENV else run_sub(args[1:])
        return _said(code)
    meant = _near_subcommand(args[0]) if len(args) == 1 else None
    if meant is not None:
        return _fail(
            f"unknown subcommand {args[0]!r}; did you mean `ptysup {meant}`? "
            f"(for a task that is just this word, run: ptysup -- {args[0]})",
            ExitCode.USAGE,
        )
    parsed = parse_args(args, environ)
    if isinstance(parsed, int):
        return _said(parsed)
    from ptysup.run import compose  # keeps `ptysup --help` light

    return compose.supervise(parsed, environ, fail=_fail, preflight=preflight)


def _said(code: int) -> int:
    """CODE, once what a command printed has reached its reader. A command's output is its
    work: a reader gone before it arrived cuts the command short (BrokenPipeError, 141 in
    entry) whether or not stdout is buffered (PYTHONUNBUFFERED, a pipe or a terminal)."""
    sys.stdout.flush()
    return code


def _unknown_option(name: str, args: Sequence[str]) -> int | None:
    """One line and exit 2 for an option subcommand NAME does not take, before it runs
    (each subcommand's own parser said it differently, or took it for a file)."""
    from ptysup.argspec import unknown_option
    from ptysup.cli.completion import spec_of

    spec = spec_of(name)
    found = unknown_option(spec, args, name, _run_options())
    if found is None:
        return None
    whole, word, meant = found
    if meant:
        hint = f"; did you mean {meant}?"
    elif spec.flags or spec.options or spec.subcommands:
        hint = f" (ptysup help {name} lists its options)"
    else:
        hint = f" (ptysup {name} takes no options)"
    return _fail(f"{whole}: unknown option {word!r}{hint}", ExitCode.USAGE)


def _run_options() -> dict[str, bool]:
    """Each of a run's options (both names of a --x/--no-x pair), and whether it takes a
    value."""
    from ptysup.cli.options import option_params

    found: dict[str, bool] = {}
    for param in option_params():
        if isinstance(param, click.Option):
            takes = not (param.is_flag or param.count)
            found |= {option: takes for option in (*param.opts, *param.secondary_opts)}
    return found


def _cwd_exists() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:
        return False
    return True


def entry(*_: Any) -> None:
    """Console-script entry point."""
    _reopen_closed_streams()
    try:
        code = main()
    except BrokenPipeError:
        if not _reader_gone():
            raise  # some other pipe: a bug, with its traceback
        _silence_stdout()
        code = 128 + signal.SIGPIPE  # cut short, as a program killed by SIGPIPE is
    else:
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            if not _reader_gone():
                raise
            _silence_stdout()  # the command did its work: its exit code stands
    # The interpreter's last garbage collections walk every object ptysup made: ~15 ms
    # at every exit (scripts/bench.py `exit`). Frozen, they are skipped; atexit handlers,
    # flushes and finalizers still run.
    gc.freeze()
    sys.exit(code)


def _reopen_closed_streams() -> None:
    """Started with stdin, stdout or stderr closed (`ptysup runs >&-`): each gets /dev/null.
    Printing then goes nowhere instead of failing, and the next file ptysup opens (a run's
    event log) never takes fd 1 or 2, where a print would have written into it."""
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        if getattr(sys, name) is None:
            devnull = os.open(os.devnull, os.O_RDWR)
            if devnull != fd:
                os.dup2(devnull, fd)
                os.close(devnull)
            setattr(sys, name, open(fd, mode, closefd=False))  # noqa: SIM115


def _reader_gone() -> bool:
    """Whether stdout is a pipe whose reader went away (`ptysup replay RUN | head`)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):
        return False
    poller = select.poll()
    poller.register(fd, 0)  # a pipe without a reader reports POLLERR to its writer
    return any(events & select.POLLERR for _, events in poller.poll(0))


def _silence_stdout() -> None:
    """Nothing more can be said to a reader that left: stdout goes to /dev/null, so the
    interpreter's last flush of what is still buffered fails no more (no traceback)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
