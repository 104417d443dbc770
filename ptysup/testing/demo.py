"""The demo: `ptysup "implement feature X" --max-iter 50` on a sample project, offline.

The real Claude Code is the agent and the supervisor (`--agent codex`: Codex CLI is the
agent; `--agent aider`: aider is the agent; `--agent gemini`: Gemini CLI is both;
`--agent qwen`: Qwen Code is both; `--agent opencode`: opencode is both); the model behind
them is the bundled fake (scenario `demo.yaml`, `demo_codex.yaml`, `demo_aider.yaml`,
`demo_gemini.yaml`, `demo_qwen.yaml`, `demo_opencode.yaml`), so the run needs no account
and no network.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

# The standard library and these only at the top: `--help` and `--clean` run before
# scripts/demo.sh sets anything up, on the system's Python.
from ptysup.store import pidlock

SCENARIO = Path(__file__).with_name("scenarios") / "demo.yaml"
TASK = "implement feature X"
# `--project DIR`: ptysup in the person's own folder, offline; the scripted agent only
# reads (scenario tour.yaml), so nothing of theirs changes.
TOUR_SCENARIO = SCENARIO.with_name("tour.yaml")
TOUR_TASK = "look around this project"
# Edits without permission dialogs, so the demo runs unattended (and in CI).
AGENT_CMD = "claude --permission-mode acceptEdits"
# `--agent gemini`: Gemini CLI is the agent and the supervisor (no Claude Code needed); its
# scenario scripts Gemini's own tools.
GEMINI_SCENARIO = SCENARIO.with_name("demo_gemini.yaml")
GEMINI_AGENT_CMD = "gemini --approval-mode auto_edit"
GEMINI_SUPERVISOR_CMD = 'gemini -p ""'
# `--agent codex`: Codex CLI is the agent (it writes files with shell commands, in its
# workspace-write sandbox: no dialogs); the supervisor stays Claude Code.
CODEX_SCENARIO = SCENARIO.with_name("demo_codex.yaml")
CODEX_AGENT_CMD = "codex"
# `--agent qwen`: Qwen Code is the agent and the supervisor (no Claude Code needed).
QWEN_SCENARIO = SCENARIO.with_name("demo_qwen.yaml")
QWEN_AGENT_CMD = "qwen --approval-mode auto-edit"
QWEN_SUPERVISOR_CMD = 'qwen -p ""'
# `--agent aider`: aider is the agent, on the stub it edits (a new file would be a
# confirmation), in a git repository (it asks to make one otherwise); the supervisor stays
# Claude Code (aider has no one-shot mode that prints a decision alone).
AIDER_SCENARIO = SCENARIO.with_name("demo_aider.yaml")
AIDER_AGENT_CMD = "aider textstats.py"
# `--agent opencode`: opencode is the agent (edits without approval dialogs) and, as
# `opencode run`, the supervisor.
OPENCODE_SCENARIO = SCENARIO.with_name("demo_opencode.yaml")
OPENCODE_AGENT_CMD = "opencode"
OPENCODE_SUPERVISOR_CMD = "opencode run"
AGENTS = ("claude", "codex", "aider", "gemini", "qwen", "opencode")
# The agents that are their own supervisor: (agent command, supervisor command).
SELF_SUPERVISED = {
    "gemini": (GEMINI_AGENT_CMD, GEMINI_SUPERVISOR_CMD),
    "qwen": (QWEN_AGENT_CMD, QWEN_SUPERVISOR_CMD),
    "opencode": (OPENCODE_AGENT_CMD, OPENCODE_SUPERVISOR_CMD),
}


def _say(message: str) -> None:
    print(f"demo: {message}", file=sys.stderr, flush=True)


PREFIX = "ptysup-demo-"
# Held by the demo for its whole life, in its sample project: `--clean` leaves that alone.
LOCK = Path(".ptysup") / "demo.lock"
USAGE = f"""\
Usage: scripts/demo.sh [--clean | [--agent codex|aider|gemini|qwen|opencode] PTYSUP-OPTION...]
       scripts/demo.sh --project DIR [PTYSUP-OPTION...]

