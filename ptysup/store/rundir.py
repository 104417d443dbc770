"""A run on disk: `.ptysup/runs/<id>/` — what resume, replay and the runs listing read.

run.json      the resolved options, the Claude Code session id, where the events go;
              written once at the start (atomically: a temp file renamed over it)
plan.yaml     a copy of the plan, so editing the file later never changes the run
events.jsonl  the journal: every event flushed as it happens; progress (iterations,
              time, cost, the plan's steps) is read back from it, so `kill -9` at any
              moment loses nothing but a cut last line
events.cast   the agent's terminal (each resumed part records to events.partN.cast)
lock          flock()ed for the run's whole life, holding its pid
state.json    the run's state, kept current (ptysup.store.runstate), with its spend so far
alive         empty; touched after every quiet minute of a live run (ptysup.run.heartbeat):
              its mtime says how long a killed run lived past its last event
evidence/     the run's start (start.json) and ptysup's object store of its snapshots
turns/        each judged turn end, as the judge was shown it (ptysup.run.turns), the
              last 200: what `ptysup judge-bench save` makes a case of
log_incomplete  written when a write to the event log failed: what the run used is
              not all in its log (when the run directory itself cannot be written, it
              goes to $XDG_STATE_HOME/ptysup/incomplete/<id>.json instead)
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import re
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ptysup import logread
from ptysup.config import ConfigError, RunConfig
from ptysup.logread import LogRead
from ptysup.redact import Redactor
from ptysup.store import durable, pidlock, readback
from ptysup.userfile import open_regular

RUNS_DIR = Path(".ptysup/runs")
RUN_FILE = "run.json"
PLAN_FILE = "plan.yaml"
EVENTS_FILE = "events.jsonl"
LOCK_FILE = "lock"
ALIVE_FILE = "alive"
INCOMPLETE_FILE = "log_incomplete"
STATE_FILE = "state.json"  # written by ptysup.store.runstate
# Not options: run.json keeps them apart (the plan has its own file, cwd is the run's).
# The escape key belongs to the terminal a run is watched in: a resume takes its own.
_NOT_STORED = ("plan", "cwd", "runs_dir", "escape_key")


class RunNotFound(Exception):
    """RUN names no run, or its files cannot be read; the message is one line."""


# Another live process holds the run's lock.
RunLocked = pidlock.Taken


def write_atomic(path: Path, text: str) -> None:
    """Write `text` so that a reader (or a crash) sees the old file or the new one, never
    half of it: a 0600 temp file, fsynced, renamed over `path`, the directory fsynced."""
    durable.make_dirs(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    # One a killed process left (its pid used again) goes first: written through, a FIFO
    # there would block and a link would lead elsewhere.
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    durable.sync_dir(path.parent)


# write_atomic's temp file: `.NAME.PID.tmp`.
_TEMP = re.compile(r"\..+\.[0-9]+\.tmp")


def remove_left_temps(folder: Path) -> list[Path]:
    """Remove the temp files write_atomic left in `folder` when its process was killed
    mid-write (SIGKILL runs no cleanup); the removed paths. Call it holding the folder's
    lock: then no live process is writing one. Only this user's files are touched."""
    removed = []
    with contextlib.suppress(OSError):
        for path in sorted(folder.iterdir()):
            if not _TEMP.fullmatch(path.name):
                continue
            with contextlib.suppress(OSError):
                st = path.lstat()
                if st.st_uid == os.geteuid() and not stat.S_ISDIR(st.st_mode):
                    path.unlink()
                    removed.append(path)
    return removed


@dataclass(frozen=True)
class RunRecord:
    """run.json: what a run was started with."""

    run_id: str
    config: dict[str, Any]  # RunConfig's fields as JSON (see config_to_json)
    session_id: str | None
    log_file: str
    record: str | None
    cwd: str
    started: float  # Unix time of this part's start
    plan: str | None = None  # the plan's original path (its text is in plan.yaml)

    def to_json(self) -> str:
        """run.json's text."""
        return json.dumps(dataclasses.asdict(self), indent=2, ensure_ascii=False) + "\n"


