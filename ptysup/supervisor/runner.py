"""A fresh supervisor process per decision: prompt on stdin, timeout, process-group kill."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ptysup.procutil import dies_with, kill_group
from ptysup.terminal.inject import clean
from ptysup.waits import is_fatal_error

# What a `claude` supervisor may do unless its command says otherwise: read and search the
# project (a judge, not a second agent). `claude -p` denies any tool it was not given
# without asking; running the project's checks is --verify's job.
READ_ONLY_TOOLS = ("Read", "Grep", "Glob")
_TOOL_OPTIONS = (
    "--tools",
    "--allowedTools",
    "--allowed-tools",
    "--disallowedTools",
    "--disallowed-tools",
    "--dangerously-skip-permissions",
    "--permission-mode",
)
MAX_OUTPUT = 1 << 20  # bytes of supervisor stdout kept; the rest is counted and dropped
_UTF8_MAX = 4  # bytes in one UTF-8 character: the cut at MAX_OUTPUT may split the last


class SupervisorError(Exception):
    """One supervisor attempt failed (timeout, exit status, spawn error, API error).

    `fatal`: an authentication or configuration error that every retry would repeat.
    """

    def __init__(self, message: str, *, fatal: bool = False) -> None:
        super().__init__(message)
        self.fatal = fatal


@dataclass(frozen=True)
class Answer:
    """What one supervisor process answered."""

    text: str
    duration_s: float
    cost_usd: float | None = None
    truncated: bool = False  # stdout went past MAX_OUTPUT; `text` is its first part
    out_bytes: int = 0  # bytes the supervisor printed on stdout, kept or not


class SupervisorRunner:
    """Runs `argv` once per call, never through a shell, and can be cancelled from any thread."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.argv = list(argv)
        self.json_output = _wants_json(self.argv)
        if self.json_output:
            self.argv += ["--output-format", "json"]
        if _is_claude(self.argv) and not any(a.startswith(_TOOL_OPTIONS) for a in self.argv):
            self.argv += ["--tools", ",".join(READ_ONLY_TOOLS)]
        self._timeout = timeout
        self._cwd = cwd
        self._env = dict(env) if env is not None else None
        self._clock = clock
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        """Kill a running supervisor (and its children); later calls fail at once."""
        self._cancelled.set()
        with self._lock:
            if self._proc is not None:
                kill_group(self._proc.pid)

    @property
    def cancelled(self) -> threading.Event:
        """Set once cancel() was called."""
        return self._cancelled

    def run(self, prompt: str, timeout: float | None = None) -> Answer:
        """Run one supervisor process and return its answer, or raise SupervisorError.

        `timeout` shortens the configured time-out (what is left of the time budget).
        """
        limit = self._timeout if timeout is None else min(self._timeout, timeout)
        if self._cancelled.is_set():
            raise SupervisorError("cancelled")
        start = self._clock()
        try:
            proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self._cwd,
                env=self._env,
                start_new_session=True,  # its own process group, killed as a whole
                preexec_fn=dies_with(os.getpid()),
            )
        except OSError as exc:
            raise SupervisorError(f"cannot start {self.argv[0]}: {exc.strerror or exc}") from exc
        with self._lock:
            self._proc = proc
        try:
            out, err, out_bytes = _exchange(proc, prompt.encode(), start + limit, self._clock)
        finally:
            kill_group(proc.pid)
            proc.wait()
            with self._lock:
                self._proc = None
        duration = self._clock() - start
        if self._cancelled.is_set():
            raise SupervisorError("cancelled")
        if out is None:
            raise SupervisorError(f"timed out after {limit:.0f}s")
        return self._answer(out, err, proc.returncode, duration, out_bytes)

    def _answer(self, out: bytes, err: bytes, code: int, duration: float, out_bytes: int) -> Answer:
        truncated = out_bytes > len(out)
        try:
            text = _decode(out, truncated)
        except SupervisorError:
            if code != 0:  # a failing command's garbage: the exit status says more
                raise SupervisorError(
                    f"exit status {code}: {_first_line(err.decode(errors='replace'))}"
                ) from None
            raise
        cost: float | None = None
        status: int | None = None
        if self.json_output:
            text, cost, is_error, status = _from_json(text)
            if is_error:
                raise SupervisorError(
                    f"supervisor reported an error: {_first_line(text)}",
                    fatal=is_fatal_error(text, status),
                )
        if text.lstrip().startswith("API Error"):
            raise SupervisorError(_first_line(text), fatal=is_fatal_error(text))
        if code != 0:
            detail = _first_line(text) or _first_line(err.decode(errors="replace"))
            raise SupervisorError(f"exit status {code}: {detail}", fatal=is_fatal_error(detail))
        if not clean(text).strip():  # nothing but blanks, controls and escape sequences
            raise SupervisorError("empty answer")
        return Answer(text, duration, cost, truncated, out_bytes)