Runs `ptysup "{TASK}" --max-iter 50` on a sample project copied to a new temp dir
({PREFIX}*, kept for you to look at). The agent and the supervisor are the real
Claude Code; the model behind both is the bundled scripted fake on 127.0.0.1, so it
needs no account and no network. Exit code: ptysup's. The first run sets itself up:
ptysup into .venv and the pinned Claude Code into .tools/ (Python 3.10+ and npm, no
root, no test tools); --help and --clean set nothing up.

  --clean          remove the sample projects your earlier demos left in the temp
                   dir (never another user's; a demo still running keeps its own)
  --project DIR    ptysup in your own project DIR instead, still offline: the agent
                   (Claude Code) looks around with the fake model and changes nothing;
                   the run's log is kept in DIR/.ptysup/runs/
  --agent codex    Codex CLI as the agent instead (its pinned version is installed
                   into .tools/codex on first use); the supervisor stays Claude Code
  --agent aider    aider as the agent instead (its pinned version is installed into
                   a virtualenv on first use, ~700 MB); the supervisor stays Claude Code
  --agent gemini   Gemini CLI as the agent and the supervisor instead (its pinned
                   version is installed into .tools/gemini-cli on first use)
  --agent qwen     Qwen Code as the agent and the supervisor instead (its pinned
                   version is installed into .tools/qwen-code on first use)
  --agent opencode opencode as the agent and the supervisor instead (its pinned
                   version is installed into .tools/opencode on first use)
  PTYSUP-OPTION    passed on to ptysup, e.g. --no-warm-supervisor, --max-cost 0.05,
                   --no-recording (`ptysup --help` lists them)
  -h, --help       this help
"""


def clean(tmp: Path | None = None) -> int:
    """Remove the sample projects your earlier demos left for you to look at (in the temp
    dir); one whose demo still runs is kept, and said so. The temp dir is shared: another
    user's demo folders are never touched (root's powers would remove them), only counted."""
    tmp = tmp or Path(tempfile.gettempdir())
    removed = others = 0
    for path in sorted(p for p in tmp.glob(f"{PREFIX}*") if p.is_dir() and not p.is_symlink()):
        if path.stat().st_uid != os.getuid():
            others += 1
            continue
        pid = pidlock.holder(path / LOCK)
        if pid is not None:
            who = f"pid {pid}" if pid > 0 else "another process"
            _say(f"kept {path}: its demo is still running ({who})")
            continue
        shutil.rmtree(path, ignore_errors=True)
        if path.exists():
            _say(f"cannot remove {path} (another user's?)")
        else:
            removed += 1
    if others:
        _say(f"left {others} demo folder(s) of other users alone")
    _say(f"removed {removed} demo folder(s) from {tmp}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; the exit code is ptysup's. `--clean` removes earlier demos' folders."""
    extra = list(sys.argv[1:] if argv is None else argv)
    if "-h" in extra or "--help" in extra:
        print(USAGE, end="")
        return 0
    if extra == ["--clean"]:
        return clean()
    if "--project" in extra:
        return _own_project(extra)
    agent = _agent(extra) or "claude"
    if agent not in AGENTS:
        _say(f"unknown agent {agent!r}: the demo runs {', '.join(AGENTS[:-1])} or {AGENTS[-1]}")
        return 2
    if agent in SELF_SUPERVISED:
        rest = [a for a in extra if a not in ("--agent", agent, f"--agent={agent}")]
        return _self_supervised_demo(agent, rest)
    claude = _find_claude()
    if claude is None:
        _say("Claude Code is not installed: run scripts/demo.sh (it installs it)")
        return 2
    other = None  # the agent beside Claude Code, if another
    if agent in ("codex", "aider"):
        extra = [a for a in extra if a not in ("--agent", agent, f"--agent={agent}")]
        try:
            other = _install_beside_claude(agent)  # at once when the pinned one is there
        except (OSError, subprocess.CalledProcessError) as exc:
            _say(f"cannot install {agent}: {exc}")
            return 2
    project = Path(tempfile.mkdtemp(prefix=PREFIX))
    with pidlock.hold(project / LOCK):
        return _run(project, claude, extra, agent, other)


def _own_project(extra: list[str]) -> int:
    """The offline demo in the person's own folder (`--project DIR`): a read-only tour."""
    at = extra.index("--project")
    if at + 1 >= len(extra):
        _say("--project needs a folder: scripts/demo.sh --project DIR")
        return 2
    folder = Path(extra[at + 1]).expanduser()
    if not folder.is_dir():
        _say(f"--project: {folder} is not a folder")
        return 2
    if _agent(extra) not in (None, "claude"):
        _say("--project runs Claude Code as the agent; it takes no --agent")
        return 2
    claude = _find_claude()
    if claude is None:
        _say("Claude Code is not installed: run scripts/demo.sh (it installs it)")
        return 2
    rest = extra[:at] + extra[at + 2 :]
    return _run(folder.resolve(), claude, rest, tour=True)


def _agent(extra: Sequence[str]) -> str | None:
    """The agent `--agent NAME` (or `--agent=NAME`) picks, if any."""
    for i, arg in enumerate(extra):
        if arg == "--agent" and i + 1 < len(extra):
            return extra[i + 1]
        if arg.startswith("--agent="):
            return arg.split("=", 1)[1]
    return None


def _find_claude() -> Path | None:
    """The Claude Code the demo runs (the pinned one, else the one on PATH)."""
    from ptysup.testing.pins import pin  # here, not at the top: see the imports

    return pin("claude").find()


def _install_beside_claude(agent: str) -> Path:
    """The pinned Codex CLI (npm) or aider (pip, its own virtualenv), installed unless
    it is there."""
    from ptysup.testing.pins import pin

    chosen = pin(agent)
    if chosen.pip and chosen.installed_version() != chosen.version:
        _say(f"installing the pinned {agent} {chosen.version} (pip, ~700 MB, a minute)")
    return chosen.install()


