"""Record the real Claude Code, driven by the fake model, as asciicast v2 test fixtures.

    .venv/bin/python scripts/record_transcript.py [NAME ...]   # default: every recording

Each recording becomes `fixtures/transcripts/NAME.cast` (`asciinema play` shows it): the
agent's output (`"o"`), window changes (`"r"`, `COLSxROWS`) and what this script typed
(`"i"`), with real timestamps, plus marker events `[t, "m", "expect:STATE[+FLAG...]"]`
where the script knows what the screen must read as (flags: `api_error`, an API error
line is on screen; `input`, the input box holds text). The script decides those states
from what it did, what is drawn, and the fake model's requests, never from
`ClaudeProfile`, so the recordings can test the detector (tests/unit/test_transcripts.py).
Claude is driven only by waiting on the screen model, with deadlines. The scenario of each
recording is `fixtures/transcripts/scenarios/NAME.yaml`. A recording that fails leaves the
old file in place.
"""

from __future__ import annotations

import argparse
import re
import select
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ptysup.terminal.pty_ import AgentProcess, AgentStartError
from ptysup.terminal.record import Recording
from ptysup.terminal.screen import ScreenModel, ScreenSnapshot
from ptysup.testing.conversation import RequestKind
from ptysup.testing.fakemodel import FakeModel, RecordedRequest
from ptysup.testing.kit import agent_env
from ptysup.testing.pins import pin
from ptysup.testing.scenario import Scenario

REPO = Path(__file__).resolve().parents[1]
OUT_DIR = REPO / "fixtures" / "transcripts"
SCENARIO_DIR = OUT_DIR / "scenarios"
SIZE = (40, 120)  # rows, cols
TERM = "xterm-256color"
TIMEOUT = 20.0  # seconds for any single wait
# Idle Claude Code sends nothing; this long without output means a repaint is over.
QUIET = 0.5
# Claude Code takes a write of 64 bytes or more as a paste; a short prompt is sent as a
# bracketed paste anyway, then Enter in its own write once the text is in the input box.
PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"
ESC = "\x1b"
CTRL_Z = "\x1a"

_RULE = re.compile(r"^\s*─{10,}\s*$")
# `✶ Crafting… (3s · ↓ 12 tokens)`: a glyph, a gerund (some have hyphens: `Sock-hopping`)
# with an ellipsis.
_SPINNER = re.compile(r"^\s*\S [\w-]+…")


class RecordingError(Exception):
    """Claude Code did not do what the recording expects."""


# -- what the script looks for on screen (independent of ClaudeProfile) -------------------


def screen_text(snap: ScreenSnapshot) -> str:
    """The whole screen as one string."""
    return "\n".join(snap.lines)


def input_box(snap: ScreenSnapshot) -> str | None:
    """The text of the lowest `❯` line right under a rule (after Ctrl-Z the old box stays
    on screen above the redrawn one), or None when there is no input box."""
    lines = snap.lines
    for i in range(len(lines) - 1, 0, -1):
        if _RULE.match(lines[i - 1]) and lines[i].lstrip().startswith("❯"):
            return lines[i].lstrip()[1:].strip()
    return None


def idle(snap: ScreenSnapshot) -> bool:
    """Waiting for the person: a ✳ title and an empty input box."""
    return snap.title.startswith("✳") and input_box(snap) == ""


def spinning(snap: ScreenSnapshot) -> bool:
    """A spinner line (`✶ Crafting…`) is on screen."""
    return any(_SPINNER.match(line) for line in snap.lines)


def title_first(snap: ScreenSnapshot) -> bool:
    """The ✳ title is written but the spinner is not erased yet: the turn is still on."""
    return snap.title.startswith("✳") and spinning(snap)


def spinning_below(text: str) -> Callable[[ScreenSnapshot], bool]:
    """A spinner line is on screen below the line showing TEXT."""

    def below(snap: ScreenSnapshot) -> bool:
        at = [i for i, line in enumerate(snap.lines) if text in line]
        return bool(at) and any(_SPINNER.match(line) for line in snap.lines[at[0] + 1 :])

    return below


