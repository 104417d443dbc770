"""Notifications: tell someone when a run needs a person or ends.

One interface (`Channel.send(note)`), three channels: the person's terminal (bell and a
desktop notification by OSC 9 / OSC 777), `--notify CMD` (the note as one JSON object on
its stdin) and `--notify-url URL` (through the optional `apprise` library). The Notifier
is an event sink: it picks the events `--notify-on` asks for and hands them to a worker
thread, so a slow or hanging channel never holds up the relay or the run loop.
"""

from __future__ import annotations

import json
import os
import queue
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from ptysup.config import DEFAULT_NOTIFY_ON
from ptysup.events import Event, person_action_text
from ptysup.procutil import dies_with, kill_group
from ptysup.values import duration_text

NOTIFY_TIMEOUT_S = 10.0  # the most one channel may take for one notification
# What --notify-on accepts: event names, plus `person` (a question left to a person, or
# a dialog that stalled the turn because no one answered it).
KINDS = (
    "escalation",
    "person",
    "person_action",
    "run_end",
    "question",
    "answer",
    "decision",
    "warning",
    "error",
)
DEFAULT_ON = DEFAULT_NOTIFY_ON
_SOURCE = "notify"  # marks the notifier's own warnings, which never notify again


class NotifyError(Exception):
    """A channel could not deliver; the message is one line."""


class Channel(Protocol):
    """Somewhere a notification goes."""

    name: str

    def send(self, note: Mapping[str, Any]) -> None:
        """Deliver `note` or raise NotifyError."""
        ...


def parse_kinds(values: Sequence[str]) -> tuple[str, ...]:
    """--notify-on values (repeatable or comma-separated) → kinds; ValueError if unknown."""
    kinds = [k.strip() for v in values for k in v.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"unknown event {unknown[0]!r} (choose from {', '.join(KINDS)})")
    return tuple(dict.fromkeys(kinds))


def kind_of(event: Event) -> str | None:
    """The notification kind of an event, or None."""
    f = event.fields
    if event.event == "question":
        return "person" if f.get("to") == "person" else "question"
    if event.event == "turn_end":
        return "person" if f.get("dialog") else None
    if event.event == "warning" and f.get("source") == _SOURCE:
        return None
    return event.event if event.event in KINDS else None


def message(kind: str, event: Event) -> str:
    """One line a person reads on their phone."""
    f = event.fields
    if kind == "escalation" and f.get("answer_with"):
        return (
            f"waiting for you: {f.get('reason', '')} · answer within "
            f"{duration_text(float(f.get('wait_s') or 0))}: {f['answer_with']}"
            + (f" or {f['page']}" if f.get("page") else "")
        )
    if kind == "escalation":
        return f"waiting for you: {f.get('reason', '')}"
    if kind == "person_action":
        return f"a person steers the run: {person_action_text(f)}"
    if event.event == "question":
        asked = "; ".join(str(q.get("question", "")) for q in f.get("questions") or ())
        return f"the agent asks: {asked}"
    if kind == "person":
        return "a dialog is open and no one answered it"
    if event.event == "answer":
        answers = f.get("answers") or {}
        return f"answered by {f.get('by')}: " + "; ".join(f"{q} → {a}" for q, a in answers.items())
    if kind == "run_end":
        return f"run ended: {f.get('outcome')} (exit {f.get('exit_code')}): {f.get('reason', '')}"
    return str(f.get("message") or f.get("content") or f.get("reason") or event.event)


class CommandChannel:
    """`--notify CMD`: run it (never through a shell) with the note as JSON on stdin."""

    def __init__(
        self,
        argv: Sequence[str],
        cwd: str,
        env: Mapping[str, str],
        timeout: float = NOTIFY_TIMEOUT_S,
    ) -> None:
        self.argv = tuple(argv)
        self.name = shlex.join(self.argv)
        self._cwd, self._env, self._timeout = cwd, dict(env), timeout

    def send(self, note: Mapping[str, Any]) -> None:
        data = (json.dumps(note, ensure_ascii=False) + "\n").encode()
        try:
            proc = subprocess.Popen(
                self.argv,
                cwd=self._cwd,
                env=self._env,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,  # a time-out kills its whole group
                preexec_fn=dies_with(os.getpid()),
            )
        except OSError as exc:
            raise NotifyError(f"cannot start: {exc.strerror or exc}") from None
        try:
            _, err = proc.communicate(data, timeout=self._timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc.pid)
            proc.communicate()
            raise NotifyError(f"timed out after {self._timeout:g}s") from None
        if proc.returncode != 0:
            tail = " ".join(err.decode(errors="replace").split())[-300:]
            raise NotifyError(f"exited {proc.returncode}" + (f": {tail}" if tail else ""))


class UrlChannel:
    """`--notify-url URL`: ntfy, Slack, Telegram, Discord, e-mail… through apprise."""

    def __init__(self, urls: Sequence[str], timeout: float = NOTIFY_TIMEOUT_S) -> None:
        import apprise  # the optional extra: checked by `available()` before a run

        self.name = "--notify-url"
        self._apprise = apprise.Apprise()
        # Each URL's own time-out (`?cto=…&rto=…`) bounds it; ours is the default.
        for url in urls:
            sep = "&" if "?" in url else "?"
            if not self._apprise.add(f"{url}{sep}cto={timeout:g}&rto={timeout:g}"):
                raise ValueError(f"--notify-url: not a notification URL apprise knows: {url}")

    @staticmethod
    def available() -> bool:
        """Whether the optional apprise library is installed."""
        try:
            import apprise  # noqa: F401
        except ImportError:
            return False
        return True

    def send(self, note: Mapping[str, Any]) -> None:
        title = f"ptysup: {note.get('kind')}"
        if not self._apprise.notify(body=str(note.get("message", "")), title=title):
            raise NotifyError("apprise could not deliver to every URL")