def _self_supervised_demo(agent: str, extra: list[str]) -> int:
    """The demo with an agent that is its own supervisor, installed on demand (npm, the
    pinned version)."""
    from ptysup.testing.kit import offline_home
    from ptysup.testing.pins import pin

    chosen, name = pin(agent), offline_home(agent).label
    if chosen.installed_version() != chosen.version:
        _say(f"installing the pinned {name} {chosen.version} into .tools/{chosen.folder} (npm)")
    try:
        binary = chosen.install()
    except (OSError, subprocess.CalledProcessError) as exc:
        _say(f"cannot install {name} {chosen.version}: {exc}")
        return 2
    project = Path(tempfile.mkdtemp(prefix=PREFIX))
    with pidlock.hold(project / LOCK):
        return _run(project, binary, extra, agent=agent)


def _run(
    project: Path,
    claude: Path,
    extra: list[str],
    agent: str = "claude",
    other: Path | None = None,
    tour: bool = False,
) -> int:
    """The demo in PROJECT (a new temp dir; with TOUR, the person's own folder, only
    looked at); ptysup's exit code."""
    # Here, not at the top: see the imports.
    from ptysup.testing.fakemodel import FakeModel
    from ptysup.testing.scenario import Scenario

    scenarios = {
        "gemini": GEMINI_SCENARIO,
        "codex": CODEX_SCENARIO,
        "qwen": QWEN_SCENARIO,
        "aider": AIDER_SCENARIO,
        "opencode": OPENCODE_SCENARIO,
    }
    if tour:
        scenario = Scenario.load(TOUR_SCENARIO)
    else:
        scenario = Scenario.load(scenarios.get(agent, SCENARIO))
        scenario.seed(project)
    ptysup = Path(sys.executable).with_name("ptysup")
    command = [str(ptysup), TOUR_TASK if tour else TASK, "--max-iter", "50", *extra]
    with (
        FakeModel(scenario, project) as model,
        _agent_env(agent, model.url, project, claude, other) as env,
    ):
        agent_cmd, supervisor_cmd = SELF_SUPERVISED.get(agent, (None, None))
        beside = {"codex": CODEX_AGENT_CMD, "aider": AIDER_AGENT_CMD}
        agent_cmd = agent_cmd or beside.get(agent, AGENT_CMD)
        env["PTYSUP_AGENT_CMD"] = agent_cmd
        if supervisor_cmd:
            env["PTYSUP_SUPERVISOR_CMD"] = supervisor_cmd
        _say(f"{'your project' if tour else 'sample project'}: {project}")
        _say(f"model: the bundled fake at {model.url}; agent: {agent_cmd}")
        _say(f"running: ptysup {shlex.join(command[1:])}")
        code = subprocess.call(command, cwd=project, env=env)
    if tour:
        return _toured(project, code)
    log = next(project.glob(".ptysup/runs/*/events.jsonl"), None)
    if log is None:  # ptysup refused before a run began (e.g. a mistyped option)
        shutil.rmtree(project, ignore_errors=True)
        _say(f"ptysup exited {code} before the run began; the sample project is removed")
        return code
    tests = subprocess.run(
        [sys.executable, "-m", "unittest", "-q"], cwd=project, capture_output=True, text=True
    )
    _say(
        f"ptysup exited {code}; the sample project's tests "
        + ("pass" if tests.returncode == 0 else "FAIL")
    )
    _say(f"event log: {log}")
    _say(f"kept for you to look at: {project} (scripts/demo.sh --clean removes it)")
    _say(NEXT)
    return code


# The newcomer's next step, said at the end of every demo.
NEXT = (
    "next: scripts/demo.sh --project DIR tries ptysup on your own project, still offline "
    "(the agent only looks); with your own Claude account: docs/getting-started.md"
)


def _toured(project: Path, code: int) -> int:
    """What a tour of the person's own PROJECT left: its run's log, nothing else."""
    logs = sorted(project.glob(".ptysup/runs/*/events.jsonl"), key=lambda p: p.stat().st_mtime)
    if logs:
        _say(f"ptysup exited {code}; event log: {logs[-1]}")
    else:
        _say(f"ptysup exited {code} before the run began")
    return code


@contextlib.contextmanager
def _agent_env(
    agent: str, url: str, project: Path, binary: Path, other: Path | None = None
) -> Iterator[dict[str, str]]:
    """The private, offline environment of the demo's agent (BINARY; OTHER's, beside the
    supervisor's Claude Code) pointed at URL. Its own supervisor edits unasked, as the
    demo's agent commands say."""
    from ptysup.testing.kit import agent_env

    if agent in SELF_SUPERVISED:
        with agent_env(agent, url, [project], binary, approvals=False) as own:
            yield dict(own.env)
        return
    with contextlib.ExitStack() as stack:
        env = dict(stack.enter_context(agent_env("claude", url, [project], binary)).env)
        if agent != "claude" and other is not None:
            if agent == "aider":
                subprocess.run(["git", "init", "-q", str(project)], check=True)  # it asks else
            env = dict(stack.enter_context(agent_env(agent, url, [project], other, env)).env)
        yield env


if __name__ == "__main__":
    sys.exit(main())
