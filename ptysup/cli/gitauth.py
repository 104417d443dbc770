"""The git token a pod pushes with ($PTYSUP_GIT_TOKEN): for ptysup's own push alone.

ptysup takes the token out of its environment as it starts (`take`), so nothing it starts
inherits it: not the agent, its supervisor, a verify command or a hook, nor git run in the
agent's repository (whose config and hooks the agent can write). The agent runs as the
same user as ptysup, and /proc/PID/environ keeps the environment a process was started
with whatever it unsets later: so a process that held the token makes itself
non-dumpable, which closes its environment and memory to every process without
CAP_SYS_PTRACE (the pod drops all capabilities).

git gets the token from `python -m ptysup.engines.ci git-credential`, given on the
command line of ptysup's own push only (never as a global helper), and that helper
answers for the one remote alone: $PTYSUP_REPOSITORY's protocol, host and path.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping, MutableMapping

from ptysup.procutil import forbid_inspection

TOKEN_VAR = "PTYSUP_GIT_TOKEN"
USER_VAR = "PTYSUP_GIT_USER"
REMOTE_VAR = "PTYSUP_REPOSITORY"  # the one remote the token is for
DEFAULT_USER = "x-access-token"  # GitHub's; GitLab and others take any user name

_held: dict[str, str] = {}


def take(environ: MutableMapping[str, str]) -> None:
    """Move the token out of `environ` (and the process's own environment) into this
    process's memory, and make the process non-dumpable if it had one."""
    import os

    given = environ.pop(TOKEN_VAR, None)
    inherited = os.environ.pop(TOKEN_VAR, None)
    _held.clear()  # the token of this invocation, none from an earlier one (tests call main)
    if given or inherited:
        _held[TOKEN_VAR] = given or inherited or ""
        forbid_inspection()


def token() -> str | None:
    """The token taken at start, if there was one."""
    return _held.get(TOKEN_VAR)


def credential(request: Mapping[str, str], env: Mapping[str, str]) -> dict[str, str]:
    """The answer to git's `get` for REQUEST (its protocol, host, path): the user and the
    token from ENV when REQUEST is $PTYSUP_REPOSITORY, else nothing."""
    secret = env.get(TOKEN_VAR, "")
    remote = env.get(REMOTE_VAR, "")
    if not secret or not remote or not is_the_remote(request, remote):
        return {}
    return {"username": env.get(USER_VAR) or DEFAULT_USER, "password": secret}


def is_the_remote(request: Mapping[str, str], remote: str) -> bool:
    """Whether git's credential REQUEST is for REMOTE: the same protocol and host (with
    its port), and the same path when git names one (credential.useHttpPath)."""
    url = urllib.parse.urlsplit(remote)
    if not url.scheme or not url.hostname:
        return False  # a local path or scp-like address: no password is ever asked
    host = url.hostname.lower() + (f":{url.port}" if url.port else "")
    if request.get("protocol", "").lower() != url.scheme.lower():
        return False
    if request.get("host", "").lower() != host:
        return False
    path = request.get("path")
    return path is None or path.strip("/") == url.path.strip("/")


def parse_request(text: str) -> dict[str, str]:
    """git's credential request (`key=value` lines up to a blank one) as a dict."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line:
            break
        key, eq, value = line.partition("=")
        if eq:
            out[key] = value
    return out
