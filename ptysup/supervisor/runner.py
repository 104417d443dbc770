"""A fresh supervisor process per decision: prompt on stdin, timeout, process-group kill.

With a warm spare, the next decision's process is started ahead of time and waits on its
stdin: `claude -p` spends ~0.6 s booting before it reads its prompt, most of a decision's
latency on a fast model. A spare is still a fresh process, used once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import selectors
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ptysup.agents.waits import is_fatal_error
from ptysup.procutil import dies_with, kill_group
from ptysup.supervisor.judge import wants_json, with_system_prompt
from ptysup.supervisor.judgedir import JudgeDir
from ptysup.terminal.inject import clean

MAX_OUTPUT = 1 << 20  # bytes of supervisor stdout kept; the rest is counted and dropped
# A spare older than this is replaced rather than used: its session state (the date in
# Claude Code's context, a refreshed login) may have gone stale.
MAX_SPARE_AGE = 600.0
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
    warm: bool = False  # answered by a spare started ahead of time
    tokens: Mapping[str, int] = field(default_factory=dict)  # input, cached, output…


@dataclass
class _Spare:
    """A supervisor process started ahead of time, waiting on its stdin."""

    proc: subprocess.Popen[bytes]
    argv: tuple[str, ...]
    started: float


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
        warm: bool = False,
        max_spare_age: float = MAX_SPARE_AGE,
        prelude: str = "",
    ) -> None:
        self.argv = list(argv)
        self.json_output = wants_json(self.argv)
        if self.json_output:
            self.argv += ["--output-format", "json"]
        self._timeout = timeout
        self._cwd = cwd
        self._env = dict(env) if env is not None else None
        self._clock = clock
        self._warm = warm
        self._max_spare_age = max_spare_age
        # What every prompt starts with: written to a spare as soon as it starts. Claude
        # Code (2.1.197) gives up on a stdin that sends nothing for 3 s ("no stdin data
        # received in 3s, proceeding without it") and exits 1; after a first byte it reads
        # to the end, however long that takes.
        self._prelude = prelude.encode()
        self._proc: subprocess.Popen[bytes] | None = None
        self._spare: _Spare | None = None
        # A private 0700 dir: the system prompt files, and each supervisor's temp dir.
        self._private: JudgeDir | None = None
        self._temps: dict[int, str] = {}  # pid -> that process's temp dir
        self._lock = threading.Lock()
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        """Kill a running supervisor and the spare (with children); later calls fail at once."""
        self._cancelled.set()
        with self._lock:
            if self._proc is not None:
                kill_group(self._proc.pid)
        self._drop_spare()

    def close(self) -> None:
        """Kill the spare and remove the private dir (the run is over)."""
        self._drop_spare()
        if self._private is not None:
            self._private.close()
            self._private = None

    def prepare(self, system: str | None = None) -> None:
        """Start the spare for the next decision (with warm spares on), unless one is ready.

        Call it from the thread that will run the decisions: on Linux the spare is killed
        when the thread that started it ends (PR_SET_PDEATHSIG follows the parent thread).
        """
        if not self._warm or self._cancelled.is_set():
            return
        argv = self.command(system)
        with self._lock:
            spare = self._spare
            if spare is not None and self._usable(spare, argv):
                return
            self._spare = None
        if spare is not None:
            self._reap(spare.proc)
        try:
            proc = self._spawn(argv)
        except OSError:
            return  # the decision itself will report it
        if self._prelude:
            assert proc.stdin is not None
            try:
                proc.stdin.write(self._prelude)  # far less than a pipe holds: never blocks
                proc.stdin.flush()
            except OSError:  # it died at once: the decision starts a process of its own
                self._reap(proc)
                return
        with self._lock:
            self._spare = _Spare(proc, tuple(argv), self._clock())

    @property
    def spare_pid(self) -> int | None:
        """The waiting spare's pid, if there is one (for the bench and tests)."""
        with self._lock:
            return self._spare.proc.pid if self._spare is not None else None

    def command(self, system: str | None = None) -> list[str]:
        """The command line of one decision; `system` goes in as the system prompt."""
        if system is None:
            return list(self.argv)
        return with_system_prompt(self.argv, self._system_file(system))

    def end_current(self) -> None:
        """Kill the running supervisor, if any (that run fails); later runs go on."""
        with self._lock:
            if self._proc is not None:
                kill_group(self._proc.pid)

    @property
    def cancelled(self) -> threading.Event:
        """Set once cancel() was called."""
        return self._cancelled

    def run(self, prompt: str, timeout: float | None = None, system: str | None = None) -> Answer:
        """Run one supervisor process and return its answer, or raise SupervisorError.

        `timeout` shortens the configured time-out (what is left of the time budget);
        `system` is passed as the system prompt (a lean Claude Code judge).
        """
        limit = self._timeout if timeout is None else min(self._timeout, timeout)
        if self._cancelled.is_set():
            raise SupervisorError("cancelled")
        argv = self.command(system)
        data = prompt.encode()
        proc = self._take_spare(argv, data)
        warm = proc is not None
        if warm:
            data = data[len(self._prelude) :]  # the spare has had the start
        if proc is None:
            try:
                proc = self._spawn(argv)
            except OSError as exc:
                raise SupervisorError(f"cannot start {argv[0]}: {exc.strerror or exc}") from exc
        start = self._clock()  # a spare's time-out counts from the prompt
        with self._lock:
            self._proc = proc
        try:
            out, err, out_bytes = _exchange(proc, data, start + limit, self._clock)
        finally:
            self._reap(proc)
            with self._lock:
                self._proc = None
            self.prepare(system)  # the next decision's spare boots while the agent works
        duration = self._clock() - start
        if self._cancelled.is_set():
            raise SupervisorError("cancelled")
        if out is None:
            raise SupervisorError(f"timed out after {limit:.0f}s")
        answer = self._answer(out, err, proc.returncode, duration, out_bytes)
        return dataclasses.replace(answer, warm=warm)

    def _spawn(self, argv: Sequence[str]) -> subprocess.Popen[bytes]:
        """Start one supervisor with a temp dir of its own, removed when it is reaped:
        `opencode run` (1.18) unpacks a 5.6 MB library into the temp dir at each call
        and leaves it there."""
        temp = tempfile.mkdtemp(dir=self._private_dir())
        env = {**(os.environ if self._env is None else self._env), "TMPDIR": temp}
        try:
            proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self._cwd,
                env=env,
                start_new_session=True,  # its own process group, killed as a whole
                preexec_fn=dies_with(os.getpid()),
            )
        except BaseException:
            shutil.rmtree(temp, ignore_errors=True)
            raise
        with self._lock:
            self._temps[proc.pid] = temp
        return proc

    def _reap(self, proc: subprocess.Popen[bytes]) -> None:
        """Kill and wait for a supervisor, then remove its temp dir."""
        _reap(proc)
        with self._lock:
            temp = self._temps.pop(proc.pid, None)
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)

    def _private_dir(self) -> str:
        if self._private is None:
            self._private = JudgeDir()  # 0700, held until close (judgedir.py)
        return self._private.path

    def _usable(self, spare: _Spare, argv: Sequence[str]) -> bool:
        """Started with this command line, still waiting, and not too old."""
        return (
            spare.argv == tuple(argv)
            and spare.proc.poll() is None
            and self._clock() - spare.started < self._max_spare_age
        )

    def _take_spare(self, argv: Sequence[str], prompt: bytes) -> subprocess.Popen[bytes] | None:
        with self._lock:
            spare, self._spare = self._spare, None
        if spare is None:
            return None
        if self._usable(spare, argv) and prompt.startswith(self._prelude):
            return spare.proc
        self._reap(spare.proc)  # other options, exited, or stale: a fresh process instead
        return None

    def _drop_spare(self) -> None:
        with self._lock:
            spare, self._spare = self._spare, None
        if spare is not None:
            self._reap(spare.proc)

    def _system_file(self, system: str) -> str:
        """A 0600 file holding `system`, named by its content (so a change is a new
        command line, which replaces the spare)."""
        data = system.encode()
        path = os.path.join(self._private_dir(), hashlib.sha256(data).hexdigest()[:16] + ".md")
        if not os.path.exists(path):
            fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(path + ".tmp", path)
        return path

    def _answer(self, out: bytes, err: bytes, code: int, duration: float, out_bytes: int) -> Answer:
        truncated = out_bytes > len(out)
        try:
            text = _decode(out, truncated)
        except SupervisorError:
            if code != 0:  # a failing command's garbage: the exit status says more
                raise SupervisorError(_exited(code, err.decode(errors="replace"))) from None
            raise
        cost: float | None = None
        tokens: dict[str, int] = {}
        status: int | None = None
        if self.json_output:
            text, cost, is_error, status, tokens = _from_json(text)
            if is_error:
                raise SupervisorError(
                    f"supervisor reported an error: {_first_line(text)}",
                    fatal=is_fatal_error(text, status),
                )
        if text.lstrip().startswith("API Error"):
            raise SupervisorError(_first_line(text), fatal=is_fatal_error(text))
        if code != 0:
            detail = _first_line(text) or _first_line(err.decode(errors="replace"))
            raise SupervisorError(_exited(code, detail), fatal=is_fatal_error(detail))
        if not clean(text).strip():  # nothing but blanks, controls and escape sequences
            raise SupervisorError("empty answer")
        return Answer(text, duration, cost, truncated, out_bytes, tokens=tokens)


