"""The relay and the screen feeder under heavy output.

The person's view is never held up by the screen model: the relay hands output to a
feeder whose backlog is bounded, and however much the agent printed, the screen once it
stops is the one stock pyte shows after every byte. Real PTYs and real children; every
wait is for an event or a sentinel.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import termios
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyte
import pytest

from ptysup.terminal import screen as screen_module
from ptysup.terminal import tty_
from ptysup.terminal.pty_ import AgentProcess
from ptysup.terminal.record import output_bytes
from ptysup.terminal.relay import Relay, RelayHandlers
from ptysup.terminal.screen import BACKLOG, BURST, ScreenFeeder, ScreenModel, ScreenSnapshot
from tests.helpers import GatedModel

TRANSCRIPTS = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
ROWS, COLS = 24, 80
SMALL = 256 * 1024  # a backlog a flood of a few MB overflows (the approximate path)


def plain_flood(size: int, seed: int = 1) -> bytes:
    """Numbered log lines of 0-120 characters, SIZE bytes or a little more."""
    rnd = random.Random(seed)
    lines, total, n = [], 0, 0
    while total < size:
        text = "".join(rnd.choices("abcdefgh ", k=rnd.randint(0, 120)))
        line = f"{n:07d} \x1b[3{n % 8}m{text}\x1b[0m\r\n".encode()
        lines.append(line)
        total += len(line)
        n += 1
    return b"".join(lines)


def redraw_stream() -> bytes:
    """The recorded Claude Code output, every session in order."""
    return b"".join(output_bytes(cast) for cast in sorted(TRANSCRIPTS.glob("*.cast")))


def stock_screen(data: bytes, rows: int = ROWS, cols: int = COLS) -> tuple[list[str], str]:
    screen = pyte.Screen(cols, rows)
    pyte.ByteStream(screen).feed(data)
    return list(screen.display), screen.title


@dataclass
class Updates:
    """What on_update saw."""

    model: ScreenModel
    snapshots: list[ScreenSnapshot] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def __call__(self) -> None:
        snap = self.model.snapshot()
        with self.changed:
            self.snapshots.append(snap)
            self.changed.notify_all()

    def wait_for_text(self, text: str, timeout: float = 10) -> ScreenSnapshot:
        with self.changed:
            assert self.changed.wait_for(
                lambda: any(text in s.text() for s in self.snapshots), timeout
            ), f"no update showed {text!r}"
            return next(s for s in self.snapshots if text in s.text())


@pytest.fixture
def feeder_of() -> Iterator[list[ScreenFeeder]]:
    started: list[ScreenFeeder] = []
    yield started
    for feeder in started:
        if isinstance(feeder._model, GatedModel):
            feeder._model.gate.set()
        feeder.stop()


def start(
    feeders: list[ScreenFeeder], model: ScreenModel, **kw: float
) -> tuple[ScreenFeeder, Updates]:
    updates = Updates(model)
    feeder = ScreenFeeder(model, updates, **kw)  # type: ignore[arg-type]
    feeder.start()
    feeders.append(feeder)
    return feeder, updates


def pieces(data: bytes, size: int = 4096) -> Iterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


# -- the feeder --------------------------------------------------------------------------
def test_a_stuck_model_never_blocks_put_and_the_backlog_stays_bounded(
    feeder_of: list[ScreenFeeder],
) -> None:
    model = GatedModel(ROWS, COLS)
    feeder, _ = start(feeder_of, model, backlog=SMALL)
    flood = plain_flood(2_000_000)
    feeder.put(b"first\r\n")
    assert model.entered.wait(5)  # the feeder thread is now stuck inside the model
    for chunk in pieces(flood, 65536):
        feeder.put(chunk)
        assert feeder.pending <= BACKLOG + 65536
    model.gate.set()
    assert feeder.drained(10)
    assert feeder.dropped > len(flood) - SMALL - 65536
    lines, _ = stock_screen(b"first\r\n" + flood)
    assert list(model.snapshot().lines) == lines


def cast_output(name: str) -> bytes:
    return output_bytes(TRANSCRIPTS / f"{name}.cast")


@pytest.mark.parametrize("kind", ["plain", "claude"])
def test_after_a_flood_the_screen_is_the_one_every_byte_makes(
    feeder_of: list[ScreenFeeder], kind: str
) -> None:
    if kind == "plain":  # scrolling output: only its last lines show
        flood, rows, cols = plain_flood(1_500_000), ROWS, COLS
    else:
        # Claude Code's own redraws over and over, then a session that ends with a full
        # repaint (`/clear`): only what was painted since shows. (A program that patches
        # its screen with relative moves only, and floods, is left approximate until it
        # repaints in full; Claude Code's output stays far below the backlog.)
        block = redraw_stream()
        flood = block * (1_500_000 // len(block)) + cast_output("clear")
        rows, cols = 40, 120
    model = ScreenModel(rows, cols)
    feeder, updates = start(feeder_of, model, backlog=SMALL)
    for chunk in pieces(flood):
        feeder.put(chunk)
    assert feeder.drained(10)
    assert feeder.dropped > 0  # most of it was never modelled
    snap = model.snapshot()
    lines, title = stock_screen(flood, rows, cols)
    assert list(snap.lines) == lines
    assert snap.title == title
    assert updates.snapshots[-1] == snap


def test_caught_up_returns_once_the_screen_is_the_one_every_byte_put_makes(
    feeder_of: list[ScreenFeeder], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A flood's screen is approximate until its settle: a turn end's screen must not be
    # taken before (AgentSession waits on caught_up at a quiet turn end). Here a flood
    # feeds one tail only, at its start, and its settle comes half a second after it.
    monkeypatch.setattr(screen_module, "FLOOD_EVERY", 3600.0)
    monkeypatch.setattr(screen_module, "SETTLE_QUIET", 0.5)
    model = ScreenModel(ROWS, COLS)
    feeder, _ = start(feeder_of, model, backlog=SMALL)
    first = plain_flood(1_500_000)
    for chunk in pieces(first, 65536):
        feeder.put(chunk)
    assert feeder.drained(10)  # its first tail is fed: the flood goes on unmodelled
    rest = plain_flood(1_000_000, seed=2) + b"the last line\r\n"
    for chunk in pieces(rest, 65536):
        feeder.put(chunk)
    assert feeder.caught_up(10)
    assert list(model.snapshot().lines) == stock_screen(first + rest)[0]
    feeder.put(b"one more")
    assert feeder.caught_up(10)
    assert "the last line\none more" in model.snapshot().text()


def progress_bars(cycles: int, bars: int = 3) -> bytes:
    """A shell line, then BARS progress bars repainted in place CYCLES times (cursor up
    over them, each redrawn, as tqdm and docker do), then a last line and a prompt."""
    out = [b"$ run\r\n"]
    for i in range(cycles + 1):
        if i:
            out.append(b"\x1b[%dA" % bars)
        for b in range(bars):
            done = i * (b + 1) * 30 // (cycles * bars)
            out.append(b"\r\x1b[Kbar%d [%s%s] %d%%\r\n" % (b, b"#" * done, b"." * (30 - done), i))
    return b"".join([*out, b"done\r\n$ "])


@pytest.mark.parametrize("put", [4096, 65536])
def test_a_flood_that_pauses_within_the_backlog_is_modelled_byte_for_byte(
    feeder_of: list[ScreenFeeder], put: int
) -> None:
    # A progress bar repainted in place 10,000 times as fast as it can: its bars' rows
    # are patched with relative cursor moves, which a tail fed from a line start put on
    # the wrong rows (the bars showed twice). Under the backlog, it is fed whole.
    data = progress_bars(10_000)
    assert BURST * 4 < len(data) < BACKLOG
    model = ScreenModel(ROWS, COLS)
    feeder, _ = start(feeder_of, model)
    for chunk in pieces(data, put):
        feeder.put(chunk)
    assert feeder.caught_up(30)
    assert feeder.dropped == 0
    assert list(model.snapshot().lines) == stock_screen(data)[0]


def test_output_kept_back_is_fed_only_while_no_more_comes(
    feeder_of: list[ScreenFeeder],
) -> None:
    # Output kept back while it flowed is modelled once it pauses, a slice at a time, and
    # the feeding stops as soon as output comes again: the relay, the agent and the
    # terminal get the CPU back, and the rest is fed at the next pause, still in order.
    class Interrupted(ScreenModel):
        def __init__(self) -> None:
            super().__init__(ROWS, COLS)
            self.feeds = 0
            self.marks: list[int] = []

        def feed(self, data: bytes) -> None:
            self.feeds += 1
            if self.feeds == 2:
                feeder.put(b"\r\nmore output")  # comes while the second slice is fed
            super().feed(data)

        def mark(self, through: int) -> None:
            self.marks.append(through)
            super().mark(through)

    data = progress_bars(5000)
    model = Interrupted()
    feeder, _ = start(feeder_of, model)
    feeder.put(data)
    assert feeder.caught_up(30)
    assert model.marks[0] == 2 * screen_module.SLICE  # two slices, then the relay's turn
    assert feeder.dropped == 0
    assert list(model.snapshot().lines) == stock_screen(data + b"\r\nmore output")[0]


def test_a_title_set_in_dropped_output_survives(feeder_of: list[ScreenFeeder]) -> None:
    model = GatedModel(ROWS, COLS)
    feeder, _ = start(feeder_of, model, backlog=SMALL)
    feeder.put(b"\x1b]0;old title\x07x")
    assert model.entered.wait(5)
    feeder.put(b"\x1b]2;the title\x07" + plain_flood(2_000_000))
    feeder.put(plain_flood(1_000_000, seed=2))
    model.gate.set()
    assert feeder.drained(10)
    assert feeder.dropped > 0
    assert model.snapshot().title == "the title"


def test_a_burst_that_fits_the_backlog_is_fed_whole(feeder_of: list[ScreenFeeder]) -> None:
    # Claude Code repainting a long conversation: nothing may be skipped.
    model = GatedModel(40, 120)
    feeder, _ = start(feeder_of, model)
    feeder.put(b"\x1b[2J")
    assert model.entered.wait(5)
    burst = redraw_stream()
    assert len(burst) < BACKLOG
    for chunk in pieces(burst, 300):
        feeder.put(chunk)
    model.gate.set()
    assert feeder.drained(10)
    assert feeder.dropped == 0
    assert list(model.snapshot().lines) == stock_screen(b"\x1b[2J" + burst, 40, 120)[0]


def test_updates_are_throttled_under_a_flood_and_current_once_it_stops(
    feeder_of: list[ScreenFeeder],
) -> None:
    model = ScreenModel(ROWS, COLS)
    feeder, updates = start(feeder_of, model, interval=0.05)
    flood = plain_flood(1_000_000) * 20
    for chunk in pieces(flood):
        feeder.put(chunk)
    feeder.put(b"\r\nthe last line\r\n")
    updates.wait_for_text("the last line")
    # 20 MB in 4 KB pieces is about 5000 puts; each batch is one update.
    assert len(updates.snapshots) < 200
    assert feeder.drained(5)


def test_stop_feeds_what_is_queued(feeder_of: list[ScreenFeeder]) -> None:
    model = ScreenModel(ROWS, COLS)
    feeder, _ = start(feeder_of, model, interval=10)  # the next batch would be far away
    feeder.put(b"one")
    assert feeder.drained(5)
    feeder.put(b" two")
    feeder.stop()
    assert model.snapshot().lines[0].rstrip() == "one two"


@pytest.mark.parametrize("flood", [False, True])
def test_the_outputs_end_brings_the_screen_up_to_date_without_a_quiet_spell(
    feeder_of: list[ScreenFeeder], monkeypatch: pytest.MonkeyPatch, flood: bool
) -> None:
    # The agent exited: its last bytes are all there is. With the quiet spells made
    # endless, only ended() can bring the last screen (a flood's settle included).
    monkeypatch.setattr(screen_module, "QUIET", 3600.0)
    monkeypatch.setattr(screen_module, "SETTLE_QUIET", 3600.0)
    model = ScreenModel(ROWS, COLS)
    feeder, _ = start(feeder_of, model, interval=3600, backlog=SMALL)
    feeder.put(b"first\r\n")  # the first batch starts at once; the next one waits
    assert feeder.drained(5)
    data = b"first\r\n" + (plain_flood(1_000_000) if flood else b"") + b"\r\nthe last line\r\n"
    for chunk in pieces(data[len(b"first\r\n") :]):
        feeder.put(chunk)
    assert not feeder.drained(0.05)  # waiting for a pause that never comes
    feeder.ended()
    assert feeder.drained(5)
    assert (feeder.dropped > 0) is flood
    assert list(model.snapshot().lines) == stock_screen(data)[0]


def test_a_model_error_is_kept_and_feeding_goes_on(feeder_of: list[ScreenFeeder]) -> None:
    class Broken(ScreenModel):
        def feed(self, data: bytes) -> None:
            if b"boom" in data:
                raise RuntimeError("model bug")
            super().feed(data)

    model = Broken(ROWS, COLS)
    seen: list[BaseException] = []
    feeder = ScreenFeeder(model, lambda: None, on_error=seen.append)
    feeder_of.append(feeder)
    feeder.start()
    feeder.put(b"boom")
    assert feeder.drained(5)
    feeder.put(b"fine")
    assert feeder.drained(5)
    assert [str(e) for e in seen] == ["model bug"]
    assert "fine" in model.snapshot().text()


# -- the relay ---------------------------------------------------------------------------
PRINTER = """
import os, sys
data = open(sys.argv[1], "rb").read()
view = memoryview(data)
while view:
    view = view[os.write(1, view[:65536]):]