# run.json's fields, the JSON types each may have and their names (a newer version may
# add fields: those are ignored).
_RECORD_TYPES: Mapping[str, tuple[tuple[type, ...], str]] = {
    "run_id": ((str,), "a string"),
    "config": ((dict,), "an object"),
    "session_id": ((str, type(None)), "a string or null"),
    "log_file": ((str,), "a string"),
    "record": ((str, type(None)), "a string or null"),
    "cwd": ((str,), "a string"),
    "started": ((int, float), "a number"),
    "plan": ((str, type(None)), "a string or null"),
}


def _record_problem(data: Any) -> str | None:
    """What makes run.json's content unusable, or None."""
    if not isinstance(data, dict):
        return "not a JSON object"
    for name, (types, expected) in _RECORD_TYPES.items():
        if name not in data and name != "plan":  # plan came later: absent means none
            return f"{name} is missing"
        value = data.get(name)
        if not isinstance(value, types) or isinstance(value, bool):
            return f"{name} is {json.dumps(value)[:40]}, not {expected}"
    return None


def config_to_json(config: RunConfig) -> dict[str, Any]:
    """The options of a run as JSON values (tuples → lists, paths → strings)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(config):
        if f.name in _NOT_STORED:
            continue
        out[f.name] = _to_json(getattr(config, f.name))
    return out


def config_from_json(data: Mapping[str, Any], **extra: Any) -> RunConfig:
    """A RunConfig from config_to_json's output (unknown keys from newer versions ignored);
    ConfigError for a value of the wrong type or a missing task."""
    kinds = {f.name: str(f.type) for f in dataclasses.fields(RunConfig)}
    values: dict[str, Any] = {}
    for name, value in data.items():
        if name not in kinds or name in _NOT_STORED:
            continue
        if not _fits(kinds[name], value):
            raise ConfigError(f"run.json's config: {name} is {json.dumps(value)[:40]}")
        if isinstance(value, list):  # --verify is a tuple of argv tuples
            value = tuple(tuple(v) if isinstance(v, list) else v for v in value)
        elif name in _PATHS and isinstance(value, str):
            value = Path(value)
        values[name] = value
    values |= extra
    for f in dataclasses.fields(RunConfig):
        needed = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if needed and f.name not in values:
            raise ConfigError(f"run.json's config: {f.name} is missing")
    return RunConfig(**values)


def _fits(kind: str, value: Any) -> bool:
    """Whether a JSON value can be RunConfig's field of annotation `kind` (as config_to_json
    writes it); an annotation not listed here (never stored) lets anything through."""
    if kind.endswith(" | None"):
        return value is None or _fits(kind.removesuffix(" | None"), value)
    if kind == "bool" or isinstance(value, bool):  # JSON's true is no number here
        return kind == "bool" and isinstance(value, bool)
    if kind in ("str", "Path"):
        return isinstance(value, str)
    if kind == "int":
        return isinstance(value, int)
    if kind == "float":
        return isinstance(value, (int, float)) and math.isfinite(value)
    if kind == "tuple[str, ...]":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind == "tuple[tuple[str, ...], ...]":
        return isinstance(value, list) and all(_fits("tuple[str, ...]", v) for v in value)
    return True


def _to_json(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (tuple, list)):
        return [_to_json(v) for v in value]
    return value


_PATHS = ("log_file", "record", "summary_json")


class RunDir:
    """One run's directory and the files in it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def of(cls, config: RunConfig, run_id: str) -> RunDir:
        """The directory of run `run_id` started with `config` (its runs_dir, from its cwd)."""
        return cls(config.cwd / config.runs_dir / run_id)

    @property
    def run_id(self) -> str:
        """The directory's name."""
        return self.path.name

    @property
    def record_file(self) -> Path:
        """run.json."""
        return self.path / RUN_FILE

    @property
    def plan_file(self) -> Path:
        """The plan's copy."""
        return self.path / PLAN_FILE

    @property
    def default_events(self) -> Path:
        """Where the events go without --log-file."""
        return self.path / EVENTS_FILE

    def write_record(self, record: RunRecord) -> None:
        """Store run.json (atomically)."""
        write_atomic(self.record_file, record.to_json())

    def store(
        self, config: RunConfig, session_id: str, log_file: Path, record: Path | None
    ) -> None:
        """run.json and the plan's copy: everything a later resume needs to start."""
        if config.plan is not None:
            write_atomic(self.plan_file, config.plan.text)
        self.write_record(
            RunRecord(
                run_id=self.run_id,
                config=config_to_json(config),
                session_id=session_id,
                log_file=str(log_file.resolve()),
                record=str(record.resolve()) if record else None,
                cwd=str(config.cwd),
                started=time.time(),
                plan=config.plan.path if config.plan is not None else None,
            )
        )

    def learn_session(self, session_id: str) -> None:
        """Keep the conversation's id the agent picked itself in run.json."""
        record = self.read_record()
        if record is not None and record.session_id != session_id:
            self.write_record(dataclasses.replace(record, session_id=session_id))

    def read_record(self) -> RunRecord | None:
        """run.json, or None for a run without one (before resume existed, or a foreign log)."""
        try:
            data = readback.read_json(self.record_file)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise RunNotFound(f"cannot read {self.record_file}: {readback.problem(exc)}") from exc
        wrong = _record_problem(data)
        if wrong:
            raise RunNotFound(f"cannot read {self.record_file}: {wrong}")
        names = {f.name for f in dataclasses.fields(RunRecord)}
        return RunRecord(**{k: v for k, v in data.items() if k in names})

    def redactor(self) -> Redactor:
        """The run's own redaction, as its event log was written: the built-in kinds and
        its --redact (from run.json; the built-in kinds alone without a readable one)."""
        try:
            record = self.read_record()
        except RunNotFound:
            record = None
        patterns = record.config.get("redact") if record is not None else None
        try:
            return Redactor.with_extra([str(p) for p in patterns or ()])
        except ValueError:  # a pattern this version refuses: the built-in kinds still apply
            return Redactor()

    def events_file(self) -> Path:
        """The run's event log: where run.json says, else events.jsonl here."""
        record = self.read_record()
        return Path(record.log_file) if record is not None else self.default_events

    def mark_alive(self) -> None:
        """Touch the `alive` file: this part of the run is alive now (see last_alive)."""
        (self.path / ALIVE_FILE).touch(mode=0o600)

    def last_alive(self) -> float | None:
        """When a part of the run last marked itself alive (Unix time), or None."""
        try:
            return (self.path / ALIVE_FILE).stat().st_mtime
        except OSError:
            return None

    def mark_incomplete(self, reason: str, part: int, elsewhere: Path | None = None) -> None:
        """Say that this run's event log misses events (a write failed): in the run
        directory, else as an empty file there (a full disk still makes one), else in
        `elsewhere` (default: incomplete_dir()); silent if none can be written."""
        text = json.dumps({"run_id": self.run_id, "part": part, "reason": reason}) + "\n"
        with contextlib.suppress(OSError):
            write_atomic(self.path / INCOMPLETE_FILE, text)
            return
        with contextlib.suppress(OSError):
            flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK  # a FIFO there must not block
            os.close(os.open(self.path / INCOMPLETE_FILE, flags, 0o600))
            return
        with contextlib.suppress(OSError):
            write_atomic((elsewhere or incomplete_dir()) / f"{self.run_id}.json", text)

    def incomplete(self, elsewhere: Path | None = None) -> str | None:
        """Why this run's event log misses events, or None when it is whole (as far as
        any part could tell: see mark_incomplete)."""
        for path in (
            self.path / INCOMPLETE_FILE,
            (elsewhere or incomplete_dir()) / f"{self.run_id}.json",
        ):
            try:
                marker = readback.read_json(path)
            except FileNotFoundError:
                continue
            except (OSError, ValueError):
                return "a write to the event log failed"  # the marker itself was cut
            try:
                return str(marker["reason"])
            except (TypeError, KeyError):
                return "a write to the event log failed"
        return None

    def read_progress(self, events_file: Path) -> Progress:
        """The run's Progress from its event log, its `alive` file and the spend its
        state.json holds: the agent's, as it reported it, even after the last event (a
        part killed with SIGKILL mid-turn)."""
        log = read_log(events_file)
        done = progress(log.events, alive=self.last_alive(), unreadable=log.skipped)
        spent = self._spent()
        if spent > done.cost_usd:  # every part's figures are totals: the highest is whole
            done = dataclasses.replace(done, cost_usd=spent)
        return done

    def _spent(self) -> float:
        try:
            cost = readback.read_json(self.path / STATE_FILE)["cost_usd"]
        except (OSError, ValueError, TypeError, KeyError):
            return 0.0
        return float(cost) if logread.is_number(cost) and cost > 0 else 0.0

    def holder(self) -> int | None:
        """The pid of the live process holding the lock, or None when the run is not alive."""
        return pidlock.holder(self.path / LOCK_FILE)

    def lock(self) -> contextlib.AbstractContextManager[None]:
        """Hold the run's lock (with this pid in it) for the block; RunLocked if taken."""
        return pidlock.hold(self.path / LOCK_FILE)