# Claude Code's `usage` keys, as the decision event names them.
_TOKENS = {
    "input_tokens": "input",
    "cache_read_input_tokens": "cached",
    "cache_creation_input_tokens": "cache_write",
    "output_tokens": "output",
}


def _from_json(text: str) -> tuple[str, float | None, bool, int | None, dict[str, int]]:
    """(result, cost, is_error, api_error_status, tokens) of Claude Code's JSON output."""
    try:
        obj = json.loads(text)
    except ValueError:
        return text, None, False, None, {}
    if not isinstance(obj, dict):
        return text, None, False, None, {}
    cost = obj.get("total_cost_usd")
    status = obj.get("api_error_status")
    return (
        str(obj.get("result") or ""),
        float(cost) if isinstance(cost, (int, float)) else None,
        bool(obj.get("is_error")),
        status if isinstance(status, int) else None,
        _tokens(obj.get("usage")),
    )


def _tokens(usage: Any) -> dict[str, int]:
    if not isinstance(usage, dict):
        return {}
    return {
        name: int(usage[key])
        for key, name in _TOKENS.items()
        if isinstance(usage.get(key), int) and not isinstance(usage.get(key), bool)
    }


def _reap(proc: subprocess.Popen[bytes]) -> None:
    """Kill a supervisor's process group, wait for it, close its pipes."""
    kill_group(proc.pid)
    proc.wait()
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


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


def _exited(code: int, detail: str) -> str:
    """`exit status N: what it said`, or just the status when it said nothing."""
    said = _first_line(detail)
    return f"exit status {code}: {said}" if said else f"exit status {code}"


def _first_line(text: str) -> str:
    """The first non-blank line, cleaned of controls (it is logged and printed), cut short;
    for a Python traceback its last line, the one that names the error."""
    lines = [line.strip() for line in clean(text).splitlines() if line.strip()]
    if not lines:
        return ""
    if lines[0].startswith("Traceback (most recent call last)"):
        return lines[-1][:300]
    return lines[0][:300]


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
