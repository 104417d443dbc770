"""The recording's writer process: frames in, asciicast lines out, floods spooled first."""

from __future__ import annotations

import io
import json
import os
import select
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from ptysup.terminal import castwriter
from ptysup.terminal.castwriter import FLOOD, CastEncoder, FrameStream, Spool, frame_header
from ptysup.terminal.record import Recording, output_bytes, read_cast, wait_complete
from tests.helpers import Tick, wait_for


def frames(items: list[tuple[bytes, float, bytes]]) -> bytes:
    return b"".join(frame_header(k, t, len(p)) + p for k, t, p in items)


ITEMS = [
    (b"o", 0.5, b"hello \xc3"),  # a UTF-8 character split across frames
    (b"o", 0.75, b"\xa9t\xc3\xa9 \x1b[31mred\x1b[0m\r\n"),
    (b"m", 1.0, b"decision:1:continue"),
    (b"i", 1.25, "go on ✓".encode()),
    (b"r", 1.5, b"100x30"),
]


def test_frames_cut_anywhere_give_the_same_lines() -> None:
    data = frames(ITEMS)
    whole = FrameStream(CastEncoder()).lines(data)
    events = [json.loads(line) for line in whole.splitlines()]
    assert events == [
        [0.5, "o", "hello "],
        [0.75, "o", "été \x1b[31mred\x1b[0m\r\n"],
        [1.0, "m", "decision:1:continue"],
        [1.25, "i", "go on ✓"],
        [1.5, "r", "100x30"],
    ]
    for cut in range(1, len(data)):
        stream = FrameStream(CastEncoder())
        assert stream.lines(data[:cut]) + stream.lines(data[cut:]) == whole
        assert stream.left() == 0


def test_a_bad_frame_is_an_error_not_garbage() -> None:
    with pytest.raises(ValueError, match="bad frame kind"):
        FrameStream(CastEncoder()).lines(frame_header(b"x", 0.0, 0))


class CountingSpool(Spool):
    def __init__(self, directory: Path) -> None:
        super().__init__(str(directory))
        self.most = 0

    def add(self, data: bytes) -> None:
        super().add(data)
        self.most = max(self.most, len(self))


def run_convert(
    parts: list[bytes],
    spool: CountingSpool,
    between: threading.Event | None = None,
) -> str:
    """`convert` reading the parts from a pipe, each written as fast as a thread can
    (after `between` is set, if given)."""
    read_end, write_end = os.pipe()

    def feed() -> None:
        with os.fdopen(write_end, "wb") as w:
            for i, part in enumerate(parts):
                if i and between is not None:
                    between.wait(30)
                w.write(part)
                w.flush()

    writer = threading.Thread(target=feed)
    writer.start()
    out = io.BytesIO()
    try:
        castwriter.convert(read_end, out, spool)
    finally:
        os.close(read_end)
        writer.join()
        spool.close()
    return out.getvalue().decode()


def test_a_trickle_is_written_as_it_comes_without_spooling(tmp_path: Path) -> None:
    spool = CountingSpool(tmp_path)
    text = run_convert([frames(ITEMS)], spool)
    assert text == FrameStream(CastEncoder()).lines(frames(ITEMS))
    assert spool.most == 0