if sys.argv[2:] == ["stay"]:
    sys.stdin.read()  # waits for input that never comes
"""


@dataclass
class RelayRun:
    to_person: bytes
    observed: list[bytes]
    eof_after: int | None  # observed bytes when on_agent_eof came
    person_at_pause: list[int]  # bytes the person had at each on_pause
    signals: list[int]  # what on_signal was called with
    resizes: list[tuple[int, int]]  # what on_resize was called with


def relay(
    tmp_path: Path,
    data: bytes,
    on_output_extra: object = None,
    *,
    until_pause: bool = False,
    to_person: Callable[[bytes], bytes] | None = None,
    terminal_gone: bool = False,
    signals_sent: Sequence[int] = (),
) -> RelayRun:
    """Relay a child printing DATA (raw mode, so bytes pass unchanged) to a file, or with
    `terminal_gone` to a PTY whose other end closed (as a closed window leaves it).

    The child exits after printing; with `until_pause` it stays, and the relay runs until
    on_pause comes after the person got every byte.
    """
    payload = tmp_path / "payload"
    payload.write_bytes(data)
    script = tmp_path / "printer.py"
    script.write_text(PRINTER)
    stay = " stay" if until_pause else ""
    agent = AgentProcess.spawn(
        ["/bin/sh", "-c", f'stty raw -echo; exec "{sys.executable}" "{script}" "{payload}"{stay}'],
        cwd=str(tmp_path),
        env=dict(os.environ),
        size=(ROWS, COLS),
    )
    out_path = tmp_path / "person"
    out_fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    if terminal_gone:
        os.close(out_fd)
        master, out_fd = os.openpty()
        os.close(master)
    wake_r, wake_w = os.pipe()
    sig_r, sig_w = os.pipe()
    observed: list[bytes] = []
    eof_after: list[int] = []
    at_pause: list[int] = []
    signals: list[int] = []
    resizes: list[tuple[int, int]] = []
    os.write(sig_w, bytes(signals_sent))  # as the signal pipe gets them

    def on_output(chunk: bytes) -> None:
        observed.append(chunk)
        if callable(on_output_extra):
            on_output_extra(chunk)

    def on_eof() -> None:
        eof_after.append(sum(map(len, observed)))
        os.write(wake_w, b"x")

    def on_pause() -> None:
        at_pause.append(os.fstat(out_fd).st_size)
        if until_pause and at_pause[-1] >= len(data):
            os.write(wake_w, b"x")

    give_up = threading.Timer(60, lambda: os.write(wake_w, b"x"))  # a failing test ends
    give_up.start()
    try:
        Relay(
            agent,
            RelayHandlers(
                on_output,
                on_eof,
                signals.append,
                lambda r, c: resizes.append((r, c)),
                on_pause=on_pause,
                to_person=to_person,
            ),
            signal_fd=sig_r,
            wake_fd=wake_r,
            out_fd=out_fd,
        ).run()
    finally:
        give_up.cancel()
        agent.terminate(grace=0.5)
        agent.close()
        for fd in (out_fd, wake_r, wake_w, sig_r, sig_w):
            os.close(fd)
    eof = eof_after[0] if eof_after else None
    return RelayRun(out_path.read_bytes(), observed, eof, at_pause, signals, resizes)


def test_every_byte_reaches_the_person_and_the_observers_in_order(tmp_path: Path) -> None:
    data = plain_flood(3_000_000)
    run = relay(tmp_path, data)
    assert run.to_person == data
    assert b"".join(run.observed) == data
    assert run.eof_after == len(data)  # nothing held back when the agent ends
    assert max(map(len, run.observed)) <= 3 * 65536  # handed on in bounded pieces


def test_the_person_gets_what_to_person_makes_of_each_piece_the_observers_the_agents(
    tmp_path: Path,
) -> None:
    data = plain_flood(200_000)
    run = relay(tmp_path, data, to_person=lambda piece: piece.upper())
    assert run.to_person == data.upper()
    assert b"".join(run.observed) == data


def test_a_stuck_screen_model_does_not_slow_the_relay(tmp_path: Path) -> None:
    model = GatedModel(ROWS, COLS)
    feeder = ScreenFeeder(model, lambda: None)
    feeder.start()
    try:
        feeder.put(b"first\r\n")
        assert model.entered.wait(5)  # the feeder thread is now stuck inside the model
        data = plain_flood(4_000_000)
        run = relay(tmp_path, data, feeder.put)  # returns only once the agent is done
        assert run.to_person == data
        assert not model.gate.is_set()
        assert feeder.pending <= BACKLOG + 2 * 65536
    finally:
        model.gate.set()
        feeder.stop()
    lines, _ = stock_screen(b"first\r\n" + data)
    assert list(model.snapshot().lines) == lines


def test_a_pause_in_the_output_is_reported_once_everything_reached_the_person(
    tmp_path: Path,
) -> None:
    data = plain_flood(1_000_000)
    run = relay(tmp_path, data, until_pause=True)
    assert run.person_at_pause and run.person_at_pause[-1] == len(data)
    assert run.to_person == data and b"".join(run.observed) == data
    assert run.eof_after is None  # the agent still runs: the pause ended the relay


class PipeAgent:
    """An agent side made of a pipe the test writes into."""

    def __init__(self) -> None:
        self.fd, self.w = os.pipe()

    def read(self) -> bytes:
        return os.read(self.fd, 65536)

    def write(self, data: bytes) -> None:
        pass


def test_output_faster_than_hold_is_no_pause_and_its_end_is_one() -> None:
    agent = PipeAgent()
    now = [0.0]  # the relay's clock: frozen while output comes, so it never pauses
    wake_r, wake_w = os.pipe()
    sig_r, sig_w = os.pipe()
    got = threading.Condition()
    observed: list[bytes] = []
    pauses: list[int] = []

    def on_output(data: bytes) -> None:
        with got:
            observed.append(data)
            got.notify_all()

    def on_pause() -> None:
        with got:
            pauses.append(len(b"".join(observed)))
            got.notify_all()

    def seen(size: int) -> Callable[[], bool]:
        return lambda: sum(map(len, observed)) >= size

    relay = Relay(
        agent,
        RelayHandlers(
            on_output, lambda: None, lambda _s: None, lambda _r, _c: None, on_pause=on_pause
        ),
        signal_fd=sig_r,
        wake_fd=wake_r,
        clock=lambda: now[0],
    )
    thread = threading.Thread(target=relay.run)
    thread.start()
    try:
        sent = b""
        for i in range(30):  # each piece is held, then handed on: none of that is a pause
            piece = b"piece %d\r\n" % i
            os.write(agent.w, piece)
            sent += piece
            with got:
                assert got.wait_for(seen(len(sent)), timeout=10)
        assert pauses == [] and b"".join(observed) == sent
        now[0] += 1.0  # no output for a second of the relay's time
        with got:
            assert got.wait_for(lambda: pauses, timeout=10)
        assert pauses == [len(sent)]
    finally:
        os.write(wake_w, b"x")
        thread.join(timeout=10)
        for fd in (agent.fd, agent.w, wake_r, wake_w, sig_r, sig_w):
            os.close(fd)
    assert not thread.is_alive()


def test_a_terminal_gone_mid_flood_ends_the_run_as_a_hangup_and_the_agent_is_drained(
    tmp_path: Path,
) -> None:
    # The person's window closes (tmux killed, ssh dropped): writing to it says EIO. The
    # relay goes on reading the agent (which must not block on a full PTY), hands every
    # byte to the observers, and asks for the run's end once, as SIGHUP does.
    data = plain_flood(500_000)
    run = relay(tmp_path, data, terminal_gone=True)
    assert run.signals == [signal.SIGHUP]
    assert b"".join(run.observed) == data
    assert run.eof_after == len(data)


def test_a_hangup_seen_both_ways_is_told_once_and_a_gone_terminal_is_not_resized(
    tmp_path: Path,
) -> None:
    # The kernel's SIGHUP (and a SIGWINCH) besides the failed write: the run hears once.
    sent = [signal.SIGHUP, signal.SIGWINCH, signal.SIGHUP]
    run = relay(tmp_path, plain_flood(100_000), terminal_gone=True, signals_sent=sent)
    assert (run.signals, run.resizes) == ([signal.SIGHUP], [])


def test_raw_mode_leaves_a_terminal_that_is_gone_without_an_error() -> None:
    # Restoring it raises EIO; the run's own end (SIGHUP) is what counts, not that.
    master, slave = os.openpty()
    try:
        with tty_.raw(slave):
            assert not termios.tcgetattr(slave)[3] & termios.ICANON  # raw while it ran
            os.close(master)  # the window closed while ptysup ran
    finally:
        os.close(slave)
