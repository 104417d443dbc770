"""`ptysup doctor [OPTIONS]`: will a run start here, without a person? Says what to fix.

Checks the options and config file, the agent, supervisor and verify commands, what the
agent's folder checks (Claude Code's own config for this folder, say: the screens that
block a first run in CI, see agents/firstrun.py) and the output paths.
It only reads (and with --probe makes one supervisor call): nothing is answered, approved
or written.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO

from ptysup.agents.checks import Check
from ptysup.agents.release import Release
from ptysup.argspec import ArgSpec
from ptysup.cli import configfile
from ptysup.config import RunConfig
from ptysup.run import outputs

VERSION_TIMEOUT_S = 30.0
ARGS = ArgSpec(flags=("--probe",), run_options=True)
_PROBE_LOG = Path("doctor-probe") / "events.jsonl"  # tried under the runs dir, never kept


def main(
    args: Sequence[str], env: Mapping[str, str] | None = None, out: IO[str] | None = None
) -> int:
    """0 when a run should start here without a person, 1 when something needs fixing."""
    from ptysup.cli.commandline import parse_args

    out = out or sys.stdout
    environ = dict(os.environ if env is None else env)
    if "-h" in args or "--help" in args:
        print(
            "usage: ptysup doctor [--probe] [RUN OPTIONS]   (checks this machine and folder "
            "for a run with those options; --probe also asks the supervisor once, which costs "
            "one call; exit 0 ready, 1 something to fix, 2 bad options)",
            file=out,
        )
        return 0
    probe = "--probe" in args
    args = [a for a in args if a != "--probe"]
    parsed = parse_args([*args, "--", "doctor"], environ)  # the options of a run, checked
    if isinstance(parsed, int):
        return parsed
    cwd = Path.cwd()
    print(f"ptysup doctor: {cwd}", file=out)
    checks = list(run_checks(parsed, environ, cwd))
    if probe:
        checks.append(probe_supervisor(parsed, environ, cwd))
    for check in checks:
        print(f"  {'ok ' if check.ok else 'FIX'}  {check.name}: {check.detail}", file=out)
        if not check.ok and check.fix:
            print(f"        fix: {check.fix}", file=out)
    problems = sum(not c.ok for c in checks)
    print("ready" if not problems else f"{problems} thing(s) to fix", file=out)
    return 0 if not problems else 1


def run_checks(config: RunConfig, env: Mapping[str, str], cwd: Path) -> Iterator[Check]:
    """Every check, in the order a run meets them."""
    found = configfile.find(cwd)
    yield Check("config file", True, str(found) if found else "none (defaults, env, options)")
    path = env.get("PATH", os.defpath)
    yield from _commands(config, path)
    yield from _agent_version(config, path)
    yield from _agent_checks(config, env, cwd)
    runs = cwd / config.runs_dir
    log = "--log-file" if config.log_file else "event log"  # the option only when given
    for option, target, shown in (
        (log, config.log_file or runs / _PROBE_LOG, config.log_file or runs),
        ("--record", config.record, config.record),
        ("--summary-json", config.summary_json, config.summary_json),
    ):
        if target is not None:
            reason = outputs.problem(target)
            detail = f"{shown}: {reason}" if reason else str(shown)
            yield Check(f"{option} writable", reason is None, detail, "choose a writable path")


def _commands(config: RunConfig, path: str) -> Iterator[Check]:
    named = [("agent command", config.agent_cmd), ("supervisor command", config.supervisor_cmd)]
    second = _second_opinion(config, path)
    if isinstance(second, Check):
        yield second
    elif second is not None:
        named.append(("second opinion", second))
    named += [("verify command", v) for v in config.verify]
    for name, argv in named:
        where = shutil.which(argv[0], path=path)
        if where is None:
            yield Check(
                name, False, f"{argv[0]} not found on PATH", f"install {argv[0]} or fix the option"
            )
            continue
        detail = where
        if _known(argv) and argv is not config.agent_cmd:  # the agent's: its own check
            detail += f" ({_version(where)})"
        yield Check(name, True, detail)


def _second_opinion(config: RunConfig, path: str) -> tuple[str, ...] | Check | None:
    """The second opinion's command to look for (`auto`'s pick), or why `auto` has none."""
    if config.second_opinion is None:
        return None
    from ptysup.run.second import choose

    choice = choose(config, path)
    if choice.argv is None:
        return Check("second opinion", False, choice.refusal(), "install one, or name a command")
    return choice.argv


def _agent_version(config: RunConfig, path: str) -> Iterator[Check]:
    """The installed agent's release, and whether the end-to-end tests ran against it (the
    pin, or the compatibility lane's previous pin): an untested one is said, not refused
    (agents release weekly; most still work)."""
    from ptysup.agents import registry

    kind = registry.find(config.agent_cmd, config.agent)
    where = shutil.which(config.agent_cmd[0], path=path) if config.agent_cmd else None
    if kind.release is None or where is None:
        return
    shown = _version(where)
    found = _RELEASE.search(shown)
    release = found.group() if found else shown
    yield Check("agent version", True, _tested(kind.name, release, kind.release))


def _tested(name: str, installed: str, release: Release) -> str:
    """What doctor says of agent NAME at release INSTALLED, against the releases tested."""
    if installed == release.version:
        return f"{name} {installed}, tested with ptysup"
    if installed == release.previous:
        return (
            f"{name} {installed}, tested with ptysup (its compatibility lane; "
            f"the tests' pin is {release.version})"
        )
    lane = f", {release.previous} in its compatibility lane" if release.previous else ""
    return (
        f"{name} {installed} is not a release ptysup was tested with "
        f"({release.version} pinned{lane}); scripts/test-lane.sh latest runs the tests "
        "against the newest"
    )


def _agent_checks(config: RunConfig, env: Mapping[str, str], cwd: Path) -> Iterator[Check]:
    """How ptysup's hooks reach the agent here, where that depends on the machine (without
    them a run goes on with the agent's screen alone: late turn ends, questions stall),
    then the agent's own checks (the first-run screens that would block it here)."""
    from ptysup.agents import registry

    kind = registry.find(config.agent_cmd, config.agent)
    if kind.hooks is not None:
        ok, detail = kind.hooks(env)
        yield Check("hooks", ok, detail, "see docs/agents.md, how ptysup's settings reach it")
    if kind.doctor is not None:
        yield from kind.doctor(env, cwd)


