"""The agent's environment as a shell passes it on: SHLVL at least 1.

Gemini CLI 0.61 and Qwen Code 0.24 run each hook as `bash -c COMMAND` with sockets for its
standard input and output (Node's pipes). Bash then reads ~/.bashrc, as for a command run
by a remote shell, unless SHLVL says it already runs under a shell (its shell level below
2). A ptysup started by a program rather than a shell (a test, a pod's entry point, a
service) has no SHLVL, so each hook paid for the person's .bashrc: observed, `pyenv init`
there made every hook wait 60 s while a stale pyenv rehash lock stood, and the run heard
no hook before its turns ended. Started from a terminal, SHLVL is 1 or more, and the
agent's hooks run as they do there.
"""

from __future__ import annotations

from collections.abc import Mapping


def under_a_shell(env: Mapping[str, str]) -> dict[str, str]:
    """ENV with SHLVL at least 1, as a shell gives it to the programs it starts."""
    out = dict(env)
    try:
        level = int(out.get("SHLVL", "0"))
    except ValueError:
        level = 0
    if level < 1:
        out["SHLVL"] = "1"
    return out