class TerminalChannel:
    """The person's terminal: the bell and a desktop notification (OSC 9 and OSC 777).

    `alert` must write the bytes where they cannot split the agent's escape sequences
    (the status line does, between the agent's sequences).
    """

    name = "terminal"

    def __init__(self, alert: Callable[[bytes], None], wake: Callable[[], None]) -> None:
        self._alert = alert
        self._wake = wake  # the relay draws at once, even while the agent is quiet

    def send(self, note: Mapping[str, Any]) -> None:
        text = " ".join(str(note.get("message", "")).split())[:200]
        text = "".join(c for c in text if c.isprintable() and c not in "\x1b\x07;")
        body = text.encode()
        self._alert(b"\x07\x1b]9;ptysup: " + body + b"\x07\x1b]777;notify;ptysup;" + body + b"\x07")
        self._wake()


class _Lane:
    """One channel's own thread and queue: a slow channel holds up only itself."""

    def __init__(self, channel: Channel, failed: Callable[[Channel, Exception], None]) -> None:
        self.channel = channel
        self._failed = failed
        self._queue: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._pending = 0  # notes queued and not yet sent (or failed)
        self._thread = threading.Thread(
            target=self._work, name=f"ptysup-notify-{channel.name}", daemon=True
        )
        self._thread.start()

    @property
    def pending(self) -> int:
        with self._lock:
            return self._pending

    def put(self, note: dict[str, Any] | None) -> None:
        if note is not None:
            with self._lock:
                self._pending += 1
        self._queue.put(note)

    def join(self, timeout: float) -> None:
        self._thread.join(max(0.0, timeout))

    def _work(self) -> None:
        while (note := self._queue.get()) is not None:
            try:
                self.channel.send(note)
            except Exception as exc:  # any channel's failure is a warning, never fatal
                self._failed(self.channel, exc)
            finally:
                with self._lock:
                    self._pending -= 1


class Notifier:
    """An event sink that sends the chosen events to every channel, off the caller's thread,
    each channel on a thread of its own.

    A failing channel is a `warning` event (on stderr once the run has ended, since the
    event log ends with run_end). Closing waits a bounded time for what is queued, so the
    run's end still gets out; a channel still busy then is said on stderr.
    """

    def __init__(
        self,
        channels: Sequence[Channel],
        kinds: Sequence[str],
        warn: Callable[[str], object],
        timeout: float = NOTIFY_TIMEOUT_S,
    ) -> None:
        self._kinds = set(kinds)
        self._warn = warn
        self._timeout = timeout
        self._run: dict[str, Any] = {}
        self._ended = False
        self._lanes = [_Lane(c, self._failed) for c in channels]

    def add(self, channel: Channel) -> None:
        """Add a channel (the terminal, once the status line exists)."""
        self._lanes.append(_Lane(channel, self._failed))

    def write(self, event: Event) -> None:
        if event.event in ("run_start", "run_resume"):
            self._run = {k: event.fields.get(k) for k in ("run_id", "task")}
        if event.event == "run_end":
            self._ended = True
        kind = kind_of(event)
        if kind is None or kind not in self._kinds or not self._lanes:
            return
        # `kind` and `message` last: a turn_end's own `kind` field must not hide ours.
        note = {**self._run, **event.to_json(), "kind": kind, "message": message(kind, event)}
        for lane in list(self._lanes):  # add() may run meanwhile
            lane.put(note)

    def close(self) -> None:
        self._ended = True
        for lane in self._lanes:
            lane.put(None)
        deadline = time.monotonic() + self._timeout + 2
        for lane in self._lanes:
            lane.join(deadline - time.monotonic())
        for lane in self._lanes:
            if lane.pending:
                print(
                    f"ptysup: notification via {lane.channel.name}: {lane.pending} not sent "
                    f"(the channel was still busy when ptysup exited)",
                    file=sys.stderr,
                )

    def _failed(self, channel: Channel, exc: Exception) -> None:
        text = f"notification via {channel.name} failed: {exc}"
        if self._ended:
            print(f"ptysup: {text}", file=sys.stderr)
        else:
            self._warn(text)


def notifier(
    commands: Sequence[Sequence[str]],
    urls: Sequence[str],
    kinds: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    warn: Callable[[str], object],
) -> Notifier:
    """The run's notifier with the configured channels (the terminal is added later). A
    command that is not there is left out: the run's preflight reports it, once."""
    path = env.get("PATH", os.defpath)
    channels: list[Channel] = [
        CommandChannel(c, cwd, env) for c in commands if shutil.which(c[0], path=path)
    ]
    if urls:
        channels.append(UrlChannel(urls))
    return Notifier(channels, kinds, warn)


def warning_fields(text: str) -> dict[str, str]:
    """The fields of a notifier warning event (so it is never notified itself)."""
    return {"message": text, "source": _SOURCE}
