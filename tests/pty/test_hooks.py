"""The hook channel's privacy and the hook client, run the way Claude Code runs it."""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ptysup.agents.events import HookEvent
from ptysup.agents.hookchannel import HookChannel, remove_left

WAIT = 10.0  # seconds to wait for an event that must come


class Channel:
    """A running HookChannel and what it handed on."""

    def __init__(self, parent: str | None = None) -> None:
        self.events: queue.Queue[HookEvent] = queue.Queue()
        self.foreign: queue.Queue[str] = queue.Queue()
        self.channel = HookChannel(self.events.put, self.foreign.put, parent=parent)
        self.channel.__enter__()

    @property
    def token(self) -> str:
        return self.channel.address()[1]

    def hook(
        self, payload: dict[str, Any], timeout: float = 10
    ) -> subprocess.CompletedProcess[bytes]:
        """Run the hook command as Claude Code does: through `sh -c`, JSON on stdin."""
        return subprocess.run(
            ["sh", "-c", self.channel.command()],
            input=json.dumps(payload).encode(),
            capture_output=True,
            timeout=timeout,
        )

    def next_event(self) -> HookEvent:
        return self.events.get(timeout=WAIT)

    def close(self) -> None:
        self.channel.close()


@pytest.fixture
def chan() -> Iterator[Channel]:
    c = Channel()
    yield c
    c.close()


def payload(name: str, session: str = "s1", **extra: Any) -> dict[str, Any]:
    return {"hook_event_name": name, "session_id": session, "cwd": "/p", **extra}


