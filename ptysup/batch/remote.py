"""`batch run --push REMOTE`: the one remote a task's branch goes to, checked before the
task runs and pushed to once it completed.

Without a token (a person's own machine) git pushes from the checkout with the person's
own configuration and credentials. With ptysup's token (a pod's $PTYSUP_GIT_TOKEN, see
ptysup.cli.gitauth) nothing the agent could have written is trusted: not the checkout's
config or hooks (an `insteadOf`, a proxy, a credential helper, a pre-push hook would each
see or redirect the token), nor the global config in the HOME it shares. The branch is
fetched into a private bare repository first, and pushed from there with no global
config, hooks off, and ptysup's credential helper alone, for that one URL. As the first
process of its container (a pod's, whose command execs ptysup) ptysup first ends every
other process in it: what the agent left running must not be alive to read the pushing
git's environment.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ptysup.batch.worktrees import GitError, git
from ptysup.cli import gitauth
from ptysup.procutil import end_other_processes

_TIMEOUT = 300  # seconds for one git command against the remote


@dataclass(frozen=True)
class Remote:
    """Where a pod's branch goes: the URL (read before the agent ran, so the agent
    cannot point it elsewhere) and the token git is given for it, if any."""

    url: str
    token: str | None = None

    def head(self, branch: str, cwd: Path) -> str | None:
        """The commit BRANCH points at on the remote, or None where it has no such branch."""
        out = self._git(["ls-remote", "--heads", self.url, f"refs/heads/{branch}"], cwd)
        fields = out.split()
        return fields[0] if fields else None

    def push(self, top: Path, branch: str) -> None:
        """Push BRANCH of the checkout at TOP (never forced: other work there stays)."""
        spec = f"refs/heads/{branch}:refs/heads/{branch}"
        if self.token is None:
            git(["push", "--quiet", self.url, spec], top)
            return
        with _private_repo() as bare:
            _isolated(["--git-dir", str(bare), "init", "--bare", "--quiet"], bare.parent)
            fetch = ["fetch", "--quiet", "--no-tags", str(top), f"+{spec}"]
            _isolated(["--git-dir", str(bare), *fetch], bare.parent)
            self._git(["--git-dir", str(bare), "push", "--quiet", self.url, spec], bare.parent)

    def _git(self, args: Sequence[str], cwd: Path) -> str:
        if self.token is None:
            return git(args, cwd)
        if not end_other_processes():
            raise GitError("a process the agent left could not be ended: the token stays unused")
        return _isolated(args, cwd, self)


def resolve(top: Path, remote: str) -> Remote:
    """REMOTE as given to --push (a remote's name, a URL or a path), with this process's
    token if it has one: a name is read from the checkout now, before the agent runs."""
    url = remote
    if remote in git(["remote"], top).split():
        url = git(["remote", "get-url", "--push", remote], top).strip()
    return Remote(url, gitauth.token())


def _isolated(args: Sequence[str], cwd: Path, remote: Remote | None = None) -> str:
    """git with no global configuration and no hooks; given REMOTE, with ptysup's
    credential helper for it alone (and its token in the helper's environment only)."""
    helper = f"!{shlex.quote(sys.executable)} -m ptysup.engines.ci git-credential"
    options = ["-c", "core.hooksPath=/dev/null", "-c", "credential.helper="]
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0"}
    env.pop(gitauth.TOKEN_VAR, None)
    if remote is not None and remote.token is not None:
        options += ["-c", f"credential.helper={helper}", "-c", "credential.useHttpPath=true"]
        env[gitauth.TOKEN_VAR] = remote.token
        # The one remote the token is for: the Job's own $PTYSUP_REPOSITORY where it names
        # one (a remote's name read from the checkout could be the agent's doing).
        env.setdefault(gitauth.REMOTE_VAR, remote.url)
    try:
        proc = subprocess.run(
            ["git", *options, *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"git {_verb(args)}: {exc}") from None
    if proc.returncode != 0:
        words = " ".join((proc.stderr or proc.stdout).split()) or f"exit {proc.returncode}"
        raise GitError(f"git {_verb(args)}: {words}")
    return proc.stdout


def _verb(args: Sequence[str]) -> str:
    """git's subcommand in ARGS (after --git-dir DIR)."""
    rest = list(args)
    while rest and rest[0] == "--git-dir":
        rest = rest[2:]
    return rest[0] if rest else "git"


@contextlib.contextmanager
def _private_repo() -> Iterator[Path]:
    """A path for a bare repository in a fresh 0700 folder, removed after the block."""
    with tempfile.TemporaryDirectory(prefix="ptysup-push-") as tmp:
        yield Path(tmp) / "repo.git"