def test_two_floods_with_a_pause_between_reuse_the_emptied_spool(tmp_path: Path) -> None:
    chunk = b"\x1b[32mlog line\x1b[0m\r\n" * 4000
    flood = [frames([(b"o", i, chunk)]) for i in range(2 * FLOOD // len(chunk) + 2)]
    emptied = threading.Event()
    times_emptied = [0]

    class Watched(CountingSpool):
        def take(self, size: int) -> bytes:
            data = super().take(size)
            if not len(self):
                times_emptied[0] += 1
                emptied.set()
            return data

    spool = Watched(tmp_path)
    # The second flood comes once the first is written out: the spool starts over.
    text = run_convert([b"".join(flood), b"".join(flood)], spool, between=emptied)
    assert times_emptied[0] == 2 and spool.most > FLOOD  # each flood went through it
    output = "".join(json.loads(line)[2] for line in text.splitlines())
    assert output == chunk.decode() * (2 * len(flood))


def test_a_flood_is_spooled_then_written_whole_and_in_order(tmp_path: Path) -> None:
    chunk = ("\x1b[2K\x1b[1;32m✓ line\x1b[0m\r\n" * 2000).encode()
    items = []
    for i in range(3 * FLOOD // len(chunk) + 2):
        items.append((b"o", i / 10, chunk))
        items.append((b"m", i / 10, f"marker {i}".encode()))
    items.append((b"o", 99.0, b"end \xe2\x9c"))  # ends inside a character
    data = frames(items)
    spool = CountingSpool(tmp_path)
    text = run_convert([data], spool)
    assert spool.most > FLOOD  # the flood went through the spool
    assert len(spool) == 0
    assert os.listdir(tmp_path) == []  # the spool file is unlinked from the start
    events = [json.loads(line) for line in text.splitlines()]
    markers = [d for _, k, d in events if k == "m"]
    assert markers == [f"marker {i}" for i in range(len(items) // 2)]
    output = "".join(d for _, k, d in events if k == "o")
    assert output == chunk.decode() * (len(items) // 2) + "end \ufffd"
    assert [t for t, _, _ in events] == sorted(t for t, _, _ in events)


def record(path: Path, writer_process: bool) -> Recording:
    rec = Recording(
        path, 10, 40, Tick(0.25), command="claude", title="a run", writer_process=writer_process
    )
    for kind, _, payload in ITEMS:
        if kind == b"o":
            rec.output(payload)
        elif kind == b"m":
            rec.marker(payload.decode())
        elif kind == b"i":
            rec.typed(payload.decode())
        else:
            rec.resize(30, 100)
    rec.close()
    return rec


def test_the_writer_process_and_the_fallback_write_the_same_file(tmp_path: Path) -> None:
    a = record(tmp_path / "a.cast", writer_process=True)
    b = record(tmp_path / "b.cast", writer_process=False)
    assert a.writer_pid is not None and b.writer_pid is None
    assert (a.error, b.error) == (None, None)
    assert read_cast(a.path)[1] == read_cast(b.path)[1]
    header = read_cast(a.path)[0]
    assert (header["command"], header["title"], "env" in header) == ("claude", "a run", False)
    assert len(read_cast(a.path)[1]) == len(ITEMS)
    assert a.path.stat().st_mode & 0o777 == 0o600


def wait_exited(pid: int, timeout: float) -> None:
    """Wait for a process that is not our child to end (a pidfd is readable then)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
        assert ready, f"pid {pid} still running after {timeout}s"
    finally:
        os.close(fd)


def test_the_recording_is_completed_when_ptysup_is_killed(tmp_path: Path) -> None:
    cast = tmp_path / "run.cast"
    program = textwrap.dedent(
        f"""
        import os, signal, sys, time
        from pathlib import Path
        from ptysup.terminal.record import Recording
        rec = Recording(Path({str(cast)!r}), 24, 80)
        rec.output(b"before the flood\\r\\n")
        for i in range(400):
            rec.output(b"\\x1b[1mflood line %d\\x1b[0m\\r\\n" % i * 100)
        rec.marker("last marker")
        rec.output(b"the last words")
        while rec.pending:  # a loaded machine may leave frames waiting here: not in the pipe
            time.sleep(0.01)
        print(rec.writer_pid, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == -signal.SIGKILL
    wait_exited(int(run.stdout), timeout=30)
    _, events = read_cast(cast)
    assert events[-2][1:] == ("m", "last marker")
    data = output_bytes(cast)
    assert data.startswith(b"before the flood\r\n") and data.endswith(b"the last words")
    assert data.count(b"flood line 399") == 100


def test_a_dead_writer_makes_the_recording_say_why(tmp_path: Path) -> None:
    rec = Recording(tmp_path / "r.cast", 10, 40)
    assert rec.writer_pid is not None
    os.kill(rec.writer_pid, signal.SIGKILL)
    wait_exited(rec.writer_pid, timeout=10)
    rec.output(b"nobody reads this")
    rec.marker("nor this")
    rec.close()
    assert rec.error is not None and "cannot write the recording" in rec.error


def send_while_stopped(rec: Recording, chunks: list[bytes]) -> None:
    """Send output while the writer process is stopped (SIGSTOP), then let it go on.

    A relay that waited for a stopped writer would wait forever: the thread's join time-out
    only keeps such a failure from hanging the test run."""
    assert rec.writer_pid is not None
    os.kill(rec.writer_pid, signal.SIGSTOP)
    try:

        def send() -> None:
            for chunk in chunks:
                rec.output(chunk)

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        sender.join(timeout=60)
        assert not sender.is_alive(), "output() waited for a stopped writer"
    finally:
        os.kill(rec.writer_pid, signal.SIGCONT)


def test_a_stopped_writer_never_holds_the_relay_and_loses_nothing(tmp_path: Path) -> None:
    rec = Recording(tmp_path / "r.cast", 10, 40)
    chunks = [bytes([65 + i % 26]) * 65536 for i in range(64)]  # 4 MB: 4 pipes full
    send_while_stopped(rec, chunks)
    assert rec.pending > 0  # what the pipe could not take waited in memory...
    wait_for(lambda: rec.pending == 0, 30, "the drain thread to hand it over")  # ...not long
    rec.close()
    assert rec.error is None
    assert output_bytes(rec.path) == b"".join(chunks)


def test_a_writer_stalled_too_long_stops_the_recording_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ptysup.terminal.record.BEHIND_MAX", 1 << 20)
    rec = Recording(tmp_path / "r.cast", 10, 40)
    chunks = [b"z" * 65536 for _ in range(64)]
    send_while_stopped(rec, chunks)
    rec.close()
    assert rec.error == "cannot write the recording: the writer fell 1 MB behind"
    kept = output_bytes(rec.path)
    assert 1 << 20 < len(kept) < len(b"".join(chunks)) and set(kept) == {ord("z")}


def test_a_recording_handed_off_is_completed_by_its_writer_after_close(tmp_path: Path) -> None:
    # With a person at the terminal ptysup does not wait for the writer at the end: the
    # writer holds the file's lock until the file is complete, and readers wait on it.
    path = tmp_path / "run.cast"
    rec = Recording(path, 24, 80, Tick(0.01), wait_at_close=False)
    pid = rec.writer_pid
    assert pid is not None
    # ~300 KB: all of it fits in the pipe, so a stopped writer holds nothing up.
    chunks = [b"line %d " % i * 20 + b"\r\n" for i in range(2000)]
    for chunk in chunks[:1000]:
        rec.output(chunk)
    os.kill(pid, signal.SIGSTOP)  # a writer still busy when the run ends
    try:
        for chunk in chunks[1000:]:
            rec.output(chunk)
        rec.close()
        assert rec.error is None and rec.finishing_pid == pid
        assert not wait_complete(path, 0.2)  # still being written: the lock is held
    finally:
        os.kill(pid, signal.SIGCONT)
    assert wait_complete(path, 30)
    assert output_bytes(path) == b"".join(chunks)


def test_a_recording_closed_with_waiting_is_complete_at_once(tmp_path: Path) -> None:
    path = tmp_path / "run.cast"
    rec = Recording(path, 24, 80, Tick(0.01))
    rec.output(b"hello\r\n")
    rec.close()
    assert rec.finishing_pid is None
    assert wait_complete(path, 0) and output_bytes(path) == b"hello\r\n"
