"""The private channel an agent's hooks report on: a Unix socket in a 0700 directory.

Every agent with hooks (Claude Code, Codex, Gemini) runs the same client
(hook_client.py) from its hook settings; its profile says how they are wired in."""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import secrets
import shlex
import shutil
import socket
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ptysup.agents.events import HookEvent

HOOK_CLIENT = Path(__file__).with_name("hook_client.py")
STATUS_LINE = "StatusLine"  # the name given to Claude Code's status line data
# A socket's path must fit in sun_path: 108 bytes on Linux, 104 on macOS. A deep TMPDIR
# (macOS gives ~50 characters, CI runners more) falls back to /tmp.
_MAX_SOCKET_PATH = 100
_FALLBACK_PARENT = "/tmp"
# Beside the socket, 0600: the socket's path and the run's token, for the hook client.
ADDRESS_FILE = "address"


class HookChannel:
    """Accepts hook payloads from this run's agent only; hands them to `on_event`.

    The socket lives in a fresh 0700 directory with an unguessable name, and every
    payload must start with this run's random token. Events from a session this run did
    not start are dropped (reported through `on_foreign`).
    """

    def __init__(
        self,
        on_event: Callable[[HookEvent], None],
        on_foreign: Callable[[str], object] = lambda reason: None,
        clock: Callable[[], float] = time.time,
        parent: str | None = None,
        run_id: str | None = None,
    ) -> None:
        self._on_event = on_event
        self._on_foreign = on_foreign
        self._clock = clock
        self._token = secrets.token_hex(16)
        name = f"hooks-{secrets.token_hex(8)}.sock"
        # Named after the run, so that a resume finds what a killed part left (remove_left).
        prefix = _prefix(run_id)
        self._dir = tempfile.mkdtemp(prefix=prefix, dir=parent)  # mkdtemp makes it 0700
        if len(os.path.join(self._dir, name).encode()) > _MAX_SOCKET_PATH:
            os.rmdir(self._dir)
            self._dir = tempfile.mkdtemp(prefix=prefix, dir=_FALLBACK_PARENT)
        self.path = os.path.join(self._dir, name)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._address = os.path.join(self._dir, ADDRESS_FILE)
        try:
            self._sock.bind(self.path)
            os.chmod(self.path, 0o600)
            self._sock.listen(16)
            _write_private(self._address, f"{self.path}\n{self._token}\n")
        except OSError:
            self._sock.close()
            shutil.rmtree(self._dir, ignore_errors=True)
            raise
        self._sessions: set[str] = set()
        self._pending: set[HookReply] = set()  # requests not answered yet
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._serve, name="ptysup-hooks", daemon=True)

    def __enter__(self) -> HookChannel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def command(self, wait: float | None = None) -> str:
        """The hook command line the agent runs (through its shell, so quoted).

        It names the address file, never the socket or the token: agents show and keep
        their hook commands (Gemini CLI 0.61 prints `Expanding hook command: …` at exit,
        into the terminal and the recording; aider writes its notifications command into
        its chat history), and only what is in the 0700 directory is the run's secret.
        With `wait` (seconds) the hook is a request: it waits that long for ptysup's reply
        and prints it for the agent.
        """
        argv = [sys.executable, "-I", "-S", str(HOOK_CLIENT), self._address]
        if wait is not None:
            argv.append(f"{wait:g}")
        return shlex.join(argv)

    def address(self) -> tuple[str, str]:
        """The socket's path and this run's token, for an agent's own client that speaks
        hook_client.py's protocol itself (opencode's plugin)."""
        return self.path, self._token

    def close(self) -> None:
        """Stop accepting, answer every waiting request with nothing, remove the directory."""
        if self._closed:
            return
        self._closed = True
        with self._lock:
            pending = list(self._pending)
        for reply in pending:
            reply.send("")  # never leave the agent waiting on a hook
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        self._thread.join(timeout=2)
        shutil.rmtree(self._dir, ignore_errors=True)

    def _serve(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            kept = False
            try:
                kept = self._take(conn)
            except Exception as exc:  # one bad payload must not end the channel
                self._on_foreign(f"hook payload dropped: {type(exc).__name__}: {exc}")
            finally:
                if not kept:
                    conn.close()

    def _take(self, conn: socket.socket) -> bool:
        """Read one payload and hand it on; True when `conn` waits for a reply."""
        conn.settimeout(5)
        chunks: list[bytes] = []
        try:
            while chunk := conn.recv(65536):
                chunks.append(chunk)
        except OSError:
            return False
        head, _, body = b"".join(chunks).partition(b"\n")
        token, _, mode = head.partition(b" ")
        if not hmac.compare_digest(token, self._token.encode()):
            self._on_foreign("hook payload without this run's token")
            return False
        try:
            payload: Any = json.loads(body)
        except (ValueError, RecursionError):
            self._on_foreign("hook payload is not JSON")
            return False
        if not isinstance(payload, dict):
            self._on_foreign("hook payload is not a JSON object")
            return False
        name = str(payload.get("hook_event_name", ""))
        if not name and isinstance(payload.get("cost"), dict):
            # Claude Code's statusLine command gets the same client, and a payload with
            # no event name; it may arrive before a new session's SessionStart.
            self._on_event(HookEvent(STATUS_LINE, payload, self._clock()))
        elif not self._belongs(payload):
            return False  # closing the connection: a waiting hook prints nothing
        elif mode == b"reply" and not self._closed:
            reply = HookReply(conn, self._forget)
            with self._lock:
                self._pending.add(reply)
            self._on_event(HookEvent(name, payload, self._clock(), reply))
            return True
        else:
            self._on_event(HookEvent(name, payload, self._clock()))
        with contextlib.suppress(OSError):
            conn.sendall(b"k")
        return False

    def _forget(self, reply: HookReply) -> None:
        with self._lock:
            self._pending.discard(reply)

    def _belongs(self, payload: dict[str, Any]) -> bool:
        session = str(payload.get("session_id", ""))
        # The agent announces each of its sessions (startup, /clear) with SessionStart;
        # before the first one, the first session seen is this run's.
        if payload.get("hook_event_name") == "SessionStart" or not self._sessions:
            self._sessions.add(session)
            return True
        if session in self._sessions:
            return True
        self._on_foreign(f"hook from unknown session {session!r}")
        return False


def _prefix(run_id: str | None) -> str:
    return f"ptysup-hooks-{run_id}-" if run_id else "ptysup-"


def _write_private(path: str, text: str) -> None:
    """Write TEXT to a new file at PATH that only this user can read."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


def remove_left(run_id: str, parents: tuple[str, ...] | None = None) -> list[str]:
    """Remove the hook directories earlier parts of run `run_id` left (a SIGKILL leaves
    its directory behind); the removed paths. Call it holding the run's lock: then no
    live process of this run uses one. Only this user's directories are touched."""
    removed = []
    for parent in parents or (tempfile.gettempdir(), _FALLBACK_PARENT):
        for path in sorted(Path(parent).glob(_prefix(run_id) + "*")):
            try:
                st = path.lstat()
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and str(path) not in removed:
                shutil.rmtree(path, ignore_errors=True)
                removed.append(str(path))
    return removed


class HookReply:
    """The open connection of a hook that waits: the first `send` answers and closes it.

    Safe from any thread; later sends are ignored (so a fallback reply on every way out
    never overrides a real answer).
    """

    def __init__(self, conn: socket.socket, done: Callable[[HookReply], None]) -> None:
        self._conn = conn
        self._done = done
        self._lock = threading.Lock()
        self.sent: str | None = None

    def send(self, text: str) -> bool:
        """Answer the hook with `text` (printed on its stdout); False if already answered
        or the hook is gone (it timed out, or the agent ended)."""
        with self._lock:
            if self.sent is not None:
                return False
            self.sent = text
        self._done(self)
        try:
            self._conn.settimeout(5)
            self._conn.sendall(b"k" + text.encode())
            return True
        except OSError:
            return False
        finally:
            self._conn.close()
