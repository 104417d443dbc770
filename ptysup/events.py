"""Events: one JSON object per step of a run, to a JSONL file and as readable lines."""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from ptysup.terminal.inject import clean


@dataclass(frozen=True)
class Event:
    """One thing that happened: `event` names it, `fields` carry its data."""

    event: str
    ts: float
    fields: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The event as the JSON object written to the log."""
        return {"ts": round(self.ts, 3), "event": self.event, **self.fields}


class Sink(Protocol):
    def write(self, event: Event) -> None: ...

    def close(self) -> None: ...


class EventLog:
    """Fans events out to sinks; safe to call from any thread; redacts first."""

    def __init__(
        self,
        sinks: Iterable[Sink] = (),
        clock: Callable[[], float] = time.time,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self._sinks = list(sinks)
        self._clock = clock
        self._redact = redact
        self._lock = threading.Lock()
        self.last: Event | None = None
        self.errors: list[OSError] = []  # sink writes that failed (e.g. a full disk)
        self._watchers: list[Callable[[OSError], None]] = []
        self._told = False  # the watchers heard of the first failure

    def add(self, sink: Sink) -> None:
        """Add a sink (e.g. once the log file is open)."""
        with self._lock:
            self._sinks.append(sink)

    def redacted(self, text: str) -> str:
        """`text` as this log records it. A screen is redacted whole before a part of it
        is taken: a secret that goes on from one line to the next, or that the cut splits,
        would not be seen in the part."""
        return text if self._redact is None else self._redact(text)

    def on_failure(self, watcher: Callable[[OSError], None]) -> None:
        """Call `watcher` with the first write that fails (from the thread that emitted):
        what the log could not hold must be said, and the run must not end as a success."""
        with self._lock:
            self._watchers.append(watcher)
            err = self.errors[0] if self._told else None
        if err is not None:  # it failed before this watcher came: it hears of it now
            watcher(err)

    @property
    def failed(self) -> OSError | None:
        """The first write that failed, if one did."""
        with self._lock:
            return self.errors[0] if self.errors else None

    def emit(self, event: str, **fields: Any) -> Event:
        """Record one event in every sink, flushed before this returns."""
        if self._redact is not None:
            fields = _redact_values(fields, self._redact)
        ev = Event(event, self._clock(), fields)
        with self._lock:
            self.last = ev
            for sink in self._sinks:
                try:
                    sink.write(ev)
                except OSError as exc:  # the other sinks still get the event
                    self.errors.append(exc)
            journals = [sink for sink in self._sinks if isinstance(sink, JsonlSink)]
        for journal in journals:  # outside the lock: an fsync holds up no other emitter
            try:
                journal.sync()
            except OSError as exc:
                with self._lock:
                    self.errors.append(exc)
        self._tell()
        return ev

    def close(self) -> None:
        """Close every sink."""
        with self._lock:
            for sink in self._sinks:
                try:
                    sink.close()
                except OSError as exc:  # the last flush of a full disk
                    self.errors.append(exc)
            self._sinks.clear()
        self._tell()

    def _tell(self) -> None:
        """The watchers hear of the first failure once, outside the lock (they may emit)."""
        with self._lock:
            if self._told or not self.errors:
                return
            self._told = True
            err, watchers = self.errors[0], list(self._watchers)
        for watcher in watchers:
            watcher(err)


class Learner:
    """A sink that folds each event into what it knows (`learn`); `replay` feeds it the
    events of an earlier part of the run, read back from its log."""

    def write(self, event: Event) -> None:
        self.learn(event.event, event.fields)

    def close(self) -> None:
        pass

    def replay(self, events: Iterable[Mapping[str, Any]]) -> None:
        """Learn from events read back from a log (JSON objects)."""
        for e in events:
            self.learn(str(e.get("event")), e)

    def learn(self, name: str, fields: Mapping[str, Any]) -> None:
        """Take one event in."""
        raise NotImplementedError


def failure_text(err: OSError) -> str:
    """`cannot write PATH: REASON` for a write that failed."""
    where = f" {err.filename}" if err.filename else ""
    return f"cannot write{where}: {err.strerror or err}"


def _redact_values(value: Any, redact: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _redact_values(v, redact) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redact_values(v, redact) for v in value]
    return value


# The events after which the log is fsynced (see ptysup.store.durable): the run's start, each
# decision and what carries one out for good, its end. Everything between is written
# through at once and reaches the disk with the next of these.
SYNC_AT = frozenset(
    {"run_start", "run_resume", "decision", "decision_resumed", "step_end", "escalation", "run_end"}
)


class JsonlSink:
    """Appends one JSON line per event, written through at once; the file is made 0600.

    Every line starts on a fresh line: a log whose last line was cut (a kill mid-write, a
    full disk) gets a newline first, so the cut line stays alone and the next event is
    whole JSON. A failed write raises OSError naming the file.

    After an event of `sync_at` the file is due an fsync, which the EventLog asks for
    (`sync`) once it has let go of its lock, so no other thread waits on the disk; a new
    file's name is made durable at once, and the file at `close`.
    """

    def __init__(
        self,
        path: Path,
        sync_at: frozenset[str] = SYNC_AT,
        fsync: Callable[[int], None] = os.fsync,
    ) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)  # the run made it, durably
        made = not path.exists()
        # Read as well as append: the last byte says whether the file ends on a fresh line.
        self._fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        self.path = path
        self._fresh: bool | None = None  # None: not known (at the start, after a failure)
        # A pipe or a terminal (--log-file /dev/stdout) has nothing to fsync.
        self._regular = stat.S_ISREG(os.fstat(self._fd).st_mode)
        self._sync_at = sync_at if self._regular else frozenset()
        self._fsync = fsync
        self._lock = threading.Lock()  # sync() comes from outside the EventLog's lock
        self._due = False  # an event of sync_at was written, not yet fsynced
        self._unsynced = False  # anything was written since the last fsync
        if made and self._regular:  # its name is on disk once its folder is
            folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
            try:
                fsync(folder)
            finally:
                os.close(folder)

    def write(self, event: Event) -> None:
        line = json.dumps(event.to_json(), ensure_ascii=False) + "\n"
        # A lone surrogate (JSON's "\ud83d" in a hook payload, a non-UTF-8 command line)
        # cannot be encoded; written as its JSON escape, the line stays valid JSON.
        data = line.encode("utf-8", errors="backslashreplace")
        try:
            if not self._ends_fresh():
                data = b"\n" + data
            view = memoryview(data)
            while view:
                self._fresh = None  # a write cut short leaves a cut line
                view = view[os.write(self._fd, view) :]
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, str(self.path)) from exc
        self._fresh = True
        with self._lock:
            self._unsynced = self._regular
            self._due = self._due or event.event in self._sync_at

    def sync(self) -> None:
        """fsync the file if an event of `sync_at` was written since the last one."""
        with self._lock:
            if self._due:
                self._sync()

    def _sync(self) -> None:
        self._due = self._unsynced = False
        if self._fd < 0:
            return
        try:
            self._fsync(self._fd)
        except OSError as exc:  # the disk lost what was written: a failed write
            raise OSError(exc.errno, exc.strerror, str(self.path)) from exc

    def _ends_fresh(self) -> bool:
        if self._fresh is None:
            st = os.fstat(self._fd)
            # Not a file (a pipe, a terminal): there is no last byte to read back.
            self._fresh = (
                not stat.S_ISREG(st.st_mode)
                or st.st_size == 0
                or os.pread(self._fd, 1, st.st_size - 1) == b"\n"
            )
        return self._fresh

    def close(self) -> None:
        with self._lock:
            if self._fd < 0:
                return
            try:
                if self._unsynced:
                    self._sync()
            finally:
                fd, self._fd = self._fd, -1
                os.close(fd)


class ConsoleSink:
    """Prints events for a person or a CI log: readable lines, or JSON lines."""

    def __init__(self, stream: IO[str], fmt: str = "text", skip: Iterable[str] = ()) -> None:
        self._stream = stream
        self._fmt = fmt
        self._skip = frozenset(skip)  # events another sink prints (GitHub's ::notice::)

    def write(self, event: Event) -> None:
        if event.event in self._skip:
            return
        if self._fmt == "json":
            line = json.dumps(event.to_json(), ensure_ascii=False)
        else:
            line = format_line(event)
        try:
            self._stream.write(line + "\n")
            self._stream.flush()
        except (BrokenPipeError, ValueError):
            pass  # the reader went away; the JSONL file still has everything

    def close(self) -> None:
        pass


# A value shown on one line (in the CI log, the decision on the status line) is cut to
# this many characters; docs/ci.md says so. The JSONL log always has it whole.
CUT = 80
# Line breaks: newline, CR, vertical tab, form feed, NEL, the separators. Lines are joined
# by one space; other whitespace is a space each, so a quoted `"  one   two "` in a
# decision reads as the supervisor wrote it.
_LINE_BREAK = re.compile("[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")
_WHITESPACE = re.compile(r"\s")


def shown(text: Any, limit: int = CUT) -> str:
    """TEXT on one line, as a person reads it: lines joined by one space, tabs as spaces,
    no whitespace deleted (words never join); nothing that acts on a terminal (model text
    must not); cut at LIMIT with `…`."""
    # Whitespace first: clean() would drop some of it (\v, \f, NEL) as controls.
    lines = (line.strip() for line in _LINE_BREAK.split(str(text)))
    s = clean(_WHITESPACE.sub(" ", " ".join(line for line in lines if line))).strip()
    return s if len(s) <= limit else s[: limit - 1] + "…"


# What a person reads to act on (an error's fix, a warning) is shown whole, up to this.
_WHOLE = 1000
_WORDS = frozenset({"message", "reason", "error"})


def _value(value: Any, limit: int) -> str:
    """A field's value as a person writes it: a command as a command line, true/false."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return shown(shlex.join(value), limit)
    return shown(value, limit)


