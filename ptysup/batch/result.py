"""What became of one task of a batch: the value the scheduler updates as the task goes, and
the batch's state file, the display and the summary read."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NOT_STARTED = "not_started"
# Before a run has its own state (describe() reads it from the run directory).
QUEUED, STARTING = "queued", "starting"
# A task whose process died of a signal before its run could end (a SIGTERM while Python
# started, before ptysup's handlers; a SIGKILL): no outcome of its own, so not final.
KILLED = "killed"
ORPHAN = "orphan"  # waiting for a run an earlier (crashed) batch left running


@dataclass
class TaskResult:
    """What became of one task (updated by its worker as it goes)."""

    id: str
    run_id: str  # "" until the task starts: ids are minted then, so they sort by start
    run_dir: Path
    state: str = QUEUED
    outcome: str | None = None
    exit_code: int | None = None
    branch: str | None = None
    worktree: Path | None = None
    commit: str | None = None
    diff_stat: str = ""
    error: str | None = None
    pr_url: str | None = None
    uncommitted: int = 0  # files a task that did not complete left changed in its worktree
    extra: dict[str, Any] = field(default_factory=dict)  # from describe(): cost, iterations…

    @property
    def completed(self) -> bool:
        """The run completed (the supervisor's verified [COMPLETE])."""
        return self.outcome == "complete" and self.exit_code == 0
