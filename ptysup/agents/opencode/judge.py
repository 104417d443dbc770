"""`opencode run` as ptysup's supervisor (opencode 1.18)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ptysup.agents.oneshot import JudgeOptions, OneShot, has, runs

JUDGE_TITLE = "ptysup decision"
# `opencode run`'s tools for a judge: those of a Claude Code judge (read and search the
# project), every other one denied. opencode 1.18 leaves a denied tool out of the request;
# one it would ask about, `opencode run` refuses ("auto-rejecting") and the call ends
# there, with nothing on stdout: the judge's model never got to answer.
JUDGE_PERMISSION = '{"*": "deny", "read": "allow", "grep": "allow", "glob": "allow"}'
_PERMISSION = "OPENCODE_PERMISSION"


def is_opencode(argv: Sequence[str]) -> bool:
    """Whether a command is opencode (its executable is named opencode)."""
    return runs(argv, "opencode")


def is_run(argv: Sequence[str]) -> bool:
    """Whether `argv` is `opencode run` (opencode's one-shot mode)."""
    return is_opencode(argv) and list(argv[1:2]) == ["run"]


def lean(out: list[str], options: JudgeOptions) -> list[str]:
    """`opencode run` as a judge: the prompt on stdin, the answer alone on stdout.
    Read-only: its `plan` agent, which may not edit; titled, so that opencode asks its
    model for no title (a second request per decision, quoting the prompt). opencode keeps
    the call's session in its database (it has no switch against that)."""
    if not has(out, "--agent"):
        out += ["--agent", "plan"]
    if not has(out, "--title"):
        out += ["--title", JUDGE_TITLE]
    if options.model and not has(out, "-m", "--model"):
        out += ["--model", options.model]
    return out


def judge_env(argv: Sequence[str], env: Mapping[str, str], private: Path | None) -> dict[str, str]:
    """Only the reading tools, unless the person's command (--auto) or environment says."""
    if has(argv, "--auto") or _PERMISSION in env:
        return dict(env)
    return {**env, _PERMISSION: JUDGE_PERMISSION}


JUDGE = OneShot(("opencode", "run"), is_run, lean, env=judge_env)
