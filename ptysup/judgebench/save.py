"""`ptysup judge-bench save RUN`: a case made of a run's own turn end — what its judge was
shown (the run directory's turns/), the run so far (its events before that decision), the
project before the agent and at that turn end (from the run's snapshots, while the
repository is there), what the checks made of it — labelled by the person.

A project too large to keep (or whose snapshots are gone) is left out: the case then
replays the evidence and the checks' verdict as the run recorded them. Text files are
saved with the run's own redaction applied: a key in a file does not leave in a case.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ptysup import __version__
from ptysup.judgebench.cases import Case, Checks, File, portable
from ptysup.judgebench.panels import complete_panels
from ptysup.judgebench.replay import checks_from, replay
from ptysup.run.changes import Kind
from ptysup.run.gitsnap import GitError, WorkTree
from ptysup.run.startstate import START_FILE, STORE
from ptysup.run.turns import Turn, read_turn, read_turns
from ptysup.store.rundir import RUNS_DIR, RunDir, RunNotFound, find_run_dir, read_log

MAX_FILES = 2000  # files of a project kept in a case
MAX_FILE = 1024 * 1024  # bytes of one file
MAX_PROJECT = 6 * 1024 * 1024  # bytes of all of them (a case file is at most 8 MB)
MAX_EVENTS = 400  # of the run so far, the last ones kept
# The events the judge's memory and the checks' ledger learn from (ptysup.run.memory,
# ptysup.run.checks): the rest of a run's log is no part of a case.
REMEMBERED = frozenset(
    {
        "decision",
        "verify",
        "verify_baseline",
        "tamper",
        "repeat",
        "person_prompt",
        "escalation",
        "step_start",
        "step_end",
        "turn_end",
        "second_opinion",
        "protect",
    }
)


class SaveError(Exception):
    """Why no case can be made (one line)."""


@dataclass(frozen=True)
class Saved:
    """The case made, and what the person should know of it."""

    case: Case
    notes: tuple[str, ...] = ()


def make_case(
    run: str,
    label: str,
    kind: str,
    iteration: int | None = None,
    why: str = "",
    runs_dir: Path = RUNS_DIR,
) -> Saved:
    """The case of RUN's decision ITERATION (its last one kept by default)."""
    try:
        run_dir = find_run_dir(run, runs_dir)
        record = run_dir.read_record()
        events = _events(run_dir)
    except RunNotFound as exc:
        raise SaveError(str(exc)) from None
    if record is None:
        raise SaveError(f"{run_dir.path}: no run.json: not a run ptysup can make a case of")
    turns = read_turns(run_dir.path)
    if not turns:
        raise SaveError(
            f"run {run_dir.run_id} kept no turn ends (a run from before ptysup kept them, "
            "or one that never reached a decision)"
        )
    i = max(turns) if iteration is None else iteration
    if i not in turns:
        kept = ", ".join(str(n) for n in sorted(turns))
        raise SaveError(f"run {run_dir.run_id} kept no decision {i} (it kept {kept})")
    try:
        turn = read_turn(turns[i])
    except (OSError, ValueError) as exc:
        raise SaveError(f"cannot read decision {i}'s turn end: {exc}") from None
    config = record.config
    case = Case(
        name=f"{run_dir.run_id}-{i}",
        kind=kind,
        label=label,
        task=turn.task,
        turn=turn.view,
        moment=turn.moment,
        why=why,
        verify=turn.checks,
        protect=tuple(str(p) for p in config.get("protect") or ()),
        notes=turn.notes,
        events=tuple(_before(events, i)),
        evidence=turn.evidence,
        checks=checks_from(events, i),
        source={
            "run": run_dir.run_id,
            "iteration": i,
            "agent": list(config.get("agent_cmd") or ()),
            "judge": list(config.get("supervisor_cmd") or ()),
            "judge_said": {"action": turn.judge[0], "content": turn.judge[1]},
            "ptysup": __version__,
        },
    )
    notes: list[str] = []
    project = _project(run_dir, Path(record.cwd), turn, run_dir.redactor(), notes)
    if project is not None:
        case = replace(case, start=project[0], end=project[1])
        if case.checks.result == "none" and case.verify:
            case = replace(case, checks=_checks_now(case))
    elif case.verify and case.checks.result == "none":
        notes.append(
            "the run did not run its checks at this turn end and the project is not in the "
            "case: the case has no checks"
        )
    return Saved(portable(case, record.cwd), tuple(notes))


