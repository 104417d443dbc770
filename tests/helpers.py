"""Shared test helpers: run the ptysup command, read its event log, check processes."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ptysup.agents.profile import AgentProfile
from ptysup.agents.session import Timings
from ptysup.terminal.pty_ import TERM_GRACE_S
from ptysup.terminal.record import as_bytes, read_cast
from ptysup.terminal.screen import ScreenFeeder, ScreenModel

REPO = Path(__file__).resolve().parent.parent
FAKES = REPO / "tests" / "fakes"


@dataclass
class Run:
    """A finished ptysup run."""

    code: int
    stdout: str
    stderr: str
    log_path: Path

    @property
    def events(self) -> list[dict[str, Any]]:
        return read_events(self.log_path)

    def named(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["event"] == name]


def assert_interrupted_then_cleared(run: Run, clear: str = "/clear") -> None:
    """The hard stop as the event log tells it: the interrupt (Esc), seen to stop the turn,
    then CLEAR (the agent's command for a new conversation) typed once and confirmed, and
    nothing else typed after the interrupt."""
    at = [e["event"] for e in run.events].index("interrupt")
    assert run.events[at]["confirmed"] is True
    typed = [(e["text"], e["confirmed"]) for e in run.events[at:] if e["event"] == "inject"]
    assert typed == [(clear, True)], typed
    assert [i["text"] for i in run.named("inject")].count(clear) == 1, run.named("inject")


@contextlib.contextmanager
def busy_cores(per_core: int = 2) -> Iterator[None]:
    """The machine under load for real: PER_CORE processes per core that keep it busy
    (never sleeping), started here and ended by their own pids when the block ends."""
    count = per_core * (os.cpu_count() or 1)
    spin = [sys.executable, "-I", "-S", "-c", "while True: pass"]
    procs = [subprocess.Popen(spin, stdin=subprocess.DEVNULL) for _ in range(count)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait()


# Without a person, an approval dialog reaches the supervisor as soon as the agent
# announced it and drew it: runs give it a --turn-timeout of DIALOG_STALL_S, so a dialog
# left to stall would fail the bound of DIALOG_AT_ONCE_S below by far.
DIALOG_STALL_S = "60"
DIALOG_AT_ONCE_S = 10.0


# How long after its turn-end hook a turn may end: the final frame's wait is bounded by
# the settle's own limit (ptysup.agents.settle), which a loaded machine may use up; the
# turn kind `stop` says the hook ended it (the quiet time alone would take --idle).
HOOK_TO_TURN_END_S = Timings().settle_max + 0.5


def assert_dialog_turn_end(run: Run) -> dict[str, Any]:
    """The first turn ended on the approval dialog the agent announced (its
    PermissionRequest, in ptysup's names), soon after it, with the dialog open; the
    turn_end event."""
    (asked,) = [e for e in run.named("hook") if e["name"] == "PermissionRequest"]
    turn = run.named("turn_end")[0]
    assert (turn["kind"], turn.get("dialog")) == ("dialog", True), turn
    assert turn["ts"] - asked["ts"] < DIALOG_AT_ONCE_S, (turn, asked)
    return turn


def replay_readings(
    cast: Path, profile: AgentProfile, signal_osc: int | None = None
) -> tuple[list[str], list[str]]:
    """A recorded run replayed through PROFILE: the screen states it read (unknown left
    out, repeats collapsed) and each text it read in the input box, in order. With
    SIGNAL_OSC the agent's in-band state reports are read into the screen, as in a run."""
    size, events = read_cast(cast)
    model = ScreenModel(size["height"], size["width"])
    # Never started: only its reader of the state reports is wanted.
    reports = ScreenFeeder(model, lambda: None, signal_osc=signal_osc) if signal_osc else None
    seen: list[tuple[str, str | None]] = []
    for _, code, data in events:
        if code != "o":
            continue
        if reports is not None:
            reports.put(as_bytes(data))
        model.feed(as_bytes(data))
        snap = model.snapshot()
        now = (profile.screen_state(snap).value, profile.input_text(snap))
        if not seen or seen[-1] != now:
            seen.append(now)
    states = [state for state, _ in seen if state != "unknown"]
    collapsed = [s for i, s in enumerate(states) if i == 0 or states[i - 1] != s]
    return collapsed, [text for _, text in seen if text]


def ask_step(
    header: str, question: str, labels: Sequence[str], multi: bool = False
) -> dict[str, Any]:
    """A fake-model step in which Claude Code's agent asks QUESTION with its picker."""
    options = [{"label": label, "description": f"about {label}"} for label in labels]
    return {
        "tool": "AskUserQuestion",
        "input": {
            "questions": [
                {"question": question, "header": header, "multiSelect": multi, "options": options}
            ]
        },
    }


def read_events(path: Path) -> list[dict[str, Any]]:
    """Every event in a JSONL log."""
    # Not splitlines(): JSON keeps U+2028 and U+0085 raw inside strings.
    return [json.loads(line) for line in path.read_text().split("\n") if line.strip()]


# The ptysup the end-to-end tests run: what ships. scripts/test.sh names the wheel that
# scripts/setup.sh installed into .tools/ptysup (as `pip install .` installs it) in
# PTYSUP_UNDER_TEST; without it (pytest run by hand) this checkout, by this interpreter.
SHIPPED_PYTHON = os.environ.get("PTYSUP_UNDER_TEST", "")


def ptysup_python() -> str:
    """The Python whose ptysup is under test."""
    return SHIPPED_PYTHON or sys.executable


def python_m(module: str, *args: str) -> list[str]:
    """`python -m MODULE ARGS` with the ptysup under test. Isolated (-I) for the shipped
    one, so the working directory (the checkout, say) never shadows the installed package."""
    if SHIPPED_PYTHON:
        return [SHIPPED_PYTHON, "-I", "-m", module, *args]
    return [sys.executable, "-m", module, *args]


def ptysup_argv(*args: str) -> list[str]:
    """The ptysup command under test."""
    return python_m("ptysup", *args)


def run_ptysup(
    args: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    log_path: Path,
    timeout: float = 120,
) -> Run:
    """Run ptysup with stdout piped (not a terminal) and wait for it."""
    proc = subprocess.run(
        ptysup_argv(*args, "--log-file", str(log_path)),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr, log_path)


def git(cwd: Path, *args: str) -> str:
    """git's output in CWD, as a user with a name (a commit needs one); fails loudly."""
    argv = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args]
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=True).stdout