def incomplete_dir(env: Mapping[str, str] = os.environ) -> Path:
    """Where the incomplete mark of a run whose directory cannot be written goes:
    outside every project, in the person's state directory."""
    base = env.get("XDG_STATE_HOME") or os.path.join(env.get("HOME") or "~", ".local", "state")
    return Path(base).expanduser() / "ptysup" / "incomplete"


def run_dirs(runs_dir: Path = RUNS_DIR) -> list[RunDir]:
    """Every run under `runs_dir`, oldest first (ids sort by time); RunNotFound if the
    directory is there but cannot be read."""
    try:
        if not runs_dir.exists():
            return []
        entries = sorted(runs_dir.iterdir())  # a file there is an error, not "no runs"
    except OSError as exc:
        raise RunNotFound(f"cannot read {runs_dir}: {exc.strerror or exc}") from exc
    return [RunDir(p) for p in entries if _is_run(p)]


def _is_run(path: Path) -> bool:
    """Whether `path` is a run's directory (one that cannot even be looked into is not):
    one with any of its files, whatever they are (a damaged run is still a run, shown as
    damaged), or with its lock alone (a disk full as it started: nothing else was written)."""
    try:
        return path.is_dir() and any(
            os.path.lexists(path / name) for name in (RUN_FILE, EVENTS_FILE, LOCK_FILE)
        )
    except OSError:
        return False


