"""The rig every end-to-end test of ptysup uses: a project, the fake model, a private Claude."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ptysup.agents.opencode.testkit import HOME_MARKER
from ptysup.testing.fakemodel import FakeModel, RecordedRequest, RequestKind
from ptysup.testing.kit import agent_env
from ptysup.testing.scenario import Scenario
from tests.conftest import ClaudeEnvFactory, FakeModelFactory
from tests.helpers import (
    Run,
    Tmux,
    kill_all,
    processes_with,
    ptysup_argv,
    read_events,
    run_ptysup,
    terminal_script,
    wait_for,
)

AGENT = "claude --permission-mode acceptEdits"
DEMO = Path(__file__).resolve().parents[2] / "ptysup" / "testing" / "scenarios" / "demo.yaml"


@dataclass
class Rig:
    """One project dir, fake model and private Claude config, ready to run ptysup in."""

    project: Path
    model: FakeModel
    env: dict[str, str]
    log: Path
    agent: str = AGENT
    options: tuple[str, ...] = ()  # what every run of the rig is given (a supervisor)

    def argv(self, task: str, *args: str) -> list[str]:
        """ptysup's arguments for TASK with this rig's agent and options, then ARGS."""
        return [task, "--agent-cmd", self.agent, *self.options, *args]

    def run(self, task: str, *args: str, timeout: float = 120) -> Run:
        return run_ptysup(
            self.argv(task, *args),
            cwd=self.project,
            env=self.env,
            log_path=self.log,
            timeout=timeout,
        )

    def ptysup(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        """ptysup with exactly these arguments (a subcommand, a plan...), in the project."""
        return subprocess.run(
            ptysup_argv(*args),
            cwd=self.project,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def popen(self, task: str, *args: str) -> subprocess.Popen[str]:
        return self.start(*self.argv(task, "--log-file", str(self.log), *args))

    def in_terminal(
        self, tmux: Tmux, tmp_path: Path, task: str, *args: str, before: str = ""
    ) -> Path:
        """ptysup on TASK started in TMUX's pane, as a person starts it, after the shell
        command BEFORE; the file that holds its exit status once it is done."""
        done = tmp_path / "done"
        argv = ptysup_argv(*self.argv(task, "--log-file", str(self.log), *args))
        script = terminal_script(tmp_path / "run.sh", self.project, self.env, argv, done, before)
        tmux.start(script)
        return done

    def signalled(self, task: str, sig: signal.Signals, when: RequestKind, *args: str) -> int:
        """ptysup started on TASK, sent SIG once the model gets its first WHEN request;
        its exit code (it is killed if it has not ended 15 s later)."""
        proc = self.popen(task, *args)
        try:
            self.model.wait_for(lambda q: q.kind is when, timeout=120)  # a loaded machine
            proc.send_signal(sig)
            return proc.wait(timeout=15)
        finally:
            if proc.poll() is None:
                proc.kill()

    def killed_then_resumed(
        self, task: str, who: str, *args: str
    ) -> tuple[list[dict[str, Any]], subprocess.CompletedProcess[str]]:
        """TASK's run SIGKILLed once the supervisor is asked about its first turn, its agent
        (WHO, for the failure's message) seen gone, then `ptysup resume` with ARGS: the
        first run's events, and the resume (play TWO_PARTS)."""
        return self.killed_then_resumed_after(lambda: None, task, who, *args)

    def killed_then_resumed_after(
        self, between: Callable[[], object], task: str, who: str, *args: str
    ) -> tuple[list[dict[str, Any]], subprocess.CompletedProcess[str]]:
        """killed_then_resumed, with BETWEEN called once the killed run is gone."""
        self.signalled(task, signal.SIGKILL, RequestKind.SUPERVISOR)
        wait_for(lambda: not self.leftovers(), 20, f"{who} to exit after losing its terminal")
        first = read_events(self.log)
        between()
        return first, self.ptysup("resume", *args)

    def all_killed(self, task: str, when: Callable[[], bool], *args: str) -> list[dict[str, Any]]:
        """ptysup on TASK and its agent SIGKILLed together the moment WHEN says (as a pod's
        end or a machine's takes every process: nothing gets to write another line); the
        run's events. WHEN is polled every few milliseconds: some windows are that short."""
        proc = self.popen(task, *args)
        try:
            wait_for(lambda: self._agent_pid() is not None, 60, "the agent to start")
            agent = self._agent_pid()
            deadline = time.monotonic() + 90
            while not when():
                assert time.monotonic() < deadline and proc.poll() is None, "never came"
                time.sleep(0.002)
            with contextlib.suppress(ProcessLookupError):
                os.kill(agent or 0, signal.SIGKILL)
            proc.kill()
            proc.wait(timeout=15)
        finally:
            if proc.poll() is None:
                proc.kill()
        kill_all(self.leftovers())  # a supervisor under way, say
        wait_for(lambda: not self.leftovers(), 20, "every process of the run to be gone")
        return read_events(self.log)

    def unsaved_then_resumed(
        self, when: Callable[[], bool], unsaved: Callable[[str], bool] = lambda session: True
    ) -> list[dict[str, Any]]:
        """A run of UNSAVED's task killed with its agent the moment WHEN says (after the
        task was typed, before the agent saved a message of it), then resumed: the resume
        must start a new conversation with the task, not reopen one the agent never saved
        (which ended the agent at once, on every resume). The run's events.

        UNSAVED(session id) tells, from the agent's own files, that the kill came in time;
        on a loaded machine it may come late (the window is 0.1 s for Claude Code), and
        the run is made again, up to three times."""
        for _ in range(3):
            first = self.all_killed("do the thing", when)
            session = next(e["session_id"] for e in first if e["event"] == "agent_start")
            if unsaved(session):
                break
            shutil.rmtree(self.project / ".ptysup" / "runs" / first[0]["run_id"])
            self.log.unlink()
        else:
            raise AssertionError("the agent saved its prompt before every kill")
        resumed = self.ptysup("resume", "last", "--max-iter", "3")
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        events = read_events(self.log)
        warned = [e["message"] for e in events if e["event"] == "warning"]
        assert f"the agent never saved conversation {session}: a new one starts" in warned
        starts = [e["session_id"] for e in events if e["event"] == "agent_start"]
        assert len(starts) == 2 and starts[1] != session
        assert [e["kind"] for e in events if e["event"] == "inject"] == ["task", "task"]
        assert events[-1]["outcome"] == "complete"
        return events

    def _agent_pid(self) -> int | None:
        if not self.log.exists():
            return None
        started = [e for e in read_events(self.log) if e["event"] == "agent_start"]
        return int(started[-1]["pid"]) if started else None

    def start(self, *args: str) -> subprocess.Popen[str]:
        """ptysup with exactly these arguments, started in the project, output piped."""
        return subprocess.Popen(
            ptysup_argv(*args),
            cwd=self.project,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def human_texts(self, kind: RequestKind = RequestKind.AGENT) -> list[str]:
        """Distinct user messages the model saw, in order (tool round trips repeat them)."""
        seen: list[str] = []
        for r in self.model.requests_of(kind):
            if not seen or seen[-1] != r.human_text:
                seen.append(r.human_text)
        return seen

    def leftovers(self) -> list[int]:
        """Processes of this rig's agents (and supervisors) still alive: their private
        config dirs are in their environment."""
        keys = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "QWEN_HOME")
        homes = [self.env[k] for k in (*keys, HOME_MARKER) if k in self.env]
        if self.env.get("HOME", "") not in ("", os.environ.get("HOME")):
            homes.append(self.env["HOME"])  # a private home (aider's)
        return sorted({pid for home in homes for pid in processes_with(home)})


# The task of Rig.unsaved_then_resumed, done at once.
UNSAVED: Mapping[str, Any] = {
    "agent": [{"reply": "Did the thing."}],
    "supervisor": [{"reply": "[COMPLETE] done"}],
}
# What the resumed run's supervisor is told first.
RESUMED = "has just been resumed"
# A run in two parts: killed while the supervisor thinks about part one (see
# Rig.killed_then_resumed), resumed, told to do part two.
TWO_PARTS: Mapping[str, Any] = {
    "agent": [
        {"match": "part two", "reply": "Part two done."},
        {"reply": "Part one done."},
    ],
    "supervisor": [
        {"match": RESUMED, "reply": "[CONTINUE] now do part two"},
        {"times": 1, "delay": 120, "reply": "[COMPLETE] never given"},
        {"reply": "[COMPLETE] both parts are done"},
    ],
}


# A run killed in the middle of its second turn (the model never answers part two),
# resumed, told to do part three: that instruction must reach the model alone, in the
# conversation that holds part one.
MID_TURN: Mapping[str, Any] = {
    "agent": [
        {"match": "part three", "reply": "Part three done."},
        {"match": "part two", "delay": 120, "reply": "never read: ptysup is killed first"},
        {"reply": "Part one done."},
    ],
    "supervisor": [
        {"match": RESUMED, "reply": "[CONTINUE] now do part three"},
        {"match": "Part three done.", "reply": "[COMPLETE] all parts are done"},
        {"reply": "[CONTINUE] now do part two"},
    ],
}


def killed_mid_turn_then_resumed(
    r: Rig, who: str, *args: str, at: str = "part two"
) -> list[RecordedRequest]:
    """MID_TURN's run SIGKILLed once the model got the prompt AT, its agent (WHO) seen
    gone, then `ptysup resume` with ARGS (it must complete): the model's requests after."""
    proc = r.popen("do part one")
    try:
        r.model.wait_for(lambda q: q.kind is RequestKind.AGENT and at in q.human_text, 90)
        proc.kill()
        proc.wait(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    wait_for(lambda: not r.leftovers(), 20, f"{who} to exit after losing its terminal")
    before = len(r.model.requests_of(RequestKind.AGENT))
    resumed = r.ptysup("resume", "--max-iter", "5", *args)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert read_events(r.log)[-1]["outcome"] == "complete"
    return list(r.model.requests_of(RequestKind.AGENT)[before:])


@contextlib.contextmanager
def demo_run(
    agent: str, own: str
) -> Iterator[tuple[subprocess.CompletedProcess[str], Path | None]]:
    """`scripts/demo.sh --agent AGENT`, as a person runs it (no PTYSUP_ or OWN variables
    from the tests): its result, and the sample project it kept, removed afterwards."""
    repo = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PTYSUP_", own))}
    done = subprocess.run(
        ["bash", str(repo / "scripts" / "demo.sh"), "--agent", agent],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
    )
    kept = re.search(r"kept for you to look at: (\S+)", done.stderr)
    try:
        yield done, Path(kept.group(1)) if kept else None
    finally:
        if kept:
            shutil.rmtree(kept.group(1), ignore_errors=True)


def rigs(
    fake_model: FakeModelFactory,
    project_dir: Path,
    tmp_path: Path,
    env_for: Callable[[str], dict[str, str]],
    agent: str,
    options: tuple[str, ...] = (),
) -> Iterator[Callable[[Scenario | Path | Mapping[str, Any]], Rig]]:
    """Rigs whose environment `env_for(model_url)` gives (a fixture yields from it); no
    process may outlive them."""
    made: list[Rig] = []

    def make(scenario: Scenario | Path | Mapping[str, Any]) -> Rig:
        if isinstance(scenario, Path):
            scenario = Scenario.load(scenario)
        elif not isinstance(scenario, Scenario):
            scenario = Scenario.from_dict(scenario)
        scenario.seed(project_dir)
        model = fake_model(scenario)
        env = without_machine_profile(env_for(model.url), tmp_path / "shell")
        # Off unless a test wants it: the tests hold exactly what is typed at each
        # decision, and the wind-down adds a paragraph near a short budget's end
        # (tests/e2e/test_wind_down.py takes the default back).
        env.setdefault("PTYSUP_WIND_DOWN", "off")
        r = Rig(project_dir, model, env, tmp_path / "events.jsonl", agent, options)
        made.append(r)
        return r

    yield make
    for r in made:
        left = r.leftovers()
        named = {pid: _cmdline(pid) for pid in left}
        kill_all(left)
        assert not left, f"processes outlived ptysup: {named}"


# The private home's git identity: commits made in a test need no machine's ~/.gitconfig.
GIT_IDENTITY = "[user]\n\tname = ptysup tests\n\temail = tests@ptysup.invalid\n"
# bash, reading no startup file: the agents' login shells (Claude Code's `bash -c -l`, the
# snapshot it makes of ~/.bashrc) read the profile of whoever runs the tests otherwise.
NO_PROFILE_BASH = '#!/bin/sh\nexec /bin/bash --noprofile --norc "$@"\n'


def without_machine_profile(env: Mapping[str, str], where: Path) -> dict[str, str]:
    """ENV for agents whose shells read none of the machine's startup files: a private HOME
    (unless the agent's env already gives one) and SHELL a bash that reads no profile.

    A login shell killed with SIGKILL leaves pyenv's rehash lock behind
    (~/.pyenv/shims/.pyenv-shim): every later `pyenv init` in ~/.bashrc then waits 60 s
    for it, and Claude Code runs each Bash command, and its shell snapshot, through it."""
    env = dict(env)
    home = where / "home"
    home.mkdir(parents=True, exist_ok=True)
    if env.get("HOME") in (None, "", os.environ.get("HOME")):
        for name in (".profile", ".bash_profile", ".bashrc"):
            (home / name).write_text("# the tests' private home: no profile of the machine\n")
        (home / ".gitconfig").write_text(GIT_IDENTITY)
        env["HOME"] = str(home)
    shell = where / "bash"
    shell.write_text(NO_PROFILE_BASH)
    shell.chmod(0o755)
    env["SHELL"] = str(shell)
    for name in ("BASH_ENV", "ENV"):  # what a non-interactive bash or sh would source
        env.pop(name, None)
    return env


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200]
    except OSError:
        return "?"


@pytest.fixture
def rig(
    fake_model: FakeModelFactory, claude_env: ClaudeEnvFactory, project_dir: Path, tmp_path: Path
) -> Iterator[Callable[[Scenario | Path | Mapping[str, Any]], Rig]]:
    yield from rigs(fake_model, project_dir, tmp_path, lambda url: dict(claude_env(url).env), AGENT)


@pytest.fixture
def codex_rig(
    fake_model: FakeModelFactory,
    claude_env: ClaudeEnvFactory,
    codex_bin: Path,
    project_dir: Path,
    tmp_path: Path,
) -> Iterator[Callable[[Scenario | Path | Mapping[str, Any]], Rig]]:
    """Rigs whose agent is the pinned Codex CLI (in a private CODEX_HOME) and whose
    supervisor is `claude -p`, both talking to the same fake model."""
    yield from claude_and_codex_rigs(
        fake_model, claude_env, codex_bin, project_dir, tmp_path, "codex"
    )


def claude_and_codex_rigs(
    fake_model: FakeModelFactory,
    claude_env: ClaudeEnvFactory,
    codex_bin: Path,
    project_dir: Path,
    tmp_path: Path,
    agent: str,
) -> Iterator[Callable[[Scenario | Path | Mapping[str, Any]], Rig]]:
    """Rigs of AGENT with both the pinned Claude Code and Codex CLI (in a private
    CODEX_HOME) set up, talking to the same fake model."""
    with contextlib.ExitStack() as stack:

        def env_for(url: str) -> dict[str, str]:
            claude = claude_env(url).env  # the supervisor's, with the codex env's on top
            made = agent_env("codex", url, [project_dir], codex_bin, base=claude)
            return dict(stack.enter_context(made).env)

        yield from rigs(fake_model, project_dir, tmp_path, env_for, agent)


# Every agent ptysup drives, by its registry name, in the registry's order: the command
# the rigs start.
EVERY_AGENT = {
    "claude": "claude --permission-mode acceptEdits",
    "codex": "codex",
    "gemini": "gemini --approval-mode auto_edit",
    "qwen": "qwen --approval-mode auto-edit",
    "opencode": "opencode",
    "aider": "aider",
}


# Each agent's private home (besides Claude Code's, which every rig has for `claude -p`):
# (model url, binary, the environment under it, the project) -> its context manager.
def _private_home(name: str, url: str, binary: Path, base: Mapping[str, str], project: Path) -> Any:
    """Agent NAME's private offline home (Codex trusts the project folder too)."""
    if name == "codex":
        return agent_env(name, url, [project], binary, base=base)
    return agent_env(name, url, binary=binary, base=base)


def agent_rigs(
    request: pytest.FixtureRequest,
    name: str,
    fake_model: FakeModelFactory,
    claude_env: ClaudeEnvFactory,
    project_dir: Path,
    tmp_path: Path,
) -> Iterator[Callable[[Mapping[str, Any]], Rig]]:
    """Rigs of agent NAME, its pinned binary in a private home, `claude -p` supervising."""
    binary: Path = request.getfixturevalue(f"{name}_bin")
    if name == "aider":  # aider works in a git repository only
        subprocess.run(["git", "init", "-q", str(project_dir)], check=True)
    with contextlib.ExitStack() as stack:

        def env_for(url: str) -> dict[str, str]:
            claude = claude_env(url).env
            if name == "claude":
                return dict(claude)
            made = _private_home(name, url, binary, claude, project_dir)
            return dict(stack.enter_context(made).env)

        yield from rigs(fake_model, project_dir, tmp_path, env_for, EVERY_AGENT[name])


@pytest.fixture(params=list(EVERY_AGENT))
def every_agent_rig(
    request: pytest.FixtureRequest,
    fake_model: FakeModelFactory,
    claude_env: ClaudeEnvFactory,
    project_dir: Path,
    tmp_path: Path,
) -> Iterator[Callable[[Mapping[str, Any]], Rig]]:
    """Rigs of each agent, its pinned binary in a private home, `claude -p` supervising."""
    yield from agent_rigs(request, request.param, fake_model, claude_env, project_dir, tmp_path)


class Screen:
    """ptysup running in a tmux pane: its screen, its keys, its events (the terminal tests'
    `screen` fixture makes them)."""

    def __init__(self, r: Rig, tmp_path: Path, task: str, *args: str) -> None:
        self.rig = r
        self.tmux = Tmux("ptysup-person")
        self.done = r.in_terminal(self.tmux, tmp_path, task, *args)

    def text(self) -> str:
        # Claude Code puts a no-break space after its prompt glyph.
        return self.tmux.capture().replace("\xa0", " ")

    def send(self, message: str) -> None:
        """Type a message as the person does, and once the input box shows it, Enter."""
        self.tmux.send_keys("-l", message)
        wait_for(lambda: f"❯ {message}" in self.text(), 10, "the person's text in the box")
        self.tmux.send_keys("Enter")

    def status(self) -> str:
        lines = self.text().rstrip("\n").splitlines()
        return lines[-1] if lines else ""

    def events(self, name: str | None = None) -> list[dict[str, Any]]:
        if not self.rig.log.exists():
            return []
        return [e for e in read_events(self.rig.log) if name is None or e["event"] == name]

    def wait_event(self, name: str, timeout: float = 60, **fields: Any) -> dict[str, Any]:
        found: list[dict[str, Any]] = []

        def seen() -> bool:
            found[:] = [
                e for e in self.events(name) if all(e.get(k) == v for k, v in fields.items())
            ]
            return bool(found)

        wait_for(seen, timeout, f"a {name} event {fields} in {self.events()}")
        return found[0]

    def state(self) -> tuple[str, str]:
        """The run's (state, detail) as state.json says (what `ptysup runs` shows)."""
        for path in (self.rig.project / ".ptysup" / "runs").glob("*/state.json"):
            with contextlib.suppress(ValueError):  # replaced atomically, but be sure
                saved = json.loads(path.read_text())
                return saved["state"], saved["detail"]
        return "", ""

    def finish(self, timeout: float = 90) -> str:
        wait_for(self.done.exists, timeout, "ptysup to finish")
        return self.done.read_text()


@pytest.fixture
def screen(rig: Callable[..., Rig], tmp_path: Path) -> Iterator[Callable[..., Screen]]:
    made: list[Screen] = []

    def make(
        scenario: dict[str, Any], task: str, *args: str, env: dict[str, str] | None = None
    ) -> Screen:
        r = rig(scenario)
        r.env.update(env or {})
        s = Screen(r, tmp_path, task, *args)
        made.append(s)
        return s

    yield make
    for s in made:
        s.tmux.kill()  # a hang-up: ptysup winds down, and then the rig looks for leftovers
        with contextlib.suppress(AssertionError):
            wait_for(lambda s=s: not s.rig.leftovers(), 15, "the run to wind down")