def committed(project: Path, files: Mapping[str, str]) -> str:
    """FILES (path → text) written into PROJECT, made a new git repository and committed;
    its HEAD."""
    for name, text in files.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "base")
    return git(project, "rev-parse", "HEAD").strip()


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    """Wait until predicate() is true, checking every 50 ms; fail after `timeout`."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def descendants(pid: int) -> set[int]:
    """All live processes below `pid` (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found: set[int] = set()
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.add(child)
            stack.append(child)
    return found


def alive(pid: int) -> bool:
    """Whether `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def processes_with(marker: str) -> list[int]:
    """Live processes whose environment contains `marker` (to find a run's leftovers)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if marker.encode() in f.read() and alive(int(entry)):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def kill_all(pids: Sequence[int], grace: float = TERM_GRACE_S) -> None:
    """End PIDS as ptysup ends its agent: SIGTERM, up to GRACE seconds for them to go (an
    agent restores its terminal, a node process ends its children), then SIGKILL, and a
    moment more for that to land."""
    for sig, within in ((signal.SIGTERM, grace), (signal.SIGKILL, 2.0)):
        for pid in [pid for pid in pids if alive(pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + within
        while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.02)


# A process that only burns CPU, pinned to one core.
_BUSY = "import os, sys\nos.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True:\n    pass\n"


@contextlib.contextmanager
def loaded_core(busy: int = 2) -> Iterator[int]:
    """Real load on one core: BUSY processes spinning on it, and this process (with the
    children it starts) moved to the other cores; yields the core, for a program the
    test pins there (`taskset -c CORE …`). Everything is undone on the way out."""
    cores = os.sched_getaffinity(0)
    if len(cores) < 2:
        raise RuntimeError("loaded_core needs two cores: one to load, one for the test")
    core = max(cores)
    spinners = [subprocess.Popen([sys.executable, "-c", _BUSY, str(core)]) for _ in range(busy)]
    os.sched_setaffinity(0, cores - {core})
    try:
        yield core
    finally:
        os.sched_setaffinity(0, cores)
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


class Tmux:
    """A private tmux server with one pane running a command: a real terminal for tests."""

    def __init__(self, name: str, cols: int = 120, rows: int = 40) -> None:
        self._base = ["tmux", "-L", f"{name}-{os.getpid()}"]
        self.cols, self.rows = cols, rows

    def start(self, script: Path) -> None:
        subprocess.run(
            [
                *self._base,
                "new-session",
                "-d",
                "-x",
                str(self.cols),
                "-y",
                str(self.rows),
                "bash",
                str(script),
            ],
            check=True,
        )

    def capture(self, history: bool = False) -> str:
        """The pane's screen (`history`: with every line above it, from the first)."""
        start = ["-S", "-"] if history else []
        return subprocess.run(
            [*self._base, "capture-pane", "-p", *start], capture_output=True, text=True
        ).stdout

    def display(self, fmt: str) -> str:
        """A tmux format (e.g. `#{alternate_on}`) evaluated for the pane."""
        return subprocess.run(
            [*self._base, "display-message", "-p", fmt], capture_output=True, text=True
        ).stdout.strip()

    def send_keys(self, *keys: str) -> None:
        subprocess.run([*self._base, "send-keys", *keys], check=True)

    def resize(self, cols: int, rows: int) -> None:
        subprocess.run([*self._base, "resize-window", "-x", str(cols), "-y", str(rows)], check=True)

    def pipe_to(self, path: Path) -> None:
        """Append every byte the pane's program writes to `path` (what a terminal gets)."""
        import shlex

        subprocess.run([*self._base, "pipe-pane", "-o", f"cat >> {shlex.quote(str(path))}"])

    def kill(self) -> None:
        subprocess.run([*self._base, "kill-server"], capture_output=True)


def terminal_script(
    path: Path,
    cwd: Path,
    env: Mapping[str, str],
    argv: Sequence[str],
    done: Path,
    before: str = "",
) -> Path:
    """A bash script that runs `before` (shell), then argv with env (given to it alone,
    so the pane's shell is no leftover of the run), then writes its exit code and
    `stty -a` to `done`."""
    import shlex

    command = shlex.join(["env", *(f"{k}={v}" for k, v in env.items()), *argv])
    path.write_text(
        f"cd {shlex.quote(str(cwd))}\n{before}\n{command}\n"
        f'echo "exit=$?" > {done}.tmp\nstty -a >> {done}.tmp\nmv {done}.tmp {done}\n'
        "sleep 60\n"
    )
    return path


class EventList:
    """An EventLog sink that keeps every event in a list (for unit tests)."""

    def __init__(self) -> None:
        from ptysup.events import Event

        self.events: list[Event] = []

    def write(self, event: Any) -> None:
        self.events.append(event)

    def close(self) -> None:
        pass

    def names(self) -> list[str]:
        return [e.event for e in self.events]


class Tick:
    """A clock that moves `step` seconds at each reading."""

    def __init__(self, step: float = 0.5) -> None:
        self.t = 0.0
        self._step = step

    def __call__(self) -> float:
        self.t += self._step
        return self.t


class GatedModel(ScreenModel):
    """A ScreenModel whose feed waits for the gate: the slowest model there could be."""

    def __init__(self, rows: int, cols: int) -> None:
        super().__init__(rows, cols)
        self.gate = threading.Event()
        self.entered = threading.Event()

    def feed(self, data: bytes) -> None:
        self.entered.set()
        self.gate.wait()
        super().feed(data)


def fresh_copy(dst: Path) -> Path:
    """The repository's files as a fresh clone of this tree has them (tracked and new ones,
    with their changes; nothing ignored: no .venv, no .tools), copied into DST."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = REPO / name
        if source.is_file():  # not a file deleted in the work tree
            (dst / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dst / name)
    return dst


def run_group(
    argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """ARGV to its end, stdin empty, output captured, in its own process group: on a
    timeout the whole group (an installer it started included) is killed, then it fails."""
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"{shlex.join(argv)} still ran after {timeout}s:\n{err}") from None
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