def find_run_dir(run: str, runs_dir: Path = RUNS_DIR) -> RunDir:
    """RUN's directory: 'last', a run id or unique prefix, a run directory, or an events
    file (its directory, or the run its run_start names)."""
    try:
        return _find_run_dir(run, runs_dir)
    except OSError as exc:  # a folder the user cannot enter
        raise _unreadable(run, exc) from None


def _unreadable(run: str, exc: OSError) -> RunNotFound:
    return RunNotFound(f"cannot look at {exc.filename or run}: {exc.strerror or exc}")


def _find_run_dir(run: str, runs_dir: Path) -> RunDir:
    path = Path(run)
    if path.is_file():
        if (path.parent / RUN_FILE).is_file():
            return RunDir(path.parent)
        run_id = _run_id_in(path)
        if run_id and (runs_dir / run_id).is_dir():
            return RunDir(runs_dir / run_id)
        return RunDir(path.parent)
    if _is_run(path):
        return RunDir(path)
    runs = run_dirs(runs_dir)
    if run == "last" and runs:
        return runs[-1]
    matches = [r for r in runs if r.run_id.startswith(run)]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise RunNotFound(f"run id {run!r} is ambiguous ({len(matches)} runs match)")
    raise RunNotFound(f"no run {run!r} (looked for a file, a run directory and {runs_dir}/)")