def _known(argv: Sequence[str]) -> bool:
    """Whether a supervisor or verify command is an agent ptysup knows (its release is
    worth showing)."""
    from ptysup.agents import registry

    return registry.find(argv).name != registry.GENERIC


_RELEASE = re.compile(r"\d+\.\d+\.\d+")


def _version(binary: str) -> str:
    try:
        done = subprocess.run(
            [binary, "--version"],
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"--version failed: {exc}"
    return done.stdout.strip().splitlines()[0] if done.stdout.strip() else f"exit {done.returncode}"


PROBE_TIMEOUT_S = 120.0


def probe_supervisor(config: RunConfig, env: Mapping[str, str], cwd: Path) -> Check:
    """Ask the supervisor once, as a run would: a key, login or model that cannot work
    shows here, not after the agent's first turn."""
    from ptysup.supervisor.judge import JudgeOptions, judge_dir, lean_argv, lean_env
    from ptysup.supervisor.prompt import SUPERVISOR_MARKER
    from ptysup.supervisor.runner import SupervisorError, SupervisorRunner

    prompt = f"{SUPERVISOR_MARKER}\nThis is a check by `ptysup doctor`. Answer: [COMPLETE] ok"
    try:
        with judge_dir(config.supervisor_cmd, env) as judge:
            options = JudgeOptions(config.supervisor_tools, config.supervisor_model, judge)
            runner = SupervisorRunner(
                lean_argv(config.supervisor_cmd, options),  # as a run starts it
                timeout=min(config.supervisor_timeout, PROBE_TIMEOUT_S),
                cwd=str(cwd),
                env=lean_env(config.supervisor_cmd, env, judge),
            )
            answer = runner.run(prompt)
    except SupervisorError as exc:
        fix = "check ANTHROPIC_API_KEY / login and the model" if exc.fatal else "see the error"
        return Check("supervisor answers", False, str(exc), fix)
    finally:
        runner.close()  # its private dir
    return Check("supervisor answers", True, f"in {answer.duration_s:.1f}s")
