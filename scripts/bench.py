"""ptysup's performance, measured: what the person pays for running the agent under ptysup.

    .venv/bin/python scripts/bench.py            # everything, a few minutes
    .venv/bin/python scripts/bench.py --quick    # scaled down (10 MB, 5 s idle, 100 MB RSS)
    .venv/bin/python scripts/bench.py --only relay,model --json out.json

Throughputs are medians of several runs and latencies percentiles over many samples;
comparisons (`script -q`, stock pyte) run in the same invocation, interleaved, and are
reported as ratios, since a shared machine's speed drifts. The table goes to stdout, then
the same results as one JSON object (and to --json).

Items:
  relay      50 MB printed by an agent, read from ptysup's terminal as fast as possible,
             against the same bytes through `script -q` (plain text, and an ANSI-heavy
             stream made of the recorded Claude Code transcripts)
  quiet      after that flood, how long until the screen model shows the last output
  model      screen-model MB/s, stock pyte 0.8.2 against ptysup's screen
  turn_end   Claude Code's Stop hook firing → the snapshot of its final frame (a quiet
             window after the hook) → the supervisor has the whole prompt (real Claude
             Code and the fake model; needs `python -m ptysup.testing.kit claude install`),
             and last output byte → turn end for an agent without hooks; for Gemini CLI,
             its last frame before the turn end → turn_end (ptysup's part) against its
             model's answer → that frame (its own: its AfterAgent hook runs in between,
             and it draws its Ready frame after it), as a ratio (needs
             `python -m ptysup.testing.kit gemini install`)
  question   the agent asks (AskUserQuestion): its PreToolUse hook firing → the supervisor
             has the prompt, and the supervisor's answer → the model's next request carrying it
             (real Claude Code and the fake model)
  decision   ptysup's own time per decision: prompt build, supervisor spawn, parse
  idle_cpu   CPU used by ptysup (and its recording writer) while the agent idles for 30 s,
             in a terminal (the status clock ticks) and without one (CI)
  rss        ptysup's peak RSS while the agent prints 1 GB (and its writer's, apart)
  cold       `ptysup --help` cold start
  judge      bytes per supervisor request (the demo, real Claude Code as the judge), the
             share of bytes identical between consecutive decisions and of their common
             prefix, against a bare `claude -p` given the same prompt
  warm       turn end → parsed decision with and without the warm spare (an instant
             model), and the spare's memory while it waits
  exit       a whole run of an agent printing 100 MB then exiting, recording on, against
             two nested `script`s (the same two PTY hops), with --no-recording, and under
             a terminal that never answers ptysup's cursor query (as `script` in CI);
             then a run of an agent that only prints `hi`, under that terminal
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import difflib
import functools
import itertools
import json
import os
import random
import select
import shlex
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ptyprocess import PtyProcess

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # `python scripts/bench.py` from anywhere

TRANSCRIPTS = REPO / "fixtures" / "transcripts"
FAKE_SUPERVISOR = REPO / "tests" / "fakes" / "supervisor.py"
PYTHON = sys.executable
SIZE = (40, 120)  # rows, cols of every terminal here
MB = 1_000_000

START, END = b"@@BENCH-START@@", b"@@BENCH-END@@"

# The agent: prints START, the payload file in 64 KB writes, END and a final screen line,
# then stays (for ptysup, which then types the task and asks the supervisor) or exits.
PRINTER = textwrap.dedent(
    """\
    import os, sys, time
    payload, stay, done = sys.argv[1], sys.argv[2] == "stay", sys.argv[3]
    data = open(payload, "rb").read()
    repeat = int(sys.argv[4])
    def write(b):
        view = memoryview(b)
        while view:
            view = view[os.write(1, view):]
    write(b"\\r\\n@@BENCH-START@@\\r\\n")
    for _ in range(repeat):
        for i in range(0, len(data), 65536):
            write(data[i:i + 65536])
    write(b"\\x1b[0m\\r\\n@@BENCH-END@@\\r\\nFINAL SCREEN LINE\\r\\n")
    open(done, "w").write(repr(time.time()))
    if stay:
        os.read(0, 1)
        time.sleep(60)
    """
)


# -- inputs ------------------------------------------------------------------------------
# Each agent's recorded sessions: Claude Code's at the top of fixtures/transcripts/, every
# other agent's in a folder of its name (recorded by ptysup --record, 120x40).
AGENT_TRANSCRIPTS = {"Claude Code": TRANSCRIPTS, "Codex": TRANSCRIPTS / "codex"}
AGENT_TRANSCRIPTS["Gemini CLI"] = TRANSCRIPTS / "gemini"


def redraw_stream(folder: Path = TRANSCRIPTS) -> bytes:
    """Every output event of the agent's recorded sessions in FOLDER, in order."""
    from ptysup.terminal.record import output_bytes

    return b"".join(output_bytes(cast) for cast in sorted(folder.glob("*.cast")))


WORDS = (
    "the quick brown fox jumps over a lazy dog while tests pass and builds fail "
    "compiling linking error warning src/module.py line 42 assert ok"
)


def plain_text(size: int) -> bytes:
    """Log-like plain text lines of 0-25 words."""
    rnd = random.Random(1)
    words = str.split(WORDS)
    lines, total = [], 0
    while total < size:
        line = " ".join(rnd.choice(words) for _ in range(rnd.randint(0, 25))).encode() + b"\n"
        lines.append(line)
        total += len(line)
    return b"".join(lines)