def find_run(run: str, runs_dir: Path = RUNS_DIR) -> Path:
    """The event log of RUN (see find_run_dir); an events file given by path is itself."""
    path = Path(run)
    try:
        if path.is_file():
            return path
        log = find_run_dir(run, runs_dir).events_file()
        found = log.is_file()
    except OSError as exc:  # a folder the user cannot enter
        raise _unreadable(run, exc) from None
    if not found:
        raise RunNotFound(f"run {run!r} has no event log ({log})")
    return log


def _run_id_in(path: Path) -> str | None:
    """The run id in an event log's first line (run_start), read without the rest."""
    try:
        fd = open_regular(path)
        with os.fdopen(fd, encoding="utf-8", errors="replace") as f:
            first = readback.loads(f.readline(readback.MAX_JSON))
    except (OSError, ValueError):
        return None
    if isinstance(first, dict) and first.get("event") == "run_start":
        return str(first.get("run_id") or "") or None
    return None


def read_log(path: Path) -> LogRead:
    """A JSONL event log's trusted events and how many lines were skipped (see logread)."""
    try:
        text = readback.read_text(path, readback.MAX_LOG)
    except OSError as exc:
        raise RunNotFound(f"cannot read {path}: {readback.problem(exc)}") from exc
    return logread.parse(text)


def read_events(path: Path) -> list[dict[str, Any]]:
    """Every trusted event in a JSONL log (a line cut by a crash, or garbled, is skipped)."""
    return read_log(path).events


@dataclass(frozen=True)
class Progress:
    """How far a run got, read from its events: budgets used, the plan's steps, its end."""

    task: str = ""
    iterations: int = 0
    max_iter: int | None = None
    elapsed_s: float = 0.0
    cost_usd: float = 0.0
    steps_done: tuple[str, ...] = ()
    step: str | None = None  # the step under way (or the last one started)
    step_index: int | None = None  # 1-based
    steps_of: int | None = None
    step_iterations: int = 0  # decisions since the current step started
    outcome: str | None = None  # run_end's, None when the last part has no run_end
    reason: str = ""  # run_end's: why the run ended as it did
    parts: int = 0  # run_start + run_resume events (the highest part number they name)
    typed: bool = False  # something was typed into the agent: its conversation exists
    started: float | None = None  # Unix time
    clock_from: float | None = None  # Unix time the last part's elapsed time counts from
    unreadable: int = 0  # lines of the log skipped: not JSON, or a field of the wrong type
    # The last decision's (action, content) when the run never carried it out: a
    # `complete`, `abort` or `escalate` with nothing after it that acted on it (killed
    # between the decision and run_end). A resume carries it out, asking no one.
    unfinished: tuple[str, str] | None = None
    # The budgets as a person last moved them while the run went (`ptysup budget`): a
    # resume keeps them unless its command line says otherwise. None: never moved.
    budgets: Mapping[str, float | int | None] | None = None


