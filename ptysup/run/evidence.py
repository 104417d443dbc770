"""The evidence section of every supervisor prompt: what ptysup recorded itself, so that a
fresh supervisor judges more than one screenful and the agent's own words.

- the run so far: the last decisions and what came of each (`RunMemory`);
- what changed in the files since the last decision and since the start, from ptysup's
  own git snapshots (`ptysup.run.gitsnap`): tracked changes with their line counts, new
  files (untracked ones said so), deletions, protected files marked; bounded lists;
- the checks: before any change, at their last run, and which went from failing to
  passing or back (`CheckLedger`), and whether they could tell done from not done at all.

Agent-neutral: nothing here depends on which agent works. Without git, it says so.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ptysup.run.changes import Change, Kind, render, totals
from ptysup.run.checks import CheckLedger
from ptysup.run.gitsnap import Entry, GitError, WorkTree
from ptysup.run.memory import RunMemory
from ptysup.run.protect import is_test_file

MAX_BYTES = 12_000  # the whole section; the prompt's bound (32 KB) elides the agent's part


@dataclass
class Journal:
    """What the run's events taught ptysup (event-log sinks): its decisions and checks."""

    memory: RunMemory = field(default_factory=RunMemory)
    checks: CheckLedger = field(default_factory=CheckLedger)

    def sinks(self) -> tuple[RunMemory, CheckLedger]:
        """Add these to the run's event log."""
        return self.memory, self.checks

    def replay(self, events: Iterable[Mapping[str, Any]]) -> None:
        """Learn from a resumed run's earlier events."""
        events = list(events)  # each learner reads them all (a generator reads once)
        self.memory.replay(events)
        self.checks.replay(events)


@dataclass(frozen=True)
class Start:
    """The project as it was before the agent touched it (ptysup.run.startstate)."""

    tree: WorkTree | None  # None: not in a git work tree (or no git)
    snapshot: str | None = None  # the start's tree in ptysup's store
    protected: Mapping[str, Entry] = field(default_factory=dict)
    cwd: str = ""  # the run's folder, relative to the work tree's top
    no_git: str = ""  # why there are no snapshots, in words


class RunEvidence:
    """Gathers the section at each decision (`ptysup.run.decision.Evidence`)."""

    def __init__(
        self, journal: Journal, start: Start, warn: Callable[[str], object] = lambda _: None
    ) -> None:
        self._journal = journal
        self._start = start
        self._warn = warn  # a problem with git, said once
        self._warned = False
        self._last: str | None = None  # the snapshot at the last decision

    @property
    def last(self) -> str | None:
        """The snapshot the last `gather` took (None: none yet, or no git)."""
        return self._last

    def gather(self) -> str:
        """The section now: the run so far, what changed, the checks; within MAX_BYTES."""
        parts = [
            self._journal.memory.render(),
            self._files(),
            self._journal.checks.render(),
        ]
        text = "\n\n".join("\n".join(p) for p in parts if p)
        return _bounded(text, MAX_BYTES)

    def _files(self) -> list[str]:
        s = self._start
        if s.tree is None or s.snapshot is None:
            return [f"What changed in the files: not known ({s.no_git})."]
        try:
            now = s.tree.snapshot()
            since_start = s.tree.changes(s.snapshot, now)
            since_last = None if self._last is None else s.tree.changes(self._last, now)
            untracked = _untracked(s.tree, since_start)
        except GitError as exc:
            if not self._warned:
                self._warned = True
                self._warn(f"cannot tell the supervisor what changed in the files: {exc}")
            return [f"What changed in the files: not known (git: {exc})."]
        self._last = now
        lines = []
        if since_last is not None:  # at the first decision, the start is the last
            lines += _listed("Files changed since the last decision", since_last, s, untracked)
        lines += _listed("Files changed since the start", since_start, s, untracked)
        return lines


def _untracked(tree: WorkTree, changes: list[Change]) -> set[str]:
    added = {c.path for c in changes if c.kind is Kind.ADDED}
    return added - set(tree.tracked()) if added else set()


def _listed(
    head: str, changes: list[Change], start: Start, untracked: Collection[str]
) -> list[str]:
    if not changes:
        return [f"{head}: none."]
    lines = [f"{head}: {totals(changes)}"]
    listed = render(changes, start.protected, untracked, is_test=is_test_file)
    return lines + ["  " + line for line in listed]


def _bounded(text: str, limit: int) -> str:
    raw = text.encode()
    if len(raw) <= limit:
        return text
    cut = raw[: limit - 40].decode(errors="ignore").rsplit("\n", 1)[0]
    return cut + "\n[… the rest of the evidence cut …]"
