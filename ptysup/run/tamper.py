"""The tamper guard: a [COMPLETE] whose checks pass only because the agent changed the files
that define "done" (the protected files: tests, what the checks name) is no done.

When a protected file was changed or deleted since the start, the checks run again in a
scratch copy: the agent's files as they are now, its new files included, with the protected
files put back as they were at the start. If they fail there, the agent changed what
"done" means. If they also fail in a plain copy of the agent's files (the copy lacks
something the checks need), the guard cannot tell, and says so. The person's work tree is
never touched: the copies are made from ptysup's own snapshots, in a temporary folder.
"""

from __future__ import annotations

import enum
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ptysup.run.gitsnap import Entry, GitError, WorkTree, link_dependencies
from ptysup.run.verify import Verify, VerifyResult

Command = tuple[str, ...]
# The checks' commands, run with this folder as their working directory.
ChecksIn = Callable[[Sequence[Command], Path], Verify]


class Verdict(str, enum.Enum):
    """What the guard found."""

    PASSED = "passed"  # protected files changed, and the checks pass with the originals
    FAILED = "failed"  # they fail with the originals: the agent changed what done means
    UNCHECKED = "unchecked"  # they fail in a copy even with the agent's files: not known


@dataclass(frozen=True)
class Finding:
    """The protected files the agent changed, and what the checks say without the change."""

    files: tuple[str, ...]
    verdict: Verdict
    failed: VerifyResult | None = None  # the first check failing against the originals
    why: str = ""  # UNCHECKED: why the guard cannot tell

    def instruction(self) -> str:
        """What the agent is told when its [COMPLETE] is refused."""
        assert self.failed is not None
        return (
            "Not done: you changed files that define when the task is done (protected "
            f"files): {_listed(self.files)}. ptysup ran the checks again with those files "
            f"as they were at the start, and {self.failed.describe()}. Its output ends:\n"
            f"{self.failed.output_tail[-1500:]}\nPut the protected files back as they were "
            "and make the original checks pass by fixing the code. Adding new tests in new "
            "files is fine."
        )

    def reason(self) -> str:
        """Why the run escalates when it happens again: it names the files."""
        failed = f"; against the originals {self.failed.describe()}" if self.failed else ""
        return (
            "tampering: the agent changed protected files again to make the checks pass: "
            f"{_listed(self.files)}{failed}"
        )


def _listed(files: Sequence[str], most: int = 20) -> str:
    shown = ", ".join(files[:most])
    return shown + (f" and {len(files) - most} more" if len(files) > most else "")


class TamperGuard:
    """Protected files as they were at the start (`protected`: path → entry in the start
    snapshot `start`), and the checks run in scratch copies made from snapshots."""

    def __init__(
        self,
        tree: WorkTree,
        start: str,
        protected: Mapping[str, Entry],
        cwd: str,
        checks_in: ChecksIn,
        scratch_parent: Path | None = None,
    ) -> None:
        self._tree = tree
        self._start = start
        self.protected = dict(protected)
        self._cwd = cwd  # the checks' folder, relative to the top of the work tree
        self._checks_in = checks_in
        self._parent = scratch_parent

    def changed(self, now: str) -> tuple[str, ...]:
        """The protected files that snapshot `now` has changed or deleted since the start."""
        return tuple(
            sorted(c.path for c in self._tree.changes(self._start, now) if c.path in self.protected)
        )

    def check(self, commands: Sequence[Command], deadline: float | None = None) -> Finding | None:
        """None when no protected file changed (or there is no check); else what the checks
        say with the originals. A stop signal raises Interrupted, the time budget TimeUp."""
        if not commands or not self.protected:
            return None
        try:
            now = self._tree.snapshot()
            files = self.changed(now)
            if not files:
                return None
            restored = self._tree.with_entries(now, {p: self.protected[p] for p in files})
        except GitError as exc:
            return Finding((), Verdict.UNCHECKED, why=f"git: {exc}")
        failed = self._first_failure(restored, commands, deadline)
        if failed is None:
            return Finding(files, Verdict.PASSED)
        control = self._first_failure(now, commands, deadline)
        if control is not None:
            why = f"even with the agent's own files, in a copy {control.describe()}"
            return Finding(files, Verdict.UNCHECKED, why=why)
        return Finding(files, Verdict.FAILED, failed)

    def _first_failure(
        self, tree: str, commands: Sequence[Command], deadline: float | None
    ) -> VerifyResult | None:
        """The first check failing in a scratch copy of snapshot `tree`, or None."""
        scratch = Path(tempfile.mkdtemp(prefix="ptysup-scratch-", dir=self._parent))
        try:
            try:
                self._tree.checkout(tree, scratch)
                link_dependencies(self._tree, self._tree.ignored(), scratch)
            except (GitError, OSError) as exc:
                return VerifyResult(("git", "checkout-index"), None, f"no copy: {exc}", 0.0)
            where = scratch / self._cwd
            where.mkdir(parents=True, exist_ok=True)
            results = self._checks_in(commands, where).run(deadline)
            return next((r for r in results if not r.passed), None)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
