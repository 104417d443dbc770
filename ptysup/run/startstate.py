"""The run's start, taken before the agent starts: the checks' baseline, a snapshot of the
project as it was, and which files define "done" (the protected files, as they were).

Kept in the run's own folder (`evidence/`: ptysup's object store and `start.json`), so a
resumed run compares with the same start. Without git there is no snapshot and nothing is
protected: said once, and the run goes on.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ptysup.agents.events import Interrupted
from ptysup.config import RunConfig
from ptysup.events import EventLog
from ptysup.run.baseline import Baseline, MakeVerifier, gates, run_baseline, skipped
from ptysup.run.evidence import Start
from ptysup.run.gitsnap import Entry, GitError, WorkTree
from ptysup.run.protect import ProtectSpec, named_files, protected_files
from ptysup.terminal.signals import STOP_SIGNALS, read_signals, signal_pipe

STORE = "evidence"  # the folder in the run directory
START_FILE = "start.json"
LISTED = 50  # protected files named in the `protect` event


@dataclass(frozen=True)
class Prepared:
    """The start, and the baseline when the checks ran."""

    start: Start
    baseline: Baseline | None = None


def prepare(
    config: RunConfig,
    log: EventLog,
    run_dir: Path,
    *,
    resumed: bool,
    make: MakeVerifier,
    deadline: float | None = None,
) -> Prepared:
    """The start of a run: on a fresh run the checks' baseline first (what they do to the
    files is not the agent's), then the snapshot; a resumed run reads its start again."""
    store = run_dir / STORE
    exclude = [p for p in (config.log_file, config.record, config.summary_json) if p]
    tree = WorkTree.find(config.cwd, store, [*exclude, config.runs_dir])
    if resumed:
        start = _load(store, tree)
        if start is not None:
            return Prepared(start)
        log.emit(
            "warning",
            message="this run's start was not kept: what changed, and the protected files, "
            "count from this part on",
        )
    baseline = None
    the_gates = gates(config.verify, config.plan)
    if not resumed and the_gates:
        if config.verify_baseline:
            baseline = run_baseline(the_gates, make, log, deadline)
        else:
            skipped(log)
    if tree is None:  # said once, in the event of the start, not as a warning: no fault
        spec = ProtectSpec.parse(config.protect)
        log.emit(
            "protect",
            count=0,
            files=[],
            pathspecs=list(spec.pathspecs),
            off=spec.off,
            git=False,
            reason=f"{NO_GIT}: {NOT_SHOWN}",
        )
        return Prepared(Start(None, no_git=NO_GIT), baseline)
    commands = [c for g in the_gates for c in g.commands]
    start = _take(tree, config, commands, log)
    return Prepared(start, baseline)


NO_GIT = "not a git work tree"
NOT_SHOWN = "the supervisor is not shown what changed in the files, and no file is protected"


def _take(
    tree: WorkTree, config: RunConfig, commands: Sequence[tuple[str, ...]], log: EventLog
) -> Start:
    """Snapshot the work tree now, pick the protected files, keep both."""
    spec = ProtectSpec.parse(config.protect)
    cwd = tree.cwd(config.cwd)
    try:
        snapshot = tree.snapshot()
        entries = tree.entries(snapshot)
        named = named_files(commands, cwd, str(tree.top), entries)
        chosen = protected_files(
            tree.tracked(), entries, spec, named, _matched(tree, spec, config, log)
        )
    except GitError as exc:
        log.emit("warning", message=f"git: {exc}: {NOT_SHOWN}")
        return Start(None, no_git=f"git failed: {exc}")
    protected = {p: entries[p] for p in chosen}
    start = Start(tree, snapshot, protected, cwd)
    try:
        _keep(start, tree)
    except OSError as exc:  # the run goes on; only a resume would miss it
        log.emit("warning", message=f"cannot keep the run's start for a resume: {exc}")
    log.emit(
        "protect",
        count=len(protected),
        files=list(chosen[:LISTED]),
        pathspecs=list(spec.pathspecs),
        off=spec.off,
        git=True,
    )
    return start


def _matched(tree: WorkTree, spec: ProtectSpec, config: RunConfig, log: EventLog) -> list[str]:
    """The files --protect's pathspecs match; a pathspec git refuses protects nothing (a
    run checks them before it starts: this is a repository that changed since)."""
    if not spec.pathspecs:
        return []
    try:
        return tree.matching(spec.pathspecs, config.cwd)
    except GitError as exc:
        log.emit("warning", message=f"--protect: {exc}: its files are not protected")
        return []


def _keep(start: Start, tree: WorkTree) -> None:
    data = {
        "snapshot": start.snapshot,
        "cwd": start.cwd,
        "protected": {p: [e.mode, e.blob] for p, e in start.protected.items()},
    }
    path = tree.store / START_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)


def _load(store: Path, tree: WorkTree | None) -> Start | None:
    """A resumed run's start as its first part kept it; None when it cannot be read."""
    if tree is None:
        return Start(None, no_git=NO_GIT)
    try:
        data = json.loads((store / START_FILE).read_text())
        protected = {str(p): Entry(str(m), str(b)) for p, (m, b) in data["protected"].items()}
        return Start(tree, str(data["snapshot"]), protected, str(data["cwd"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


T = TypeVar("T")
STOP_GRACE_S = 5.0  # after a stop signal, the most the start may take to wind down


def interruptible(
    work: Callable[[], T], on_signal: Callable[[int], None], grace: float = STOP_GRACE_S
) -> T:
    """`work()`'s result, run in a thread while this (main) thread hears the stop signals:
    each is handed to `on_signal`, which should make `work` end (a running check killed).
    What `work` raises is raised here; `work` still busy `grace` seconds after a signal
    (a git command `on_signal` cannot end) is left behind, and Interrupted raised."""
    results: list[T] = []
    errors: list[BaseException] = []
    done_r, done_w = os.pipe()

    def target() -> None:
        try:
            results.append(work())
        except BaseException as exc:  # handed to the caller, whatever it is
            errors.append(exc)
        finally:
            with contextlib.suppress(OSError):  # the caller stopped listening
                os.write(done_w, b"x")
            os.close(done_w)  # the worker's own end: never a number reused meanwhile

    try:
        with signal_pipe(STOP_SIGNALS) as sig_fd:
            worker = threading.Thread(target=target, name="ptysup-start", daemon=True)
            worker.start()
            _wait(sig_fd, done_r, on_signal, grace)
            worker.join()
    finally:
        os.close(done_r)
    if errors:
        raise errors[0]
    return results[0]


def _wait(sig_fd: int, done_fd: int, on_signal: Callable[[int], None], grace: float) -> None:
    """Until `done_fd` is readable; each stop signal to `on_signal`, and Interrupted when
    the work has not ended `grace` seconds after the first."""
    first: int | None = None
    while True:
        ready, _, _ = select.select([sig_fd, done_fd], [], [], grace if first else None)
        if not ready and first is not None:
            raise Interrupted(first)
        for signum in read_signals(sig_fd) if sig_fd in ready else ():
            first = first or signum
            on_signal(signum)
        if done_fd in ready:
            return