def _events(run_dir: RunDir) -> list[dict[str, Any]]:
    """The run's own events (a --log-file other runs appended to holds theirs too)."""
    read = read_log(run_dir.events_file())
    mine: list[dict[str, Any]] = []
    current = None
    for e in read.events:
        if e.get("event") in ("run_start", "run_resume"):
            current = e.get("run_id")
        if current == run_dir.run_id:
            mine.append(e)
    return mine


def _before(events: Sequence[Mapping[str, Any]], iteration: int) -> list[dict[str, Any]]:
    """What the judge of decision ITERATION remembered: the events before it, bounded."""
    out = []
    for e in events:
        if e.get("event") == "decision" and e.get("iteration") == iteration:
            break
        if e.get("event") in REMEMBERED:
            out.append({k: v for k, v in e.items() if k != "ts"})
    return out[-MAX_EVENTS:]


def _checks_now(case: Case) -> Checks:
    """What the checks and the tamper guard make of the case's turn end, run anew with a
    judge that says [COMPLETE] (the run's judge went on there: they never ran)."""
    return replay(case, complete_panels).checks


def _project(
    run_dir: RunDir,
    cwd: Path,
    turn: Turn,
    redact: Callable[[str], str],
    notes: list[str],
) -> tuple[dict[str, File], dict[str, File | None]] | None:
    """The project's files before the agent (under the run's folder) and those that
    differ at the turn end; None, said in `notes`, when they cannot be kept."""
    store = run_dir.path / STORE
    start_file = store / START_FILE
    if turn.snapshot is None or not start_file.is_file():
        notes.append("the run kept no snapshot of its files (outside git): the case has no project")
        return None
    tree = WorkTree.find(cwd, store) if cwd.is_dir() else None
    try:
        start = json.loads(start_file.read_text())
        if tree is None:
            raise GitError(f"{cwd} is no longer a git work tree")
        prefix = str(start.get("cwd") or "")
        return _files(tree, str(start["snapshot"]), turn.snapshot, prefix, redact)
    except (GitError, OSError, ValueError, KeyError, TypeError) as exc:
        notes.append(f"the run's snapshots cannot be read ({exc}): the case has no project")
    except _TooLarge as exc:
        notes.append(f"the project is too large to keep in a case ({exc}): the case has none")
    return None


class _TooLarge(Exception):
    pass


def _files(
    tree: WorkTree, start: str, now: str, prefix: str, redact: Callable[[str], str]
) -> tuple[dict[str, File], dict[str, File | None]]:
    changes = tree.changes(start, now)
    with tempfile.TemporaryDirectory(prefix="ptysup-case-") as tmp:
        before, after = Path(tmp) / "start", Path(tmp) / "end"
        tree.checkout(start, before)
        tree.checkout(now, after)
        folder = f"{prefix}/" if prefix else ""
        total = [0]
        first = {
            p: f
            for p in _under(_all(before), folder)
            if (f := _read(before, p, folder, redact, total)) is not None
        }
        end: dict[str, File | None] = {}
        for c in changes:
            if not c.path.startswith(folder):
                continue
            gone = c.kind is Kind.DELETED
            end[c.path[len(folder) :]] = (
                None if gone else _read(after, c.path, folder, redact, total)
            )
        shutil.rmtree(tmp, ignore_errors=True)
    return first, end


def _all(root: Path) -> list[str]:
    return sorted(
        p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() or p.is_symlink()
    )


def _under(paths: Iterable[str], folder: str) -> list[str]:
    found = [p for p in paths if p.startswith(folder)]
    if len(found) > MAX_FILES:
        raise _TooLarge(f"{len(found)} files, more than {MAX_FILES}")
    return found


def _read(
    root: Path, path: str, folder: str, redact: Callable[[str], str], total: list[int]
) -> File | None:
    """One file as a case keeps it (None: not there); _TooLarge past the bounds."""
    where = root / path
    if where.is_symlink():
        return File(str(where.readlink()).encode(), link=True)
    if not where.is_file():
        return None
    size = where.stat().st_size
    total[0] += size
    if size > MAX_FILE or total[0] > MAX_PROJECT:
        raise _TooLarge(f"{path[len(folder) :]} makes it more than {MAX_PROJECT // 2**20} MB")
    data = where.read_bytes()
    with contextlib.suppress(UnicodeDecodeError):  # binary: kept as it is
        data = redact(data.decode("utf-8")).encode()
    return File(data, executable=bool(where.stat().st_mode & 0o100))