def _duration(seconds: Any) -> str:
    total = int(float(seconds or 0))
    hours, rest = divmod(total, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def _command(argv: Any) -> str:
    return shlex.join(str(a) for a in argv) if isinstance(argv, list) else str(argv or "")


def counted(n: object, noun: str) -> str:
    """`1 iteration`, `2 iterations`: a count with its noun, as a person writes it."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _run_start(f: dict[str, Any]) -> str:
    """The first line of a CI log: the task, the agent, the supervisor and the budgets."""
    budgets = [counted(f.get("max_iter"), "iteration")]
    if f.get("max_time_s"):
        budgets.append(_duration(f["max_time_s"]))
    if f.get("max_cost_usd") is not None:
        budgets.append(f"${f['max_cost_usd']}")
    task = f.get("task") or f"the plan {f.get('plan')}"  # a plan without a goal
    line = (
        f"task: {shown(task)} | agent: {_command(f.get('agent_cmd'))}"
        f" | supervisor: {_command(f.get('supervisor_cmd'))}"
    )
    if f.get("second_opinion"):
        line += f" | second opinion: {_command(f['second_opinion'])}"
    line += f" | budget: {', '.join(budgets)}"
    if f.get("wind_down"):
        line += f", wind down at {_share(f['wind_down'])}"
    if f.get("verify"):
        line += " | verify: " + "; ".join(_command(v) for v in f["verify"])
    if f.get("part"):  # run_resume: what the earlier parts used counts against the budgets
        line += (
            f" | part {f['part']}, used before: {counted(f.get('iterations'), 'iteration')},"
            f" {_duration(f.get('elapsed_before_s'))}, ${_usd(f.get('cost_usd'))}"
        )
        if f.get("step"):
            line += f", at step {shown(f['step'])}"
    return line + f" | run {f.get('run_id')}, log {f.get('log_file')}"


def repeat_detail(f: Mapping[str, Any]) -> str:
    """A `repeat` event in words: how often the same round came, out of how many allowed,
    and what did not change."""
    what = f.get("what")
    # Any value a damaged log holds is read as text, and nothing in it acts on a terminal.
    names = ", ".join(map(str, what)) if isinstance(what, list) else str(what or "")
    return (
        f"{shown(f.get('count'))}x the same round (of {shown(f.get('max_repeats'))} allowed):"
        f" same {shown(names)} | instruction: {shown(f.get('instruction', ''))}"
        f" | answer: {shown(f.get('answer', ''))}"
    )


def _names(value: Any) -> str:
    """A list of names (files, gates) as text, whatever a damaged log holds."""
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value or "")


def tamper_detail(f: Mapping[str, Any]) -> str:
    """A `tamper` event in words: what the guard did, the protected files the agent changed
    and what the checks said with the originals."""
    verdict = str(f.get("verdict") or "?")
    line = f"{shown(verdict)}: protected files changed: {shown(_names(f.get('files')), _WHOLE)}"
    if verdict in ("refused", "escalated"):
        line += (
            f" | with the originals `{shown(_command(f.get('command')))}`"
            f" exited {shown(f.get('exit_code'))}"
        )
    elif f.get("reason"):
        line += f" | {shown(f['reason'], _WHOLE)}"
    return line


def second_detail(f: Mapping[str, Any]) -> str:
    """A `second_opinion` event in words: who, what it said to the judge's [COMPLETE],
    and what the run does."""
    return (
        f"#{shown(f.get('iteration'))} {shown(_command(f.get('command')))}: "
        f"{shown(f.get('action'))}: {shown(f.get('content', ''))}"
        f" | the judge said {shown(f.get('judge_action'))} | the run: {shown(f.get('verdict'))}"
    )


def baseline_detail(f: Mapping[str, Any]) -> str:
    """A `verify_baseline` event in words: each check before any change, and the gates
    that cannot tell done from not done."""
    if f.get("skipped"):
        return "skipped (--no-verify-baseline)"
    results = f.get("results")
    parts = []
    for r in results if isinstance(results, list) else ():
        if isinstance(r, Mapping):
            how = "passed" if r.get("passed") else f"exited {shown(r.get('exit_code'))}"
            parts.append(f"`{shown(_command(r.get('command')))}` {how}")
    line = "before any change: " + ("; ".join(parts) or "no check")
    if f.get("cannot_tell"):
        line += f" | cannot tell done from not done: {shown(_names(f['cannot_tell']))}"
    return line


def wind_down_detail(f: Mapping[str, Any]) -> str:
    """A `wind_down` event in words: which budget, past what share, and what is left."""
    return (
        f"#{shown(f.get('iteration'))} {shown(f.get('budget'))} budget past"
        f" {_share(f.get('fraction'))}: the agent is told to leave its work clean;"
        f" left: {shown(f.get('left', ''))}"
    )


def _share(value: Any) -> str:
    """A fraction as a percentage ('85%'), whatever a damaged log holds."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return f"{value:.0%}" if number else shown(value)


def _usd(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, (int, float)) else "?"


def person_action_text(f: Mapping[str, Any]) -> str:
    """'send from shell pid 7 on /dev/pts/3: use the other branch' (a person steering)."""
    what = f.get("text") or f.get("dialog") or ""
    if f.get("changes"):
        what = ", ".join(f"{k} {v}" for k, v in dict(f["changes"]).items())
    said = f"{f.get('action')} from {shown(f.get('source') or '?')}"
    return f"{said}: {shown(what)}" if what else said


def format_line(event: Event) -> str:
    """One readable line for an event, as printed when stdout is not a terminal."""
    f = event.fields
    clock = time.strftime("%H:%M:%S", time.localtime(event.ts))
    name = event.event
    if name in ("run_start", "run_resume"):
        detail = _run_start(f)
    elif name == "decision":
        detail = (
            f"#{f.get('iteration')}/{f.get('max_iter')} {f.get('action')}"
            f" ({f.get('duration_s', 0):.1f}s): {shown(f.get('content', ''))}"
        )
    elif name == "inject":
        detail = f"{f.get('kind')}: {shown(f.get('text', ''))}"
        if f.get("landed") is False:
            detail += " (did not land whole)"
        if f.get("confirmed") is False:
            detail += " (no turn started)"
    elif name == "agent_start":
        size = f.get("size") or ["?", "?"]
        detail = (
            f"{_command(f.get('argv'))} (pid {f.get('pid')}, {size[1]}x{size[0]}, "
            f"{'a terminal' if f.get('interactive') else 'no terminal'})"
        )
    elif name == "agent_ready":
        detail = f"after {f.get('elapsed_s', 0):.1f}s"
    elif name == "hook":
        detail = " ".join(
            shown(f[k], _WHOLE if k in _WORDS else CUT)
            for k in ("name", "tool_name", "target", "source", "reason", "error")
            if f.get(k)
        )
    elif name == "still_working":
        detail = (
            f"{_duration(f.get('elapsed_s', 0))} into the turn, {f.get('tools', 0)} tool call(s)"
        )
    elif name == "agent_screen":
        # The agent's last screen, one printed line per row, kept as it was drawn.
        rows = [clean(str(line)).rstrip() for line in f.get("lines", ())]
        return "\n".join(
            [f"{clock} ptysup {name:<16} last {len(rows)} lines:"]
            + [f"  | {row}".rstrip() for row in rows]
        )
    elif name == "escalation" and f.get("answer_with"):
        detail = (  # a CI log's reader answers from another shell: the line to type
            f"{shown(f.get('reason', ''))} | waiting {_duration(f.get('wait_s') or 0)} "
            f"for an answer: {f['answer_with']}" + (f" or {f['page']}" if f.get("page") else "")
        )
    elif name == "person_action":
        detail = person_action_text(f)
    elif name in ("question", "answer"):
        detail = _question_detail(f)
    elif name == "repeat":
        detail = repeat_detail(f)
    elif name == "tamper":
        detail = tamper_detail(f)
    elif name == "wind_down":
        detail = wind_down_detail(f)
    elif name == "wind_down_lifted":
        detail = f"#{shown(f.get('iteration'))} budgets raised: out of the last stretch"
    elif name == "verify_baseline":
        detail = baseline_detail(f)
    elif name == "second_opinion":
        detail = second_detail(f)
    elif name == "second_opinion_auto":
        detail = (
            f"{_command(f.get('command'))} (another vendor than the agent's "
            f"{shown(f.get('agent') or '?')} and the judge's {shown(f.get('judge') or '?')})"
        )
    elif name == "protect" and f.get("reason"):
        detail = shown(f["reason"], _WHOLE)  # outside git: why nothing is protected
    elif name == "protect":
        detail = (
            f"{shown(f.get('count'))} file(s) protected"
            + (f": {shown(_names(f.get('files')), _WHOLE)}" if f.get("files") else "")
            + (f" | --protect {shown(_names(f.get('pathspecs')))}" if f.get("pathspecs") else "")
        )
    elif name == "run_end":
        detail = (
            f"outcome={f.get('outcome')} exit_code={f.get('exit_code')}"
            f" iterations={f.get('iterations')} elapsed={f.get('elapsed_s', 0):.1f}s"
        )
        if f.get("cost_usd"):
            detail += f" cost=${f['cost_usd']:.4f} ({cost_parts(f)})"
        if f.get("reason"):
            detail += f" reason={shown(f['reason'], _WHOLE)}"
    else:
        detail = " ".join(
            f"{k}={_value(v, _WHOLE if k in _WORDS else CUT)}"
            for k, v in f.items()
            if v is not None
        )
    return f"{clock} ptysup {name:<16} {detail}".rstrip()


def earlier_cost(f: Mapping[str, Any]) -> float | None:
    """What a resumed run's earlier parts spent, from run_end's (or the summary's) figures:
    its agent and supervisor spend are this part's, its cost every part's. None when there
    is nothing to show at four decimals (a run of one part)."""
    earlier = float(f.get("cost_usd") or 0) - float(f.get("agent_cost_usd") or 0)
    earlier -= float(f.get("supervisor_cost_usd") or 0)
    return earlier if earlier >= 0.00005 else None


def cost_parts(f: Mapping[str, Any]) -> str:
    """The agent's and the supervisor's spend, and the earlier parts', adding up to the cost."""
    parts = (
        f"agent ${f.get('agent_cost_usd') or 0:.4f}, "
        f"supervisor ${f.get('supervisor_cost_usd') or 0:.4f}"
    )
    earlier = earlier_cost(f)
    return parts + (f", earlier parts ${earlier:.4f}" if earlier is not None else "")


def _question_detail(f: dict[str, Any]) -> str:
    """`to supervisor: Which storage? [SQLite | Redis]` / `by person: Which storage? → Redis`."""
    if "by" in f:
        answers = f.get("answers") or {}
        return f"by {f['by']}: " + shown("; ".join(f"{q} → {a}" for q, a in answers.items()))
    asked = "; ".join(
        f"{q.get('question')} [{' | '.join(map(str, q.get('options') or ()))}]"
        for q in f.get("questions") or ()
    )
    return f"to {f.get('to')}: {shown(asked)}"