def _is_claude(argv: Sequence[str]) -> bool:
    return bool(argv) and os.path.basename(argv[0]) == "claude"


def _wants_json(argv: Sequence[str]) -> bool:
    """Claude Code reports cost and errors in JSON; ask for it unless a format is given."""
    return _is_claude(argv) and not any(a.startswith("--output-format") for a in argv)


def _from_json(text: str) -> tuple[str, float | None, bool, int | None]:
    """(result, cost, is_error, api_error_status) of Claude Code's JSON output."""
    try:
        obj = json.loads(text)
    except ValueError:
        return text, None, False, None
    if not isinstance(obj, dict):
        return text, None, False, None
    cost = obj.get("total_cost_usd")
    status = obj.get("api_error_status")
    return (
        str(obj.get("result") or ""),
        float(cost) if isinstance(cost, (int, float)) else None,
        bool(obj.get("is_error")),
        status if isinstance(status, int) else None,
    )


def _decode(out: bytes, truncated: bool) -> str:
    """stdout as text; SupervisorError if it is not text (invalid UTF-8 or NUL bytes).

    A model's answer is UTF-8 text: bytes that are not are a broken supervisor command,
    a failed attempt, never something to type into the agent.
    """
    try:
        text = out.decode("utf-8")
    except UnicodeDecodeError as exc:
        # The cut at MAX_OUTPUT may split the last character: drop that piece only.
        if not (truncated and exc.end == len(out) and exc.start >= len(out) - _UTF8_MAX + 1):
            raise SupervisorError(
                f"answer is not UTF-8 text (invalid byte at offset {exc.start})"
            ) from None
        text = out[: exc.start].decode("utf-8", errors="replace")
    nul = text.find("\0")
    if nul >= 0:
        raise SupervisorError(f"answer is not text (NUL byte at offset {nul})")
    return text


def _first_line(text: str) -> str:
    """The first non-blank line, cleaned of controls (it is logged and printed), cut short."""
    for line in clean(text).splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


def _exchange(
    proc: subprocess.Popen[bytes], data: bytes, deadline: float, clock: Callable[[], float]
) -> tuple[bytes | None, bytes, int]:
    """Write stdin, read stdout/stderr (each capped at MAX_OUTPUT) until EOF.

    Returns (stdout kept, stderr kept, stdout bytes read in all); stdout is None on time-out.
    """
    assert proc.stdin and proc.stdout and proc.stderr
    out, err = bytearray(), bytearray()
    out_bytes = 0
    view = memoryview(data)
    with selectors.DefaultSelector() as sel:
        os.set_blocking(proc.stdin.fileno(), False)
        sel.register(proc.stdin, selectors.EVENT_WRITE)
        sel.register(proc.stdout, selectors.EVENT_READ, out)
        sel.register(proc.stderr, selectors.EVENT_READ, err)
        if not view:
            sel.unregister(proc.stdin)
            proc.stdin.close()
        while len(sel.get_map()) > 0:
            remaining = deadline - clock()
            if remaining <= 0:
                return None, bytes(err), out_bytes
            for key, _ in sel.select(remaining):
                if key.fileobj is proc.stdin:
                    try:
                        view = view[os.write(proc.stdin.fileno(), view[:65536]) :]
                    except BrokenPipeError:
                        view = view[:0]
                    if not view:
                        sel.unregister(proc.stdin)
                        proc.stdin.close()
                    continue
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                buf: bytearray = key.data
                if buf is out:
                    out_bytes += len(chunk)
                buf += chunk[: max(MAX_OUTPUT - len(buf), 0)]
    return bytes(out), bytes(err), out_bytes