def progress(
    events: list[dict[str, Any]], alive: float | None = None, unreadable: int = 0
) -> Progress:
    """Fold a run's events (every part of it) into its Progress.

    `alive` (RunDir.last_alive): when the run last marked itself alive. A last part without
    a run_end (killed) lived to its last event or to then, whichever is later: a part killed
    in a long quiet spell (a tool call, a person not answering) is charged that spell.
    """
    p: dict[str, Any] = {"steps_done": []}
    before = 0.0  # elapsed time of the earlier parts
    part_start: float | None = None
    step_from = 0
    for e in events:
        name = e.get("event")
        ts = float(e.get("ts") or 0.0)
        if name in ("run_start", "run_resume"):
            # A part's number, if it says: a part whose start the log lost still counts.
            p["parts"] = max(p.get("parts", 0) + 1, int(e.get("part") or 0))
            before = float(e.get("elapsed_before_s") or 0.0)
            part_start = ts
            p["clock_from"] = ts - before
            p.setdefault("started", ts)
            p["outcome"], p["reason"] = None, ""
            for key in ("task", "max_iter"):
                if e.get(key) is not None:
                    p[key] = e[key]
        if part_start is not None:
            p["elapsed_s"] = round(before + max(ts - part_start, 0.0), 3)
        if name == "inject":
            p["typed"] = True
        p["unfinished"] = _unfinished(e, p)
        if name == "decision":
            p["iterations"] = max(p.get("iterations", 0), int(e.get("iteration") or 0))
            p["cost_usd"] = float(e.get("total_cost_usd") or p.get("cost_usd", 0.0))
            p["max_iter"] = e.get("max_iter", p.get("max_iter"))
        elif name == "budget":  # a person moved the run's budgets (`ptysup budget`)
            p["max_iter"] = e.get("max_iter", p.get("max_iter"))
            p["budgets"] = {k: e.get(k) for k in ("max_iter", "max_time", "max_cost")}
        elif name == "step_start":
            p.update(step=e.get("id"), step_index=e.get("index"), steps_of=e.get("of"))
            step_from = p.get("iterations", 0)
        elif name == "step_end" and e.get("outcome") == "complete":
            if e.get("id") not in p["steps_done"]:
                p["steps_done"].append(e.get("id"))
        elif name == "run_end":
            p["outcome"] = e.get("outcome")
            p["reason"] = str(e.get("reason") or "")
            p["iterations"] = max(p.get("iterations", 0), int(e.get("iterations") or 0))
            p["cost_usd"] = float(e.get("cost_usd") or p.get("cost_usd", 0.0))
            if e.get("elapsed_s") is not None:
                p["elapsed_s"] = float(e["elapsed_s"])
    if part_start is not None and p["outcome"] is None and alive is not None:
        p["elapsed_s"] = max(p["elapsed_s"], round(before + alive - part_start, 3))
    p["step_iterations"] = p.get("iterations", 0) - step_from if p.get("step") else 0
    p["steps_done"] = tuple(p["steps_done"])
    return Progress(**p, unreadable=unreadable)


# A decision that ends the run, or hands it to a person: what the loop does after it,
# until run_end, may be cut by a kill. A [CONTINUE] is typed at once (an inject).
_ENDING = ("complete", "abort", "escalate")
# Events that show the loop went on from a decision: something typed, a turn's end, a next
# step, the run's end. (verify, escalation, interrupt and the like are on the way to it.)
_MOVED_ON = ("inject", "turn_end", "step_start", "run_start", "run_end")


def _unfinished(event: dict[str, Any], p: dict[str, Any]) -> tuple[str, str] | None:
    """Progress.unfinished after `event`, `p` holding the fold so far."""
    name = event.get("event")
    if name == "decision":
        action = event.get("action")
        return (str(action), str(event.get("content") or "")) if action in _ENDING else None
    if name in _MOVED_ON:
        return None
    if name == "step_end" and p.get("step_index") != p.get("steps_of"):
        return None  # a step before the last advanced: the next one starts on resume
    unfinished: tuple[str, str] | None = p.get("unfinished")
    return unfinished


def part_recordings(
    events: list[dict[str, Any]], default: Path, run_id: str | None = None
) -> list[Path]:
    """Where each part of a run recorded its terminal, in order (a resumed part records to
    a file of its own): the parts of run `run_id` if given (a log several runs appended
    to), `default` for a part that does not say, or a log without parts."""
    parts = [
        e
        for e in events
        if e.get("event") in ("run_start", "run_resume") and run_id in (None, e.get("run_id"))
    ]
    return [Path(p.get("record") or default) for p in parts or [{}]]


@dataclass(frozen=True)
class Part:
    """This process's part of a run: a fresh start, or a resume of what `resumed` says."""

    run_id: str
    session_id: str
    resumed: Progress | None = None
    say: str | None = None
    number: int = 1  # 1 for the run's start; a resumed part's, never one used before
    # The agent's conversation exists (something was typed into it): reopen it and ask the
    # supervisor first. Else the resumed run starts the agent on its task afresh.
    reopen: bool = False
    # The conversation the agent began but never saved a message of (see
    # ptysup.cli.resume): this part starts a new one, and says so.
    unsaved: str | None = None
