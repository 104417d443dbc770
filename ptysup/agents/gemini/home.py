"""Where Gemini CLI reads ptysup's settings for a run: the system settings file, where
Gemini CLI accepts one, else a home of the run's own.

Gemini CLI 0.61 reads `GEMINI_CLI_SYSTEM_SETTINGS_PATH` only when the file and every folder
above it are owned by root and writable by no group or other user (its
isFileAndDirectorySecureSync); else it skips the file with a warning that never shows and
runs without ptysup's hooks (issue 30: with the state folder under /tmp, turn ends came
from the screen seconds late and questions stalled). That is every run of a user other
than root, and root's under a world-writable folder. There ptysup gives Gemini CLI a home
of the run's own instead (`GEMINI_CLI_HOME`, in the run's private directory): its
`.gemini` links every entry of the person's (sessions and history included, so a resume
finds them), and its `settings.json` is the person's with ptysup's settings merged in.
User settings are always read; the person's own settings file is never written.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from ptysup.agents import settingsfile
from ptysup.agents.private import agents_dir

HOME_ENV = "GEMINI_CLI_HOME"
HOME_DIR = "gemini-home"
SETTINGS = "settings.json"
# Made in the person's folder when missing, as Gemini CLI makes them: what a run writes
# there (its sessions, its history) must outlive the run's own home.
_KEPT = ("tmp", "history")


def person_dir(env: Mapping[str, str]) -> Path:
    """The person's Gemini CLI folder: $GEMINI_CLI_HOME/.gemini, else ~/.gemini."""
    home = env.get(HOME_ENV) or env.get("HOME") or os.path.expanduser("~")
    return Path(home) / ".gemini"


def skipped_because(path: Path, uid: int | None = None) -> str | None:
    """Why Gemini CLI would skip a system settings file that user UID (default: this
    process's) writes at PATH; None when it reads it."""
    uid = os.geteuid() if uid is None else uid
    if uid != 0:
        return "only a file root owns is read, and this user is not root"
    for folder in path.parents:
        try:
            st = folder.lstat()
            if stat.S_ISLNK(st.st_mode) and st.st_uid != 0:
                return f"{folder} is a link root does not own"
            st = folder.stat()
        except FileNotFoundError:
            continue
        except OSError as exc:
            return f"{folder} cannot be checked: {exc.strerror or exc}"
        if st.st_uid != 0:
            return f"{folder} is not owned by root"
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return f"{folder} is group- or world-writable"
    return None


def make(
    private: Path,
    env: Mapping[str, str],
    ours: Mapping[str, Any] | None = None,
    unlinked: Collection[str] = (),
) -> Path:
    """A Gemini CLI home in PRIVATE (a 0700 directory of the run's): its `.gemini` links
    each entry of the person's (ENV names it) but UNLINKED ones, and, given OURS, holds a
    `settings.json` of the person's settings with OURS merged in. Its path (for
    GEMINI_CLI_HOME)."""
    home = private / HOME_DIR
    mine = home / ".gemini"
    mine.mkdir(mode=0o700, parents=True)
    theirs = person_dir(env)
    skip = {*unlinked, *((SETTINGS,) if ours is not None else ())}
    if ours is not None:
        for folder in _KEPT:
            if folder not in skip:
                (theirs / folder).mkdir(parents=True, exist_ok=True)
        settingsfile.write(mine / SETTINGS, ours, theirs / SETTINGS)
    try:
        entries = sorted(theirs.iterdir())
    except OSError:
        entries = []  # no folder of the person's (or none readable): nothing to link
    for entry in entries:
        if entry.name not in skip:
            (mine / entry.name).symlink_to(entry)
    return home


def reach(env: Mapping[str, str], file_name: str) -> tuple[bool, str]:
    """How ptysup's settings (FILE_NAME, in a run's private directory) reach Gemini CLI
    for a run with ENV here, and whether they do (for `ptysup doctor`)."""
    why = skipped_because(agents_dir(env) / "RUN" / file_name)
    if why is None:
        return True, f"from ptysup's system settings file (under {agents_dir(env)})"
    theirs = person_dir(env)
    if theirs.exists() and not os.access(theirs, os.R_OK | os.X_OK):
        return (
            False,
            f"{theirs} cannot be read, and Gemini CLI skips a system settings file here ({why})",
        )
    return True, (
        f"from a home of the run's own (your {theirs / SETTINGS} with ptysup's settings merged): "
        f"Gemini CLI would skip a system settings file here ({why})"
    )