def payload_file(tmp: Path, kind: str) -> tuple[Path, int]:
    """A ~1 MB payload file of KIND (plain/ansi) and how many bytes it holds."""
    path = tmp / f"payload-{kind}.bin"
    if kind == "plain":
        data = plain_text(MB)
    else:
        block = redraw_stream()
        data = block * (MB // len(block) + 1)
    path.write_bytes(data)
    return path, len(data)


# -- a terminal we own ----------------------------------------------------------------------
DSR = b"\x1b[6n"  # "where is the cursor?"


@dataclass
class Terminal:
    """A program on a PTY of our own, its output read as fast as we can."""

    proc: PtyProcess
    seen: bytearray = field(default_factory=bytearray)
    marks: dict[bytes, float] = field(default_factory=dict)
    total: int = 0
    answers: bool = True  # False: like `script` with no terminal behind it (CI)

    @classmethod
    def spawn(
        cls, argv: Sequence[str], env: dict[str, str], cwd: Path, answers: bool = True
    ) -> Terminal:
        proc = PtyProcess.spawn(list(argv), env=env, cwd=str(cwd), dimensions=SIZE)
        return cls(proc, answers=answers)

    def pump(self, until: Callable[[Terminal], bool], timeout: float) -> None:
        """Read until UNTIL holds, EOF, or TIMEOUT; note when START/END first show up."""
        fd = self.proc.fd
        deadline = time.monotonic() + timeout
        while not until(self):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("terminal: timed out")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            try:
                data = os.read(fd, 1 << 20)
            except OSError:
                data = b""
            now = time.perf_counter()
            if not data:
                self.marks.setdefault(b"EOF", now)
                return
            self.total += len(data)
            tail = bytes(self.seen[-64:]) + data
            if self.answers and DSR in tail[-len(data) - len(DSR) + 1 :]:
                # Like any real terminal (xterm, tmux, a terminal under `script`): ptysup
                # asks where the cursor is when it starts (and once waited for the answer).
                os.write(fd, b"\x1b[1;1R")
            for mark in (START, END):
                if mark not in self.marks and mark in tail:
                    self.marks[mark] = now
            self.seen = bytearray(tail[-4096:])

    def close(self) -> int | None:
        with contextlib.suppress(Exception):
            self.pump(lambda t: b"EOF" in t.marks, 30)
        self.proc.close(force=True)
        status: int | None = self.proc.exitstatus
        return status


def ptysup_argv(
    task: str, agent: Sequence[str], tmp: Path, *extra: str, idle: float = 0.3
) -> list[str]:
    """ptysup with a generic agent and the fake supervisor answering [COMPLETE]."""
    return [
        PYTHON,
        "-m",
        "ptysup",
        task,
        "--agent-cmd",
        " ".join(agent),
        "--supervisor-cmd",
        f"{PYTHON} {FAKE_SUPERVISOR}",
        "--idle",
        str(idle),
        "--log-file",
        str(tmp / "events.jsonl"),
        *extra,
    ]


def bench_env(tmp: Path, answers: Sequence[str] = ("[COMPLETE] done",)) -> dict[str, str]:
    (tmp / "answers.json").write_text(json.dumps(list(answers)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PTYSUP_")}
    env.update(
        FAKE_SUPERVISOR_ANSWERS=str(tmp / "answers.json"),
        FAKE_SUPERVISOR_LOG=str(tmp / "supervisor.jsonl"),
        TERM="xterm-256color",
        PYTHONPATH=str(REPO),
    )
    return env


def read_events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@contextlib.contextmanager
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ptysup-bench-") as tmp:
        yield Path(tmp)


# -- relay ------------------------------------------------------------------------------
def relay_once(tmp: Path, via: str, kind: str, repeat: int, extra: Sequence[str]) -> dict[str, Any]:
    payload, size = payload_file(tmp, kind)
    script = tmp / "printer.py"
    script.write_text(PRINTER)
    done = tmp / "printer.done"
    env = bench_env(tmp)
    if via == "script":
        agent = ["python3", str(script), str(payload), "exit", str(done), str(repeat)]
        argv = ["script", "-q", "-c", " ".join(agent), "/dev/null"]
    else:
        agent = ["python3", str(script), str(payload), "stay", str(done), str(repeat)]
        argv = ptysup_argv("bench task", agent, tmp, *extra)
    term = Terminal.spawn(argv, env, tmp)
    term.pump(lambda t: END in t.marks, timeout=300)
    seconds = term.marks[END] - term.marks[START]
    status = term.close()
    result: dict[str, Any] = {"mb_s": size * repeat / seconds / MB, "seconds": seconds}
    if via != "script":
        prompts = (
            [
                json.loads(line)["prompt"]
                for line in (tmp / "supervisor.jsonl").read_text().splitlines()
                if line.strip()
            ]
            if (tmp / "supervisor.jsonl").exists()
            else []
        )
        result["exit"] = status
        result["final_screen_ok"] = bool(prompts) and "FINAL SCREEN LINE" in prompts[0]
    return result


def bench_relay(quick: bool, runs: int) -> dict[str, Any]:
    repeat = 10 if quick else 50  # MB
    out: dict[str, Any] = {"mb": repeat, "runs": runs}
    variants: list[tuple[str, list[str]]] = [("ptysup", [])]
    if "--no-recording" in ptysup_help():
        variants.append(("ptysup_no_recording", ["--no-recording"]))
    for kind in ("plain", "ansi"):
        rows: dict[str, list[dict[str, Any]]] = {"script": [], **{v: [] for v, _ in variants}}
        for _ in range(runs):
            for via, extra in [("script", []), *variants]:
                with workdir() as tmp:
                    rows[via].append(relay_once(tmp, via, kind, repeat, extra))
        script_mb_s = median([r["mb_s"] for r in rows["script"]])
        entry: dict[str, Any] = {"script_mb_s": round(script_mb_s, 1)}
        for via, _ in variants:
            mb_s = median([r["mb_s"] for r in rows[via]])
            entry[f"{via}_mb_s"] = round(mb_s, 1)
            entry[f"{via}_ratio"] = round(mb_s / script_mb_s, 2)
            entry[f"{via}_final_screen_ok"] = all(r["final_screen_ok"] for r in rows[via])
        out[kind] = entry
    return out


@functools.cache
def ptysup_help() -> str:
    """`ptysup --help`, to see which options this version has."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    argv = [PYTHON, "-m", "ptysup", "--help"]
    return subprocess.run(argv, capture_output=True, text=True, env=env).stdout


# -- quiet: the screen after a flood ----------------------------------------------------------
def quiet_once(tmp: Path, kind: str, repeat: int) -> dict[str, Any]:
    """In-process: the real relay and feeder; time from the relay reading the last byte to
    the first on_update whose snapshot shows it."""
    from ptysup.terminal.pty_ import AgentProcess
    from ptysup.terminal.relay import Relay, RelayHandlers
    from ptysup.terminal.screen import ScreenFeeder, ScreenModel

    payload, size = payload_file(tmp, kind)
    script = tmp / "printer.py"
    script.write_text(PRINTER)
    agent = AgentProcess.spawn(
        ["python3", str(script), str(payload), "stay", str(tmp / "done"), str(repeat)],
        cwd=str(tmp),
        env=dict(os.environ),
        size=SIZE,
    )
    model = ScreenModel(*SIZE)
    last_byte = [0.0]
    shown = threading.Event()
    shown_at = [0.0]
    updates = [0]

    def on_update() -> None:
        updates[0] += 1
        if not shown.is_set() and "FINAL SCREEN LINE" in model.snapshot().text():
            shown_at[0] = time.perf_counter()
            shown.set()

    feeder = ScreenFeeder(model, on_update)
    feeder.start()
    wake_r, wake_w = os.pipe()
    sig_r, sig_w = os.pipe()
    null = os.open(os.devnull, os.O_WRONLY)

    read = agent.read

    def timed_read(size: int = 65536) -> bytes:  # when the relay got the last byte
        data = read(size)
        if data:
            last_byte[0] = time.perf_counter()
        return data

    agent.read = timed_read  # type: ignore[method-assign]
    relay = Relay(
        agent,
        RelayHandlers(feeder.put, lambda: None, lambda _: None, lambda _r, _c: None),
        signal_fd=sig_r,
        wake_fd=wake_r,
        out_fd=null,
    )

    def stop_when_shown() -> None:
        shown.wait(120)
        time.sleep(0.2)  # no later output may arrive
        os.write(wake_w, b"x")

    threading.Thread(target=stop_when_shown, daemon=True).start()
    start = time.perf_counter()
    relay.run()
    agent.terminate(grace=0.5)
    agent.close()
    feeder.stop()
    for fd in (wake_r, wake_w, sig_r, sig_w, null):
        os.close(fd)
    return {
        "latency_ms": (shown_at[0] - last_byte[0]) * 1000 if shown.is_set() else float("nan"),
        "relay_mb_s": size * repeat / (last_byte[0] - start) / MB,
        "seconds": last_byte[0] - start,
        "updates": updates[0],
        "dropped_mb": getattr(feeder, "dropped", 0) / MB,  # older feeders did not count
    }


def bench_quiet(quick: bool, runs: int) -> dict[str, Any]:
    repeat = 10 if quick else 50
    out: dict[str, Any] = {"mb": repeat}
    for kind in ("plain", "ansi"):
        rows = []
        for _ in range(runs):
            with workdir() as tmp:
                rows.append(quiet_once(tmp, kind, repeat))
        out[kind] = {
            "latency_ms_p50": round(median([r["latency_ms"] for r in rows]), 1),
            "latency_ms_max": round(max(r["latency_ms"] for r in rows), 1),
            "updates_per_s": round(median([r["updates"] / r["seconds"] for r in rows]), 1),
            "dropped_mb": round(median([r["dropped_mb"] for r in rows]), 1),
        }
    return out


# -- model ------------------------------------------------------------------------------
def model_mb_s(data: bytes, stock: bool) -> float:
    """MB/s of one screen model fed DATA in 4 KB reads (thread CPU time)."""
    import pyte

    from ptysup.terminal.screen import ScreenModel

    if stock:

        class Screen(pyte.Screen):
            # Stock pyte raises on `CSI > 4 ; 1 m` (xterm's modifyOtherKeys, which Codex
            # sends), and its stream then stops: it is ignored here, as ptysup does.
            def select_graphic_rendition(self, *attrs: int, private: bool = False) -> None:
                if not private:
                    super().select_graphic_rendition(*attrs)

        stream = pyte.ByteStream(Screen(SIZE[1], SIZE[0]))
        feed = stream.feed
    else:
        feed = ScreenModel(*SIZE).feed
    start = time.thread_time()
    for i in range(0, len(data), 4096):
        feed(data[i : i + 4096])
    return len(data) / (time.thread_time() - start) / MB


def bench_model(quick: bool, runs: int) -> dict[str, Any]:
    inputs = {}
    for agent, folder in AGENT_TRANSCRIPTS.items():
        block = redraw_stream(folder)
        if block:  # an agent's redraw, repeated to a few MB
            inputs[f"redraw {agent}"] = block * ((2 if quick else 5) * MB // len(block) + 1)
    inputs["plain"] = plain_text((1 if quick else 3) * MB)
    out: dict[str, Any] = {}
    for name, data in inputs.items():
        stock, fast = [], []
        for _ in range(runs):  # interleaved, so both see the same machine
            stock.append(model_mb_s(data, stock=True))
            fast.append(model_mb_s(data, stock=False))
        out[name] = {
            "stock_mb_s": round(median(stock), 2),
            "ptysup_mb_s": round(median(fast), 2),
            "speedup": round(median(fast) / median(stock), 1),
        }
    return out


# -- turn end → supervisor ----------------------------------------------------------------
# The supervisor: notes when it has the whole prompt (ptysup closes its stdin after
# writing it), then answers [CONTINUE] until the last sample, then [COMPLETE]. Not when it
# started: the warm spare starts before the turn ends, a cold one just after (sh and date
# start in about a millisecond), and either way the decision begins with the prompt.
SUPERVISOR_SH = """\
cat > /dev/null
date +%s.%N >> "$BENCH_DIR/prompted.log"
if [ "$(wc -l < "$BENCH_DIR/prompted.log")" -ge "$BENCH_SAMPLES" ]; then
  echo "[COMPLETE] done"
else
  echo "[CONTINUE] Once more, please."
fi
"""

# A generic agent: waits for a line, prints for a moment, notes its last write.
QUIET_AGENT = textwrap.dedent(
    """\
    import os, sys, time
    os.write(1, b"ready> ")
    while sys.stdin.buffer.readline():
        for i in range(5):
            os.write(1, b"working %d\\r\\n" % i)
            time.sleep(0.02)
        os.write(1, b"done\\r\\n> ")
        with open(sys.argv[1], "a") as f:
            f.write(repr(time.time()) + "\\n")
    """
)


def times(path: Path) -> list[float]:
    return [float(x) for x in path.read_text().split()] if path.exists() else []


def same_answer(samples: int) -> list[str]:
    """SAMPLES + 1 turns, one answer again and again (what is timed, not spinning)."""
    return ["--max-iter", str(samples + 1), "--max-repeats", "0"]


def same_reply_project(tmp: Path) -> tuple[Path, Any]:
    """The project and scenario of a turn-end bench: the agent says "Done." each turn, and
    supervisor.sh (in TMP) asks for once more, SAMPLES times."""
    from ptysup.testing.scenario import Scenario

    project = tmp / "project"
    project.mkdir()
    (tmp / "supervisor.sh").write_text(SUPERVISOR_SH)
    scenario = Scenario.from_dict(
        {"agent": [{"reply": "Done."}], "supervisor": [{"reply": "[COMPLETE] unused"}]}
    )
    return project, scenario


def run_turns(
    tmp: Path,
    project: Path,
    agent_env: Mapping[str, str],
    agent: str,
    samples: int,
    task: str,
    *extra: str,
) -> None:
    """ptysup on AGENT for TASK, its supervisor TMP/supervisor.sh (SAMPLES decisions),
    logging to TMP/events.jsonl and recording to TMP/agent.cast."""
    env = {k: v for k, v in agent_env.items() if not k.startswith("PTYSUP_")}
    env.update(BENCH_DIR=str(tmp), BENCH_SAMPLES=str(samples), PYTHONPATH=str(REPO))
    argv = [
        PYTHON,
        "-m",
        "ptysup",
        task,
        "--agent-cmd",
        agent,
        "--supervisor-cmd",
        f"sh {tmp / 'supervisor.sh'}",
        "--log-file",
        str(tmp / "events.jsonl"),
        "--record",
        str(tmp / "agent.cast"),
        *extra,
    ]
    subprocess.run(
        argv, cwd=project, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=600
    )


def hooks_latency(tmp: Path, samples: int) -> tuple[list[float], list[float]]:
    """Claude Code's Stop hook firing → the supervisor has the prompt, and → the turn_end event
    (logged once the final frame settled, just before the snapshot), in ms, per turn."""
    from ptysup.testing.fakemodel import FakeModel
    from ptysup.testing.kit import agent_env
    from ptysup.testing.pins import pin

    binary = pin("claude").find()
    if binary is None or not binary.exists():
        raise FileNotFoundError("Claude Code is not installed")
    project, scenario = same_reply_project(tmp)
    with (
        FakeModel(scenario, workdir=project, log_path=tmp / "model.jsonl") as model,
        agent_env("claude", model.url, [project], binary) as ce,
    ):
        # A second Stop hook, next to ptysup's: Claude Code starts both at once.
        settings_path = ce.home / "settings.json"
        settings = json.loads(settings_path.read_text())
        fired = f"date +%s.%N >> {tmp / 'fired.log'}"
        settings["hooks"] = {"Stop": [{"hooks": [{"type": "command", "command": fired}]}]}
        settings_path.write_text(json.dumps(settings))
        run_turns(
            tmp, project, ce.env, "claude", samples, "Reply with one word.", *same_answer(samples)
        )
    fired_at, prompted_at = times(tmp / "fired.log"), times(tmp / "prompted.log")
    ended_at = [e["ts"] for e in read_events(tmp / "events.jsonl") if e["event"] == "turn_end"]
    return (
        [(s - f) * 1000 for f, s in zip(fired_at, prompted_at, strict=False)],
        [(e - f) * 1000 for f, e in zip(fired_at, ended_at, strict=False)],
    )


def gemini_turn_latency(tmp: Path, samples: int) -> tuple[list[float], list[float]]:
    """Gemini CLI's turn ends, in ms per turn: its own time, from its model's last answer
    to the last frame it drew before the turn end (its AfterAgent hook runs in between,
    and it draws on once its hooks ran), and ptysup's, from that frame to the turn_end
    event (the frame's time read from the recording, aligned by its turn_end markers)."""
    from ptysup.testing.fakemodel import FakeModel, RequestKind
    from ptysup.testing.kit import agent_env
    from ptysup.testing.pins import pin

    binary = pin("gemini").find()
    if binary is None or not binary.exists():
        raise FileNotFoundError("Gemini CLI is not installed")
    project, scenario = same_reply_project(tmp)
    with (
        FakeModel(scenario, workdir=project) as model,
        agent_env("gemini", model.url, binary=binary) as ge,
    ):
        run_turns(
            tmp, project, ge.env, "gemini", samples, "Reply with one word.", *same_answer(samples)
        )
        answered = [q.time for q in model.requests_of(RequestKind.AGENT)]
    ends = [e["ts"] for e in read_events(tmp / "events.jsonl") if e["event"] == "turn_end"]
    drawn = output_frames(tmp / "agent.cast", ends)
    own, ours = [], []
    for end in ends:
        last = max((t for t in answered if t <= end), default=None)
        frame = max((t for t in drawn if t <= end), default=None)
        if last is not None and frame is not None and frame >= last:
            own.append((frame - last) * 1000)
            ours.append((end - frame) * 1000)
    return own, ours


def output_frames(cast: Path, ends: Sequence[float]) -> list[float]:
    """When the recording's output frames came, on the event log's clock: the recording
    counts from its start, and marks each turn_end."""
    frames = [json.loads(line) for line in cast.read_text().splitlines()[1:]]
    marks = [f[0] for f in frames if f[1] == "m" and str(f[2]).startswith("turn_end")]
    if not marks:
        return []
    offset = statistics.median(e - m for e, m in zip(ends, marks, strict=False))
    return [f[0] + offset for f in frames if f[1] == "o"]


def quiet_turn_latency(tmp: Path, samples: int, idle: float) -> list[float]:
    """An agent without hooks: last output byte → turn_end event, in ms, minus --idle."""
    (tmp / "agent.py").write_text(QUIET_AGENT)
    (tmp / "supervisor.sh").write_text(SUPERVISOR_SH)
    env = bench_env(tmp)
    env.update(BENCH_DIR=str(tmp), BENCH_SAMPLES=str(samples))
    argv = [
        PYTHON,
        "-m",
        "ptysup",
        "go",
        "--agent-cmd",
        f"python3 {tmp / 'agent.py'} {tmp / 'last_write.log'}",
        "--supervisor-cmd",
        f"sh {tmp / 'supervisor.sh'}",
        "--idle",
        str(idle),
        "--max-iter",
        str(samples + 1),
        "--max-repeats",  # one answer again and again is what is timed, not spinning
        "0",
        "--log-file",
        str(tmp / "events.jsonl"),
    ]
    subprocess.run(
        argv, cwd=tmp, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=300
    )
    ends = [e["ts"] for e in read_events(tmp / "events.jsonl") if e["event"] == "turn_end"]
    last = times(tmp / "last_write.log")
    return [(e - w - idle) * 1000 for w, e in zip(last, ends, strict=False)]


def two_latencies(
    measure: Callable[[Path, int], tuple[list[float], list[float]]],
    samples: int,
    names: tuple[str, str],
) -> dict[str, Any]:
    """MEASURE's two series of latencies, each as NAMES' p50 and p99; or why it was skipped
    (the agent is not installed)."""
    try:
        with workdir() as tmp:
            series = measure(tmp, samples)
    except (OSError, subprocess.SubprocessError) as exc:
        return {"skipped": str(exc)}
    out: dict[str, Any] = {"samples": len(series[1])}
    for name, values in zip(names, series, strict=True):
        out[f"{name}_p50"] = round(percentile(values, 0.5), 1)
        out[f"{name}_p99"] = round(percentile(values, 0.99), 1)
    return out


def bench_turn_end(quick: bool, runs: int) -> dict[str, Any]:
    samples = 5 if quick else 12
    out: dict[str, Any] = {}
    out["hooks"] = two_latencies(
        hooks_latency, samples, ("stop_to_prompt_ms", "stop_to_snapshot_ms")
    )
    out["gemini"] = two_latencies(
        gemini_turn_latency, samples, ("answer_to_frame_ms", "frame_to_turn_end_ms")
    )
    g = out["gemini"]
    if "skipped" not in g:
        # ptysup's part (its handling, once Gemini CLI drew its Ready frame) against Gemini
        # CLI's own: a ratio, as the machine's speed drifts. 0.07 here; 0.58 when it waited
        # for 0.05 s of quiet screen too; far above 1 when it waits for a frame that never
        # comes (the 1 s bound).
        g["ours_to_own_p50"] = round(g["frame_to_turn_end_ms_p50"] / g["answer_to_frame_ms_p50"], 2)
    idle = 0.5
    with workdir() as tmp:
        quiet = quiet_turn_latency(tmp, samples, idle)
    out["no_hooks"] = {
        "samples": len(quiet),
        "idle_s": idle,
        "overhead_ms_p50": round(percentile(quiet, 0.5), 1),
        "overhead_ms_p99": round(percentile(quiet, 0.99), 1),
    }
    return out


# -- questions ---------------------------------------------------------------------------
QUESTION_SUPERVISOR_SH = """\
cat > /dev/null
date +%s.%N >> "$BENCH_DIR/prompted.log"
if [ "$(wc -l < "$BENCH_DIR/prompted.log")" -gt "$BENCH_SAMPLES" ]; then
  echo "[COMPLETE] done"
else
  echo "[CONTINUE] SQLite"
fi
date +%s.%N >> "$BENCH_DIR/answered.log"
"""
QUESTION = {
    "tool": "AskUserQuestion",
    "input": {
        "questions": [
            {
                "question": "Which storage?",
                "header": "Storage",
                "multiSelect": False,
                # Claude Code rejects an option without a description.
                "options": [
                    {"label": "SQLite", "description": "a file"},
                    {"label": "Redis", "description": "a server"},
                ],
            }
        ]
    },
}


def question_latency(tmp: Path, samples: int) -> tuple[list[float], list[float]]:
    """Per question, in ms: hook fired → the supervisor has the prompt; it answered → the
    model received the answer."""
    from ptysup.testing.fakemodel import FakeModel, RequestKind
    from ptysup.testing.kit import agent_env
    from ptysup.testing.pins import pin
    from ptysup.testing.scenario import Scenario

    binary = pin("claude").find()
    if binary is None or not binary.exists():
        raise FileNotFoundError("Claude Code is not installed")
    project = tmp / "project"
    project.mkdir()
    steps = [QUESTION] * samples + [{"text": "Done."}]
    scenario = Scenario.from_dict({"agent": [{"steps": steps}], "supervisor": [{"reply": "x"}]})
    (tmp / "supervisor.sh").write_text(QUESTION_SUPERVISOR_SH)
    with (
        FakeModel(scenario, workdir=project, log_path=tmp / "model.jsonl") as model,
        agent_env("claude", model.url, [project], binary) as ce,
    ):
        # A second question hook, next to ptysup's: Claude Code starts both at once.
        settings_path = ce.home / "settings.json"
        settings = json.loads(settings_path.read_text())
        fired = {"type": "command", "command": f"date +%s.%N >> {tmp / 'fired.log'}"}
        settings["hooks"] = {"PreToolUse": [{"matcher": "AskUserQuestion", "hooks": [fired]}]}
        settings_path.write_text(json.dumps(settings))
        run_turns(tmp, project, ce.env, "claude", samples, "Ask me.")
        received = [
            r.time
            for r in model.requests_of(RequestKind.AGENT)
            if "have been answered" in json.dumps(r.body["messages"][-1])
        ]
    fired_at, prompted_at = times(tmp / "fired.log"), times(tmp / "prompted.log")
    answered_at = times(tmp / "answered.log")
    prompted = [(s - f) * 1000 for f, s in zip(fired_at, prompted_at, strict=False)]
    reach = [(r - a) * 1000 for a, r in zip(answered_at, received, strict=False)]
    return prompted, reach


def bench_question(quick: bool, runs: int) -> dict[str, Any]:
    samples = 5 if quick else 12
    try:
        with workdir() as tmp:
            prompted, reach = question_latency(tmp, samples)
    except (OSError, subprocess.SubprocessError) as exc:
        return {"skipped": str(exc)}
    return {
        "samples": len(reach),
        "hook_to_prompt_ms_p50": round(percentile(prompted, 0.5), 1),
        "answer_to_model_ms_p50": round(percentile(reach, 0.5), 1),
        "answer_to_model_ms_p99": round(percentile(reach, 0.99), 1),
    }


# -- per decision ------------------------------------------------------------------------
def bench_decision(quick: bool, runs: int) -> dict[str, Any]:
    """ptysup's own work per decision, the model excluded (a supervisor that answers at
    once): the prompt from a full screen and activity, the supervisor process, parsing."""
    from ptysup.supervisor.parse import parse
    from ptysup.supervisor.prompt import PromptContext, build_prompt
    from ptysup.supervisor.runner import SupervisorRunner
    from ptysup.terminal.screen import ScreenModel

    model = ScreenModel(*SIZE)
    model.feed(redraw_stream())
    tools = tuple(f"Bash(pytest tests/test_{i}.py) → ok: {'x' * 200}" for i in range(300))
    answer = "**[CONTINUE]** The tests in tests/test_a.py still fail; fix them.\n" * 20

    def prompt() -> str:
        screen = "\n".join(model.snapshot().text().splitlines()[-60:])
        ctx = PromptContext(
            task="implement feature X " * 50,
            iteration=7,
            max_iter=50,
            elapsed_s=1234.5,
            turn_end="stop",
            tools=tools,
            last_message="All done. " * 2000,
            screen=screen,
        )
        return build_prompt(ctx)

    def timed(fn: Callable[[], object], n: int) -> float:
        values = []
        for _ in range(n):
            t0 = time.perf_counter()
            fn()
            values.append((time.perf_counter() - t0) * 1000)
        return median(values)

    text = prompt()
    runner = SupervisorRunner(
        ["sh", "-c", 'cat > /dev/null; echo "[COMPLETE] ok"'], timeout=30, cwd=str(REPO)
    )
    n = 10 if quick else 30
    result = {
        "prompt_ms": round(timed(prompt, n), 2),
        "prompt_kb": round(len(text.encode()) / 1000, 1),
        "spawn_ms": round(timed(lambda: runner.run(text), n), 2),
        "parse_ms": round(timed(lambda: parse(answer), n * 10), 3),
    }
    result["total_ms"] = round(result["prompt_ms"] + result["spawn_ms"] + result["parse_ms"], 1)
    return result


# -- idle CPU ----------------------------------------------------------------------------
IDLE_AGENT = "import os, time\nos.write(1, b'ready> ')\ntime.sleep(3600)\n"


def proc_cpu(pid: int) -> tuple[float, int]:
    """CPU seconds and context switches of PID, all its threads."""
    cpu, switches = 0.0, 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
            cpu += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            for line in Path(f"/proc/{pid}/task/{tid}/status").read_text().splitlines():
                if "ctxt_switches" in line:  # voluntary and not
                    switches += int(line.split()[1])
    return cpu, switches


def writer_pids(pid: int) -> list[int]:
    """The recording's writer process(es) among PID's children."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if int(stat[1]) == pid and b"castwriter" in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
    return found


def ptysup_cpu(pid: int) -> tuple[float, int]:
    """CPU seconds and context switches of ptysup and its recording writer."""
    totals = [proc_cpu(p) for p in [pid, *writer_pids(pid)]]
    return sum(c for c, _ in totals), sum(s for _, s in totals)


def idle_once(seconds: float, terminal: bool) -> dict[str, Any]:
    """ptysup's CPU and wake-ups while its agent idles, in a terminal (the status clock
    ticks once a second) or without one (as in CI: nothing should wake up)."""
    with workdir() as tmp:
        (tmp / "agent.py").write_text(IDLE_AGENT)
        argv = ptysup_argv(
            "wait", ["python3", str(tmp / "agent.py")], tmp, "--turn-timeout", "3600", idle=600
        )
        if terminal:
            term = Terminal.spawn(argv, bench_env(tmp), tmp)
            term.pump(lambda t: b"ready> " in t.seen, timeout=30)
            pid = term.proc.pid
        else:
            proc = subprocess.Popen(
                argv,
                env=bench_env(tmp),
                cwd=tmp,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            events = tmp / "events.jsonl"
            deadline = time.monotonic() + 30
            while not (events.exists() and '"agent_start"' in events.read_text()):
                if time.monotonic() > deadline:
                    raise TimeoutError("ptysup did not start the agent")
                time.sleep(0.05)
            pid = proc.pid
        time.sleep(1.0)  # let the start-up settle
        cpu0, sw0 = ptysup_cpu(pid)
        t0 = time.monotonic()
        time.sleep(seconds)
        cpu1, sw1 = ptysup_cpu(pid)
        elapsed = time.monotonic() - t0
        if terminal:
            term.proc.kill(15)
            term.close()
        else:
            proc.terminate()
            proc.wait(timeout=30)
    return {
        "seconds": seconds,
        "cpu_ms": round((cpu1 - cpu0) * 1000, 1),
        "cpu_percent": round((cpu1 - cpu0) / elapsed * 100, 3),
        "wakeups_per_s": round((sw1 - sw0) / elapsed, 2),
    }


def bench_idle_cpu(quick: bool, runs: int) -> dict[str, Any]:
    seconds = 5.0 if quick else 30.0
    return {**idle_once(seconds, terminal=True), "no_terminal": idle_once(seconds, False)}


def rss_kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def bench_rss(quick: bool, runs: int) -> dict[str, Any]:
    total_mb = 100 if quick else 1000
    with workdir() as tmp:
        payload, size = payload_file(tmp, "ansi")
        (tmp / "printer.py").write_text(PRINTER)
        agent = [
            "python3",
            str(tmp / "printer.py"),
            str(payload),
            "stay",
            str(tmp / "d"),
            str(total_mb),
        ]
        term = Terminal.spawn(ptysup_argv("flood", agent, tmp), bench_env(tmp), tmp)
        pid = term.proc.pid
        samples: list[tuple[int, int]] = []  # (bytes read, RSS KB)

        def sampled(t: Terminal) -> bool:
            if not samples or t.total - samples[-1][0] >= total_mb * MB // 20:
                with contextlib.suppress(OSError):
                    samples.append((t.total, rss_kb(pid, "VmRSS")))
            return END in t.marks

        term.pump(sampled, timeout=1800)
        seconds = term.marks[END] - term.marks[START]
        time.sleep(0.5)
        peak = rss_kb(pid, "VmHWM")
        final = rss_kb(pid, "VmRSS")
        writer_peak = max((rss_kb(w, "VmHWM") for w in writer_pids(pid)), default=0)
        term.close()
    early = samples[min(2, len(samples) - 1)][1]
    return {
        "printed_mb": round(size * total_mb / MB),
        "mb_s": round(size * total_mb / seconds / MB, 1),
        "peak_rss_mb": round(peak / 1024, 1),
        "rss_after_10pct_mb": round(early / 1024, 1),
        "rss_at_end_mb": round(final / 1024, 1),
        "writer_peak_rss_mb": round(writer_peak / 1024, 1),
    }


# -- cold start --------------------------------------------------------------------------
def bench_cold(quick: bool, runs: int) -> dict[str, Any]:
    # As installed: with bytecode (this environment may set PYTHONDONTWRITEBYTECODE).
    subprocess.run([PYTHON, "-m", "compileall", "-q", str(REPO / "ptysup")], check=True)
    console = Path(PYTHON).with_name("ptysup")
    argv = [str(console)] if console.exists() else [PYTHON, "-m", "ptysup"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PTYSUP_")}
    values = []
    for _ in range(5 if quick else 15):
        t0 = time.perf_counter()
        subprocess.run([*argv, "--help"], env=env, capture_output=True, check=True)
        values.append((time.perf_counter() - t0) * 1000)
    return {"help_ms_p50": round(median(values), 1), "help_ms_min": round(min(values), 1)}


# -- the supervisor: bytes, warmth -----------------------------------------------------
@contextlib.contextmanager
def claude_rig(tmp: Path, scenario: dict[str, Any] | Path) -> Iterator[tuple[Any, Any, Path]]:
    """The fake model with SCENARIO and a private Claude Code: (model, claude env, project)."""
    from ptysup.testing.fakemodel import FakeModel
    from ptysup.testing.kit import agent_env
    from ptysup.testing.pins import pin
    from ptysup.testing.scenario import Scenario

    binary = pin("claude").find()
    if binary is None or not binary.exists():
        raise FileNotFoundError("Claude Code is not installed")
    project = tmp / "project"
    project.mkdir()
    loaded = Scenario.load(scenario) if isinstance(scenario, Path) else Scenario.from_dict(scenario)
    loaded.seed(project)
    with (
        FakeModel(loaded, workdir=project, log_path=tmp / "model.jsonl") as model,
        agent_env("claude", model.url, [project], binary) as ce,
    ):
        yield model, ce, project


def run_claude_ptysup(ce: Any, project: Path, tmp: Path, task: str, *extra: str) -> Path:
    """ptysup headless with Claude Code as agent and judge; its event log."""
    env = {k: v for k, v in ce.env.items() if not k.startswith("PTYSUP_")}
    env["PYTHONPATH"] = str(REPO)
    log = tmp / f"events-{time.monotonic_ns()}.jsonl"
    argv = [PYTHON, "-m", "ptysup", task, "--agent-cmd", "claude --permission-mode acceptEdits"]
    subprocess.run(
        [*argv, "--log-file", str(log), *extra],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=600,
    )
    return log


def cache_order(body: dict[str, Any]) -> bytes:
    """A request as the prompt cache reads it: tools, then system, then messages."""
    parts = [body.get("tools"), body.get("system"), body.get("messages")]
    return json.dumps(parts, ensure_ascii=False, separators=(",", ":")).encode()


def common_prefix(a: bytes, b: bytes) -> int:
    """How many leading bytes A and B share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def bench_judge(quick: bool, runs: int) -> dict[str, Any]:
    from ptysup.testing.fakemodel import RequestKind

    demo = REPO / "ptysup" / "testing" / "scenarios" / "demo.yaml"
    sizes: list[int] = []
    identical: list[float] = []
    prefix: list[float] = []
    bare: list[int] = []
    for _ in range(1 if quick else runs):
        with workdir() as tmp, claude_rig(tmp, demo) as (model, ce, project):
            run_claude_ptysup(ce, project, tmp, "implement feature X")
            requests = model.requests_of(RequestKind.SUPERVISOR)
            sizes += [r.size for r in requests]
            bodies = [cache_order(r.body) for r in requests]
            for a, b in itertools.pairwise(bodies):
                same = difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
                identical.append(sum(m.size for m in same) / len(b))
                prefix.append(common_prefix(a, b) / len(b))
            # The same prompt through a bare `claude -p`: what each decision sent before.
            env = dict(ce.env)
            subprocess.run(
                ce.argv("-p"),
                input=requests[-1].human_text.encode(),
                cwd=project,
                env=env,
                capture_output=True,
                timeout=120,
            )
            bare.append(model.requests_of(RequestKind.SUPERVISOR)[-1].size)
    return {
        "requests": len(sizes),
        "bytes_p50": round(median(sizes)),
        "bare_bytes_p50": round(median(bare)),
        "identical_share_p50": round(median(identical), 3),
        "prefix_share_p50": round(median(prefix), 3),
    }


def spare_rss_kb() -> int:
    """The RSS of waiting warm spares (processes reading ptysup's system prompt file)."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            if b"--system-prompt-file\0" in cmdline and b"ptysup-judge-" in cmdline:
                total += rss_kb(int(entry), "VmRSS")
    return total


def sample_spares(stop: threading.Event, peak: list[int]) -> None:
    """Keep the highest spare RSS seen in PEAK[0] until STOP is set."""
    while not stop.wait(0.2):
        peak[0] = max(peak[0], spare_rss_kb())


def bench_warm(quick: bool, runs: int) -> dict[str, Any]:
    decisions = 4 if quick else 8
    # A turn of the agent takes 2 s, as a real one takes longer: time for a spare to boot.
    scenario = {
        "agent": [{"delay": 2, "reply": "Done with that."}],
        "supervisor": [
            {"times": decisions - 1, "reply": "[CONTINUE] more"},
            {"reply": "[COMPLETE] ok"},
        ],
    }
    out: dict[str, Any] = {"decisions": decisions}
    for name, extra in (("warm", []), ("cold", ["--no-warm-supervisor"])):
        latencies: list[float] = []
        peak = [0]
        for _ in range(1 if quick else max(1, runs // 2)):
            with workdir() as tmp, claude_rig(tmp, scenario) as (_, ce, project):
                stop = threading.Event()
                sampler = threading.Thread(target=sample_spares, args=(stop, peak), daemon=True)
                sampler.start()
                iters = ("--max-iter", str(decisions), "--max-repeats", "0")
                log = run_claude_ptysup(ce, project, tmp, "go", *iters, *extra)
                stop.set()
                sampler.join()
                events = read_events(log)
                ends = [e["ts"] for e in events if e["event"] == "turn_end"]
                made = [e["ts"] for e in events if e["event"] == "decision"]
                latencies += [(d - t) * 1000 for t, d in zip(ends, made, strict=False)]
        out[name] = {
            "samples": len(latencies),
            "turn_end_to_decision_ms_p50": round(median(latencies)),
            "turn_end_to_decision_ms_p90": round(percentile(latencies, 0.9)),
        }
        if name == "warm":
            out[name]["spare_rss_mb"] = round(peak[0] / 1024, 1)
    return out


# -- a whole run's end ------------------------------------------------------------------
def exit_once(tmp: Path, via: str, repeat: int) -> float:
    """Seconds from start to the end of a run whose agent prints REPEAT MB and exits
    (`hi`: only that word). A `silent` terminal never answers ptysup's query."""
    payload, _ = payload_file(tmp, "plain")
    (tmp / "printer.py").write_text(PRINTER)
    agent = ["python3", str(tmp / "printer.py"), str(payload), "exit", str(tmp / "d"), str(repeat)]
    if via.startswith("hi"):
        agent = ["echo", "hi"]
    if via in ("script", "hi_script"):
        inner = ["script", "-q", "-c", shlex.join(agent), "/dev/null"]
    else:
        extra = ["--no-recording"] if via == "no_recording" else []
        inner = ptysup_argv("t", agent, tmp, *extra)
    argv = ["script", "-q", "-c", shlex.join(inner), "/dev/null"]
    start = time.perf_counter()
    term = Terminal.spawn(argv, bench_env(tmp), tmp, answers=not via.endswith("silent"))
    term.pump(lambda t: b"EOF" in t.marks, timeout=600)
    seconds = term.marks[b"EOF"] - start
    term.close()
    return seconds


def bench_exit(quick: bool, runs: int) -> dict[str, Any]:
    repeat = 20 if quick else 100  # MB
    vias = ("script", "ptysup", "no_recording", "silent", "hi_script", "hi_silent")
    times_s: dict[str, list[float]] = {via: [] for via in vias}
    for _ in range(runs):
        for via in times_s:
            with workdir() as tmp:
                times_s[via].append(exit_once(tmp, via, repeat))
    base = median(times_s["script"])
    return {
        "mb": repeat,
        "script_s": round(base, 2),
        "ptysup_s": round(median(times_s["ptysup"]), 2),
        "ratio": round(median(times_s["ptysup"]) / base, 2),
        "no_recording_ratio": round(median(times_s["no_recording"]) / base, 2),
        "silent_s": round(median(times_s["silent"]), 2),
        "silent_ratio": round(median(times_s["silent"]) / base, 2),
        "hi_script_s": round(median(times_s["hi_script"]), 3),
        "hi_silent_s": round(median(times_s["hi_silent"]), 3),
    }


# -- table ------------------------------------------------------------------------------
Row = tuple[str, str, str, bool | None]  # what, measured, target, met


# The snapshot waits for Claude Code's final frame (a quiet window after the hook), so
# this is hook -> snapshot (the settle) plus handing the prompt to the supervisor.
HOOK_ROW = "Stop hook -> final-frame snapshot -> supervisor has the prompt"
SNAPSHOT_ROW = "Stop hook -> final-frame snapshot (turn_end logged)"
GEMINI_ROW = "Gemini CLI's last frame -> turn_end (against its answer -> that frame)"
QUESTION_ROW = "question hook -> supervisor has the prompt"


def rows(r: dict[str, Any]) -> list[Row]:
    """The table: one row per figure, with the issue's target where it has one."""
    out: list[Row] = []
    if "relay" in r:
        relay = r["relay"]
        for kind in ("plain", "ansi"):
            e = relay[kind]
            what = f"relay {relay['mb']} MB {kind}, x `script -q`"
            got = f"{e['ptysup_ratio']:.2f}x ({e['ptysup_mb_s']} vs {e['script_mb_s']} MB/s)"
            out.append((what, got, ">= 0.8x", e["ptysup_ratio"] >= 0.8))
            if "ptysup_no_recording_ratio" in e:
                got = (
                    f"{e['ptysup_no_recording_ratio']:.2f}x ({e['ptysup_no_recording_mb_s']} MB/s)"
                )
                out.append(
                    (
                        "  same, --no-recording",
                        got,
                        ">= 0.8x",
                        e["ptysup_no_recording_ratio"] >= 0.8,
                    )
                )
            ok = e["ptysup_final_screen_ok"]
            out.append(("  screen the supervisor saw shows the last line", str(ok), "yes", ok))
    if "quiet" in r:
        for kind in ("plain", "ansi"):
            e = r["quiet"][kind]
            got = f"{e['latency_ms_p50']} ms p50, {e['latency_ms_max']} max"
            out.append(
                (
                    f"screen current after {r['quiet']['mb']} MB {kind} stops",
                    got,
                    "<= 100 ms",
                    e["latency_ms_max"] <= 100,
                )
            )
            out.append(("  on_update calls during the flood", f"{e['updates_per_s']}/s", "", None))
    if "model" in r:
        for name, e in r["model"].items():
            got = f"{e['ptysup_mb_s']} MB/s ({e['speedup']}x stock {e['stock_mb_s']})"
            redraw = name.startswith("redraw ")
            target = ">= 5 MB/s" if redraw else ""
            ok = e["ptysup_mb_s"] >= 5 if redraw else None
            label = f"{name.removeprefix('redraw ')} redraw" if redraw else "plain text"
            out.append((f"screen model, {label}", got, target, ok))
    if "turn_end" in r:
        h = r["turn_end"]["hooks"]
        if "skipped" in h:
            out.append((HOOK_ROW, f"skipped: {h['skipped']}", "", None))
        else:
            got = f"{h['stop_to_snapshot_ms_p50']} ms p50, {h['stop_to_snapshot_ms_p99']} p99"
            out.append((SNAPSHOT_ROW, got, "<= 200 ms p50", h["stop_to_snapshot_ms_p50"] <= 200))
            got = f"{h['stop_to_prompt_ms_p50']} ms p50, {h['stop_to_prompt_ms_p99']} p99"
            out.append(
                (
                    HOOK_ROW,
                    got,
                    "<= 250 ms p50",
                    h["stop_to_prompt_ms_p50"] <= 250,
                )
            )
        g = r["turn_end"].get("gemini", {"skipped": "not measured"})
        if "skipped" in g:
            out.append((GEMINI_ROW, f"skipped: {g['skipped']}", "", None))
        else:
            got = (
                f"{g['frame_to_turn_end_ms_p50']} ms p50, {g['frame_to_turn_end_ms_p99']} p99"
                f" (Gemini CLI's own {g['answer_to_frame_ms_p50']} ms p50,"
                f" {g['answer_to_frame_ms_p99']} p99): ratio {g['ours_to_own_p50']} p50"
            )
            ok = g["ours_to_own_p50"] <= 1.0
            out.append((GEMINI_ROW, got, "ratio <= 1.0 p50", ok))
        q = r["turn_end"]["no_hooks"]
        got = f"{q['overhead_ms_p50']} ms p50, {q['overhead_ms_p99']} p99"
        out.append(
            (f"last byte -> turn end, no hooks (beyond --idle {q['idle_s']})", got, "", None)
        )
    if "question" in r:
        q = r["question"]
        if "skipped" in q:
            out.append((QUESTION_ROW, f"skipped: {q['skipped']}", "", None))
        else:
            got = f"{q['hook_to_prompt_ms_p50']} ms p50"
            ok = q["hook_to_prompt_ms_p50"] <= 50
            out.append((QUESTION_ROW, got, "<= 50 ms p50", ok))
            got = f"{q['answer_to_model_ms_p50']} ms p50, {q['answer_to_model_ms_p99']} p99"
            ok = q["answer_to_model_ms_p50"] <= 500
            out.append(("  supervisor's answer -> the model has it", got, "<= 500 ms p50", ok))
    if "decision" in r:
        d = r["decision"]
        got = (
            f"{d['total_ms']} ms (prompt {d['prompt_ms']}, spawn {d['spawn_ms']}, "
            f"parse {d['parse_ms']})"
        )
        out.append(("ptysup's time per decision", got, "<= 30 ms", d["total_ms"] <= 30))
    if "idle_cpu" in r:
        i = r["idle_cpu"]
        got = f"{i['cpu_ms']} ms CPU in {i['seconds']:.0f} s, {i['wakeups_per_s']} wakeups/s"
        what = "CPU while the agent idles, in a terminal (ptysup + recording writer)"
        ok = i["cpu_percent"] < 0.1 and i["wakeups_per_s"] <= 3
        out.append((what, got, "~0, the clock's 1 tick/s", ok))
        n = i["no_terminal"]
        got = f"{n['cpu_ms']} ms CPU in {n['seconds']:.0f} s, {n['wakeups_per_s']} wakeups/s"
        ok = n["cpu_percent"] < 0.1 and n["wakeups_per_s"] < 0.5
        out.append(("  same, without a terminal (CI)", got, "~0, no wake-ups", ok))
    if "rss" in r:
        m = r["rss"]
        got = (
            f"{m['peak_rss_mb']} MB peak ({m['rss_after_10pct_mb']} after 10%, "
            f"{m['rss_at_end_mb']} at the end)"
        )
        flat = m["rss_at_end_mb"] <= m["rss_after_10pct_mb"] * 1.2
        out.append(
            (
                f"peak RSS after {m['printed_mb']} MB",
                got,
                "<= 80 MB, flat",
                m["peak_rss_mb"] <= 80 and flat,
            )
        )
        if m.get("writer_peak_rss_mb"):
            got = f"{m['writer_peak_rss_mb']} MB peak"
            out.append(("  the recording's writer process", got, "", None))
    if "judge" in r:
        j = r["judge"]
        kb, bare_kb = j["bytes_p50"] / 1000, j["bare_bytes_p50"] / 1000
        got = f"{kb:.1f} KB p50 (bare `claude -p`: {bare_kb:.1f})"
        out.append(
            ("bytes per supervisor request, demo", got, "<= 20 KB", j["bytes_p50"] <= 20_000)
        )
        share = j["identical_share_p50"]
        got = f"{share:.0%}"
        out.append(("  bytes identical between consecutive decisions", got, ">= 90%", share >= 0.9))
        got = f"{j['prefix_share_p50']:.0%} (up to the prompt: what the cache can serve)"
        out.append(("  common prefix of consecutive decisions", got, "", None))
    if "warm" in r:
        w, c = r["warm"]["warm"], r["warm"]["cold"]
        got = f"{w['turn_end_to_decision_ms_p50']} ms p50, {w['turn_end_to_decision_ms_p90']} p90"
        ok = w["turn_end_to_decision_ms_p50"] <= 250
        out.append(("turn end -> parsed decision, warm spare", got, "<= 250 ms p50", ok))
        got = f"{c['turn_end_to_decision_ms_p50']} ms p50, {c['turn_end_to_decision_ms_p90']} p90"
        out.append(("  same, --no-warm-supervisor", got, "", None))
        out.append(("  the waiting spare's RSS", f"{w['spare_rss_mb']} MB", "", None))
    if "exit" in r:
        e = r["exit"]
        got = f"{e['ratio']:.2f}x ({e['ptysup_s']} vs {e['script_s']} s)"
        what = f"whole run, agent prints {e['mb']} MB and exits, x two nested `script`"
        out.append((what, got, "<= 1.25x", e["ratio"] <= 1.25))
        out.append(("  same, --no-recording", f"{e['no_recording_ratio']:.2f}x", "", None))
        if "silent_ratio" in e:
            got = f"{e['silent_ratio']:.2f}x ({e['silent_s']} s)"
            what = "  same, a terminal that never answers (`script` in CI)"
            out.append((what, got, "<= 1.25x", e["silent_ratio"] <= 1.25))
            got = f"{e['hi_silent_s']} s (two `script`s: {e['hi_script_s']} s)"
            out.append(("  whole run, agent prints `hi`, terminal never answers", got, "", None))
    if "cold" in r:
        c = r["cold"]
        got = f"{c['help_ms_p50']} ms p50 ({c['help_ms_min']} min)"
        out.append(("`ptysup --help` cold start", got, "<= 250 ms", c["help_ms_p50"] <= 250))
    return out


def table(r: dict[str, Any]) -> str:
    """Markdown, as on the docs' Performance page (docs/performance.md)."""
    lines = ["| measure | result | target | met |", "|---|---|---|---|"]
    for what, got, target, met in rows(r):
        mark = "" if met is None else "yes" if met else "**no**"
        lines.append(f"| {what} | {got} | {target} | {mark} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="scaled-down sizes and times")
    parser.add_argument("--only", default="", help="comma-separated items to run")
    parser.add_argument("--runs", type=int, default=0, help="runs per figure (default 3/5)")
    parser.add_argument("--json", type=Path, help="also write the JSON results here")
    args = parser.parse_args(argv)
    items: dict[str, Callable[[bool, int], dict[str, Any]]] = {
        "relay": bench_relay,
        "quiet": bench_quiet,
        "model": bench_model,
        "turn_end": bench_turn_end,
        "question": bench_question,
        "decision": bench_decision,
        "idle_cpu": bench_idle_cpu,
        "rss": bench_rss,
        "cold": bench_cold,
        "judge": bench_judge,
        "warm": bench_warm,
        "exit": bench_exit,
    }
    chosen = [i for i in args.only.split(",") if i] or list(items)
    # Measure ptysup as installed (pip writes its bytecode), even where the environment
    # says PYTHONDONTWRITEBYTECODE: compiling every module again would add ~0.15 s to
    # each start.
    compileall.compile_dir(str(REPO / "ptysup"), quiet=1)
    results: dict[str, Any] = {
        "quick": args.quick,
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "load_before": [round(x, 2) for x in os.getloadavg()],
    }
    for name in chosen:
        runs = args.runs or (5 if name in ("model", "relay") else 3)
        t0 = time.monotonic()
        print(f"bench: {name} ...", file=sys.stderr, flush=True)
        results[name] = items[name](args.quick, runs)
        print(f"bench: {name} done in {time.monotonic() - t0:.0f}s", file=sys.stderr)
    results["load_after"] = [round(x, 2) for x in os.getloadavg()]
    print(table(results))
    print(
        f"\n{results['cpus']} CPUs, Python {results['python']}, load average "
        f"{results['load_before'][0]} before, {results['load_after'][0]} after\n"
    )
    print(json.dumps(results, indent=2))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