def showing(text: str) -> Callable[[ScreenSnapshot], bool]:
    """TEXT is somewhere on screen."""
    return lambda snap: text in screen_text(snap)


# -- the recording ------------------------------------------------------------------------


class Session:
    """Claude Code on a PTY, its output fed to a screen model and a cast."""

    def __init__(self, agent: AgentProcess, fm: FakeModel, cast: Recording, verbose: bool) -> None:
        self.agent = agent
        self.fm = fm
        self.cast = cast
        self.verbose = verbose
        self.screen = ScreenModel(*SIZE, answer=self._answer)
        self._watches: list[tuple[str, Callable[[ScreenSnapshot], bool]]] = []

    def _answer(self, data: bytes) -> None:
        # A real terminal answers DA/DSR queries; the answer is input, so it is recorded.
        self.agent.write(data)
        self.cast.typed(data.decode("utf-8", "surrogateescape"))

    def pump(self, timeout: float) -> bool:
        """Read output for up to TIMEOUT seconds; True if any came."""
        ready, _, _ = select.select([self.agent.fd], [], [], max(timeout, 0.0))
        if not ready:
            return False
        data = self.agent.read()
        if not data:
            raise RecordingError("claude exited:\n" + screen_text(self.screen.snapshot()))
        self.cast.output(data)
        self.screen.feed(data)
        if self._watches:
            snap = self.screen.snapshot()
            for watch in [w for w in self._watches if w[1](snap)]:
                self._watches.remove(watch)
                self.mark(watch[0])
        return True

    @contextmanager
    def watching(self, expect: str, condition: Callable[[ScreenSnapshot], bool]) -> Iterator[None]:
        """Within the block, mark EXPECT after the first chunk of output that leaves
        CONDITION true.

        For frames between two states that a reader of whole screens may never see, such
        as the ✳ title written a few ms before the spinner is erased. When no chunk showed
        it (the writes arrived together), say so and go on without the marker.
        """
        watch = (expect, condition)
        self._watches.append(watch)
        try:
            yield
        finally:
            if watch in self._watches:
                self._watches.remove(watch)
                print(f"no separate frame for expect:{expect} this time", file=sys.stderr)

    def wait(self, what: str, condition: Callable[[ScreenSnapshot], bool]) -> ScreenSnapshot:
        """Feed output until CONDITION holds for the screen; fail after TIMEOUT."""
        deadline = time.monotonic() + TIMEOUT
        while not condition(snap := self.screen.snapshot()):
            if time.monotonic() > deadline:
                raise RecordingError(f"timed out waiting for {what}:\n{screen_text(snap)}")
            self.pump(min(0.05, deadline - time.monotonic()))
        return snap

    def wait_request(self, what: str, predicate: Callable[[RecordedRequest], bool]) -> None:
        """Feed output until the fake model has received a matching request."""
        deadline = time.monotonic() + TIMEOUT
        while not any(predicate(r) for r in self.fm.requests):
            if time.monotonic() > deadline:
                raise RecordingError(f"timed out waiting for the request: {what}")
            self.pump(min(0.05, deadline - time.monotonic()))

    def settle(self, what: str, condition: Callable[[ScreenSnapshot], bool]) -> ScreenSnapshot:
        """Wait for CONDITION, then for QUIET seconds without output while it still holds."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            snap = self.wait(what, condition)
            quiet_until = time.monotonic() + QUIET
            while (left := quiet_until - time.monotonic()) > 0 and not self.pump(left):
                pass
            if time.monotonic() >= quiet_until and condition(self.screen.snapshot()):
                return snap
            if time.monotonic() > deadline:
                raise RecordingError(f"{what} never settled:\n{screen_text(snap)}")

    def ready(self) -> None:
        """Wait for the empty input box to settle, and mark it `ready`."""
        self.settle("the idle input box", idle)
        self.mark("ready")

    def mark(self, expect: str) -> None:
        """Record that the screen, as fed so far, must read as EXPECT."""
        self.cast.marker(f"expect:{expect}")
        if self.verbose:
            snap = self.screen.snapshot()
            print(f"--- expect:{expect}  title={snap.title!r}", file=sys.stderr)
            print(snap.text(), file=sys.stderr)

    def type(self, data: str) -> None:
        """Send keys as the person would."""
        self.cast.typed(data)
        self.agent.write(data.encode())

    def submit(self, text: str) -> None:
        """Paste TEXT, wait until the input box shows it, then press Enter."""
        self.type(PASTE_START + text + PASTE_END)
        self.wait(f"the input box to show {text!r}", lambda s: input_box(s) == text)
        self.type("\r")

    def resize(self, rows: int, cols: int) -> None:
        """Change the window: the screen model first, then the PTY (as ptysup does)."""
        self.screen.resize(rows, cols)
        self.cast.resize(rows, cols)
        self.agent.resize(rows, cols)


# -- the recordings -----------------------------------------------------------------------


def startup_idle(s: Session) -> None:
    """Start, reach the empty input box."""
    s.ready()


def tool_turn(s: Session) -> None:
    """A prompt; the agent runs Bash, then Write (acceptEdits), then answers."""
    s.ready()
    s.submit("wait, then create notes.txt")
    # The first reply is delayed, so the turn is surely still running here.
    s.wait_request("the first agent request", lambda r: r.kind is RequestKind.AGENT)
    s.wait("the spinner", spinning)
    s.mark("working")
    s.wait("the Bash tool running", lambda x: "Bash(" in screen_text(x) and spinning(x))
    s.mark("working")
    s.wait("the Write tool row", showing("Write("))
    with s.watching("working", title_first):
        s.settle("the final text", lambda x: idle(x) and "notes.txt is" in screen_text(x))
    s.mark("ready")


def permission_dialog(s: Session) -> None:
    """Default mode: a Write opens the dialog; `1` approves; the turn ends."""
    s.ready()
    s.submit("create hello.txt")
    s.wait_request("the first agent request", lambda r: r.kind is RequestKind.AGENT)
    with s.watching("working", title_first):
        s.settle("the permission dialog", showing("Do you want to create"))
    s.mark("dialog")
    s.type("1")
    # The second request (with the tool result) is delayed: the turn runs on after `1`.
    s.wait_request("the tool result", lambda r: r.kind is RequestKind.AGENT and r.step_index == 1)
    s.wait("the spinner under the input box", lambda x: spinning(x) and input_box(x) == "")
    s.mark("working")
    s.settle("the final text", lambda x: idle(x) and "Created hello.txt" in screen_text(x))
    s.mark("ready")


def clear(s: Session) -> None:
    """A turn, then `/clear`: back to the welcome box."""
    s.ready()
    s.submit("say hello")
    s.settle("the reply", lambda x: idle(x) and "Hello there" in screen_text(x))
    s.mark("ready")
    s.type("/clear")
    s.wait("/clear in the input box", lambda x: input_box(x) == "/clear")
    s.type("\r")
    s.settle("the cleared screen", lambda x: idle(x) and "Hello there" not in screen_text(x))
    s.mark("ready")


def api_error(s: Session) -> None:
    """The fake answers 529 (no retries): an API error line, then the idle box."""
    s.ready()
    s.submit("say hello")
    s.wait("the spinner", spinning)
    with s.watching("working", lambda x: title_first(x) and "API Error" not in screen_text(x)):
        s.settle("the API error", lambda x: idle(x) and "API Error" in screen_text(x))
    s.mark("ready+api_error")


def resize(s: Session) -> None:
    """Idle at 120x40, shrink to 80x24, the repaint."""
    s.ready()
    s.resize(24, 80)
    s.settle(
        "the repaint at 80 columns",
        lambda x: idle(x) and any(re.match(r"^─{80}$", line) for line in x.lines),
    )
    s.mark("ready")


def interrupted(s: Session) -> None:
    """Esc while a long Bash command runs: `Interrupted`, then the idle box."""
    s.ready()
    s.submit("take your time")
    s.wait("the running Bash command", lambda x: "Running…" in screen_text(x) and spinning(x))
    s.mark("working")
    s.type(ESC)
    s.settle("the interrupted, idle box", lambda x: idle(x) and "Interrupted" in screen_text(x))
    s.mark("ready")


def interrupted_early(s: Session) -> None:
    """Esc before any reply: the prompt goes back into the input box, Claude waits."""
    _working_before_any_reply(s)
    _esc_puts_the_prompt_back(s)


def suspended_interrupted(s: Session) -> None:
    """Ctrl-Z while working, continued (SIGCONT, as ptysup does), then Esc: the prompt goes
    back into the redrawn box, below the old box left on screen."""
    _working_before_any_reply(s)
    s.type(CTRL_Z)
    s.wait("the suspend notice", showing("Claude Code has been suspended"))
    s.agent.resume()
    s.wait("the screen redrawn below the notice", spinning_below("has been suspended"))
    _esc_puts_the_prompt_back(s)


def _working_before_any_reply(s: Session) -> None:
    s.ready()
    s.submit("take your time")
    s.wait_request("the agent request", lambda r: r.kind is RequestKind.AGENT)
    s.wait("the spinner", spinning)
    s.mark("working")


def _esc_puts_the_prompt_back(s: Session) -> None:
    s.type(ESC)
    s.settle(
        "the prompt back in the box",
        lambda x: x.title.startswith("✳") and input_box(x) == "take your time",
    )
    s.mark("ready+input")


@dataclass(frozen=True)
class Script:
    """How one recording starts and what it does."""

    run: Callable[[Session], None]
    args: tuple[str, ...] = ()


RECORDINGS: dict[str, Script] = {
    "startup_idle": Script(startup_idle),
    "tool_turn": Script(tool_turn, ("--permission-mode", "acceptEdits")),
    "permission_dialog": Script(permission_dialog),
    "clear": Script(clear),
    "api_error": Script(api_error),
    "resize": Script(resize),
    "interrupted": Script(interrupted, ("--permission-mode", "acceptEdits")),
    "interrupted_early": Script(interrupted_early),
    "suspended_interrupted": Script(suspended_interrupted),
}


@contextmanager
def spawned(argv: Sequence[str], cwd: Path, env: dict[str, str]) -> Iterator[AgentProcess]:
    """The agent on a PTY of SIZE, ended and reaped on the way out."""
    agent = AgentProcess.spawn(argv, cwd=str(cwd), env=env, size=SIZE)
    try:
        yield agent
    finally:
        agent.terminate(grace=1.0)
        agent.close()


def record(name: str, verbose: bool = False) -> Path:
    """Make one recording and write it; return its path."""
    script = RECORDINGS[name]
    scenario = Scenario.load(SCENARIO_DIR / f"{name}.yaml")
    path = OUT_DIR / f"{name}.cast"
    with tempfile.TemporaryDirectory(prefix="ptysup-rec-") as tmp:
        workdir = Path(tmp) / "project"
        workdir.mkdir()
        scenario.seed(workdir)
        with FakeModel(scenario, workdir) as fm, agent_env("claude", fm.url, [workdir]) as ce:
            argv = ce.argv(*script.args)
            env = {**ce.env, "TERM": TERM}
            with spawned(argv, workdir, env) as agent:
                cast = Recording(
                    Path(tmp) / path.name,  # moved over the old file only once it is whole
                    *SIZE,
                    env={"TERM": TERM},
                    command=" ".join(["claude", *script.args]),
                    title=f"Claude Code {pin('claude').version}: {name}",
                )
                try:
                    script.run(Session(agent, fm, cast, verbose))
                finally:
                    cast.close()
        if cast.error:
            raise RecordingError(f"the recording is incomplete: {cast.error}")
        cast.path.chmod(0o644)
        shutil.move(cast.path, path)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """Record the named recordings (default: all)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="NAME")
    parser.add_argument("-v", "--verbose", action="store_true", help="print the screen at marks")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(RECORDINGS))
    if unknown:
        parser.error(f"unknown recording(s): {', '.join(unknown)}; known: {', '.join(RECORDINGS)}")
    failed = 0
    for name in args.names or list(RECORDINGS):
        try:
            path = record(name, args.verbose)
        except (RecordingError, AgentStartError) as exc:
            print(f"ptysup: recording {name} failed: {exc}", file=sys.stderr)
            failed += 1
            continue
        size = path.stat().st_size
        print(f"{path.relative_to(REPO)}: {size} bytes")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
