"""Where the control page of a directory's runs is, for a run that waits on a person.

`ptysup serve --control` writes `.ptysup/serve.json` (beside runs/) while it serves: the
control page's address and its own pid, never a token. A run whose escalation waits
(--escalate-wait) reads it to say, beside the `ptysup send` line, the link to its own
control page, which opens where the person's browser already holds the control cookie
(anywhere else it says to open the control URL `serve` printed). A file another user
wrote, one whose server is gone, or one that is not what serve writes, gives no link.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path

from ptysup.store import readback
from ptysup.store.rundir import write_atomic

FILE = "serve.json"
MAX_BYTES = 4096


def publish(runs_dir: Path, control_page: str) -> Callable[[], None]:
    """Say that this process serves the control page at `control_page` (no token in it);
    returns what takes it back, which removes the file only while it is still this one's."""
    path = runs_dir.parent / FILE
    write_atomic(path, json.dumps({"control": control_page, "pid": os.getpid()}) + "\n")
    mine = os.getpid()

    def withdraw() -> None:
        if _pid_of(path) == mine:
            with contextlib.suppress(OSError):
                path.unlink()

    return withdraw


def control_link(runs_dir: Path, run_id: str) -> str | None:
    """The control page of the run `run_id` while this user's `serve --control` serves
    the directory, else None."""
    data = _read(runs_dir.parent / FILE)
    page = data.get("control")
    if not isinstance(page, str) or not page.startswith("http://") or not _alive(data.get("pid")):
        return None
    return f"{page}#{run_id}"


def _read(path: Path) -> dict[str, object]:
    """What serve wrote there, or {} (also for another user's file, or a damaged one)."""
    try:
        if path.lstat().st_uid != os.getuid():
            return {}  # another user's file names whatever they like
        data = readback.loads(readback.read_bytes(path, MAX_BYTES))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _pid_of(path: Path) -> int | None:
    pid = _read(path).get("pid")
    return pid if isinstance(pid, int) and not isinstance(pid, bool) else None


def _alive(pid: object) -> bool:
    """Whether `pid` is a process of this user's that still runs."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except OSError:  # gone, or another user's (PermissionError): not our serve
        return False
    return True