def send_raw(path: str, data: bytes) -> bytes:
    """Connect, send `data`, and return what the channel answered."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(WAIT)
        sock.connect(path)
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        return sock.recv(16)


def test_directory_is_0700_and_socket_0600_with_an_unguessable_path(chan: Channel) -> None:
    path = Path(chan.channel.path)
    directory = path.parent
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert directory.stat().st_uid == os.getuid()
    assert stat.S_ISSOCK(path.stat().st_mode)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # A random directory (mkdtemp) and 64 random bits in the socket's name.
    assert re.fullmatch(r"ptysup-[a-z0-9_]{8}", directory.name)
    assert re.fullmatch(r"hooks-[0-9a-f]{16}\.sock", path.name)
    assert str(os.getpid()) not in path.name
    other = Channel()
    try:
        assert Path(other.channel.path).parent != directory
        assert Path(other.channel.path).name != path.name
        assert other.token != chan.token and len(chan.token) == 32
    finally:
        other.close()


def test_the_hook_command_holds_no_secret_only_the_private_address_file(chan: Channel) -> None:
    # Agents print and keep their hook commands (Gemini CLI at exit, aider in its chat
    # history): neither the token nor the socket may be on it.
    path, token = chan.channel.address()
    for wait in (None, 600.0):
        command = chan.channel.command(wait)
        assert token not in command and path not in command
    address = Path(path).parent / "address"
    assert stat.S_IMODE(address.stat().st_mode) == 0o600
    assert address.read_text() == f"{path}\n{token}\n"
    assert chan.hook(payload("Stop")).returncode == 0
    assert chan.next_event().name == "Stop"


def test_a_payload_without_the_token_is_ignored_and_reported(chan: Channel) -> None:
    good = json.dumps(payload("Stop")).encode()
    for bad in (
        b"",
        good,  # no token line at all
        b"0" * 32 + b"\n" + good,  # a wrong token of the right length
        chan.token[:-1].encode() + b"\n" + good,  # a prefix of the token
        chan.token.encode() + b"x\n" + good,
    ):
        assert send_raw(chan.channel.path, bad) == b""  # no acknowledgement either
        assert chan.foreign.get(timeout=WAIT) == "hook payload without this run's token"
    for bad, why in (
        (b"{not json", "hook payload is not JSON"),
        (b"[1, 2]", "hook payload is not a JSON object"),
        (b"[" * 100_000 + b"]" * 100_000, "hook payload is not JSON"),
        (b"\xff\xfe", "hook payload is not JSON"),
    ):
        send_raw(chan.channel.path, chan.token.encode() + b"\n" + bad)
        assert chan.foreign.get(timeout=WAIT) == why
    # The channel still works, and nothing above became an event.
    assert chan.hook(payload("UserPromptSubmit")).returncode == 0
    assert chan.next_event().name == "UserPromptSubmit"
    assert chan.events.empty()


def test_events_of_a_session_this_run_did_not_start_are_ignored(chan: Channel) -> None:
    chan.hook(payload("SessionStart", "mine", source="startup"))
    assert chan.next_event().payload["session_id"] == "mine"
    chan.hook(payload("Stop", "someone-else", last_assistant_message="not ours"))
    assert chan.foreign.get(timeout=WAIT) == "hook from unknown session 'someone-else'"
    chan.hook(payload("Stop", "mine"))
    event = chan.next_event()
    assert (event.name, event.payload["session_id"]) == ("Stop", "mine")
    # A new session announced by this run's agent (/clear) is its own from then on.
    chan.hook(payload("SessionStart", "after-clear", source="clear"))
    chan.hook(payload("Stop", "after-clear"))
    assert [chan.next_event().name, chan.next_event().name] == ["SessionStart", "Stop"]
    assert chan.foreign.empty()


def test_hooks_arrive_in_the_order_they_fired(chan: Channel) -> None:
    names = ["SessionStart", "UserPromptSubmit"] + ["PostToolUse"] * 20 + ["Stop"]
    for n, name in enumerate(names):
        assert chan.hook(payload(name, n=n)).returncode == 0
    got = [chan.next_event() for _ in names]
    assert [e.name for e in got] == names
    assert [e.payload["n"] for e in got] == list(range(len(names)))
    assert [e.ts for e in got] == sorted(e.ts for e in got)


def test_concurrent_hooks_all_arrive(chan: Channel) -> None:
    threads = [
        threading.Thread(target=chan.hook, args=(payload("PostToolUse", n=n),)) for n in range(16)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT)
    assert sorted(chan.next_event().payload["n"] for _ in threads) == list(range(16))


def test_the_hook_client_exits_0_quickly_once_ptysup_closed_the_channel() -> None:
    c = Channel()
    directory = Path(c.channel.path).parent
    c.close()
    assert not directory.exists()
    start = time.monotonic()
    result = c.hook(payload("Stop"))
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert time.monotonic() - start < 3


def channel_in_a_child(on_event: str, command_args: str) -> tuple[subprocess.Popen[str], str]:
    """A HookChannel open in another process (one a test may kill), and its hook command."""
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from ptysup.agents.hookchannel import HookChannel\n"
            f"c = HookChannel({on_event}).__enter__()\n"
            f"print(c.command({command_args}), flush=True)\n"
            "time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert child.stdout is not None
    return child, child.stdout.readline().strip()


def test_the_hook_client_exits_0_quickly_when_ptysup_was_killed(tmp_path: Path) -> None:
    # A ptysup killed with SIGKILL leaves its socket file behind, with no one listening.
    child, command = channel_in_a_child("lambda e: None", "")
    socket_path = Path(command.split()[-1]).read_text().split("\n")[0]
    try:
        child.send_signal(signal.SIGKILL)
        child.wait(WAIT)
        assert os.path.exists(socket_path)
        start = time.monotonic()
        result = subprocess.run(
            ["sh", "-c", command], input=b'{"hook_event_name":"Stop"}', capture_output=True
        )
        assert (result.returncode, result.stderr) == (0, b"")
        assert time.monotonic() - start < 3
    finally:
        child.kill()
        child.wait()
        shutil.rmtree(os.path.dirname(socket_path))


def test_the_hook_client_gives_up_on_a_stuck_ptysup(chan: Channel, tmp_path: Path) -> None:
    # A socket that accepts (the kernel's backlog) but never answers: a stopped ptysup.
    stuck = tmp_path / "stuck.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(stuck))
        server.listen(1)
        address = tmp_path / "address"
        address.write_text(f"{stuck}\n{chan.token}\n")
        command = chan.channel.command().replace(
            str(Path(chan.channel.path).parent / "address"), str(address)
        )
        start = time.monotonic()
        result = subprocess.run(["sh", "-c", command], input=b"{}", capture_output=True, timeout=30)
    assert result.returncode == 0
    assert time.monotonic() - start < 10  # its own 5 s time-out, not Claude Code's 60 s


@pytest.mark.parametrize(
    ("parent", "fits"),
    [("with space", True), ('it\'s "quoted" $HOME `x` ;', True), ("d" * 150, False)],
)
def test_odd_or_deep_temp_dirs_still_work(parent: str, fits: bool) -> None:
    # Under /tmp itself: pytest's tmp_path alone is too deep for a socket path.
    top = Path(tempfile.mkdtemp(prefix="h", dir="/tmp"))
    base = top / parent
    base.mkdir()
    try:
        c = Channel(parent=str(base))
        try:
            assert len(c.channel.path.encode()) <= 100  # fits sun_path
            assert Path(c.channel.path).is_relative_to(base) is fits  # too deep: /tmp
            assert c.hook(payload("Stop")).returncode == 0  # quoted for `sh -c`
            assert c.next_event().name == "Stop"
        finally:
            c.close()
        assert not Path(c.channel.path).parent.exists()
    finally:
        shutil.rmtree(top)


def _request(chan: Channel, body: dict[str, Any], wait: float = 30) -> Any:
    """Run a waiting hook (a request) in the background; its result lands in a queue."""
    done: queue.Queue[subprocess.CompletedProcess[bytes]] = queue.Queue()

    def run() -> None:
        done.put(
            subprocess.run(
                ["sh", "-c", chan.channel.command(wait=wait)],
                input=json.dumps(body).encode(),
                capture_output=True,
                timeout=60,
            )
        )

    threading.Thread(target=run, daemon=True).start()
    return done


def test_a_request_hook_prints_ptysups_reply_and_only_the_first(chan: Channel) -> None:
    done = _request(chan, payload("PreToolUse", tool_name="AskUserQuestion"))
    event = chan.next_event()
    assert event.name == "PreToolUse" and event.reply is not None
    assert done.empty()  # the hook waits for the reply
    assert event.reply.send('{"hookSpecificOutput": {"answer": "é"}}') is True
    result = done.get(timeout=WAIT)
    assert (result.returncode, result.stderr) == (0, b"")
    assert json.loads(result.stdout) == {"hookSpecificOutput": {"answer": "é"}}
    assert event.reply.send("too late") is False


def test_a_fire_and_forget_hook_prints_nothing_and_carries_no_reply(chan: Channel) -> None:
    result = chan.hook(payload("Stop"))
    assert (result.returncode, result.stdout) == (0, b"")
    assert chan.next_event().reply is None


def test_closing_the_channel_answers_every_waiting_request_with_nothing() -> None:
    c = Channel()
    done = _request(c, payload("PreToolUse"))
    assert c.next_event().reply is not None
    start = time.monotonic()
    c.close()
    result = done.get(timeout=WAIT)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert time.monotonic() - start < 5


def test_a_request_from_a_foreign_session_gets_nothing(chan: Channel) -> None:
    chan.hook(payload("SessionStart", "mine"))
    chan.next_event()
    done = _request(chan, payload("PreToolUse", "someone-else"))
    assert chan.foreign.get(timeout=WAIT) == "hook from unknown session 'someone-else'"
    result = done.get(timeout=WAIT)
    assert (result.returncode, result.stdout) == (0, b"")
    assert chan.events.empty()


def test_a_request_hook_gives_up_after_its_wait(chan: Channel) -> None:
    done = _request(chan, payload("PreToolUse"), wait=1)
    event = chan.next_event()
    result = done.get(timeout=WAIT)  # ptysup never answered: nothing printed, exit 0
    assert (result.returncode, result.stdout) == (0, b"")
    assert event.reply is not None and event.reply.send("late") is False


def test_a_waiting_request_returns_at_once_when_ptysup_is_killed() -> None:
    child, command = channel_in_a_child("lambda e: print('got', e.name, flush=True)", "wait=600")
    try:
        hook = subprocess.Popen(
            ["sh", "-c", command], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert hook.stdin is not None
        hook.stdin.write(json.dumps(payload("PreToolUse")).encode())
        hook.stdin.close()
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "got PreToolUse"  # it waits for a reply
        start = time.monotonic()
        child.send_signal(signal.SIGKILL)
        assert hook.wait(timeout=WAIT) == 0
        assert hook.stdout is not None and hook.stdout.read() == b""
        assert time.monotonic() - start < 5
    finally:
        child.kill()
        child.wait()
        shutil.rmtree(os.path.dirname(command.split()[-2]), ignore_errors=True)


def test_a_resume_removes_only_its_own_runs_hook_directories() -> None:
    parent = tempfile.mkdtemp(prefix="ph", dir="/tmp")  # short: socket paths must fit
    try:
        killed = Path(parent, "ptysup-hooks-run-a-killed")  # what a SIGKILLed part left
        killed.mkdir(mode=0o700)
        (killed / "hooks-x.sock").touch()
        with HookChannel(on_event=lambda e: None, parent=parent, run_id="run-b") as live:
            assert Path(live.path).parent.name.startswith("ptysup-hooks-run-b-")
            assert remove_left("run-a", (parent,)) == [str(killed)]
            assert not killed.exists()
            assert Path(live.path).exists()  # another run's stays, alive or not
    finally:
        shutil.rmtree(parent)
