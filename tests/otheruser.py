"""Running ptysup as another local user: root ignores permission bits, so a folder the
user cannot enter is tested for real by dropping to a user made for it (useradd, setpriv)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import ptysup_argv

NAME = "ptysup-test"
REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class OtherUser:
    """A local user other than root, and a home folder it owns for its runs."""

    uid: int
    gid: int
    home: Path

    def argv(self, *command: str) -> list[str]:
        """COMMAND run as this user, root's powers dropped."""
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", *command]

    def ptysup(
        self, args: Sequence[str], env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """`python -m ptysup ARGS` as this user, in its home folder."""
        base = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(self.home)}
        return subprocess.run(
            self.argv(*ptysup_argv(*args)),
            cwd=self.home,
            env={**base, **(env or {})},
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )


def other_user(tmp_path: Path) -> OtherUser:
    """The test user (made once); skips when not root, fails so under PTYSUP_REQUIRE_E2E=1."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None or shutil.which("useradd") is None:
        message = "needs root with useradd and setpriv to run ptysup as another user"
        if os.environ.get("PTYSUP_REQUIRE_E2E") == "1":
            pytest.fail(message)
        pytest.skip(message)
    try:
        entry = pwd.getpwnam(NAME)
    except KeyError:
        # Another test process (pytest -n) may be making it at the same moment: useradd
        # then fails with "already exists" (exit 9), and the user is there all the same.
        subprocess.run(["useradd", "--no-create-home", NAME], check=False, capture_output=True)
        entry = pwd.getpwnam(NAME)
    # The user must reach the tests' folders, and ptysup's code and interpreter (a clone
    # under /root, say) on the way: search permission only, nothing becomes listable.
    for folder in [tmp_path, *tmp_path.parents]:
        folder.chmod(folder.stat().st_mode | 0o005)
    for start in {REPO, Path(sys.prefix), Path(sys.base_prefix)}:
        for folder in [start, *start.parents]:
            folder.chmod(folder.stat().st_mode | 0o001)
    home = tmp_path / "home"
    home.mkdir()
    os.chown(home, entry.pw_uid, entry.pw_gid)
    return OtherUser(entry.pw_uid, entry.pw_gid, home)
