"""`codex exec` as ptysup's supervisor (Codex CLI 0.169)."""

from __future__ import annotations

from collections.abc import Sequence

from ptysup.agents.oneshot import JudgeOptions, OneShot, has, runs


def is_codex(argv: Sequence[str]) -> bool:
    """Whether a command is Codex CLI (its executable is named codex), agent or judge."""
    return runs(argv, "codex")


def is_exec(argv: Sequence[str]) -> bool:
    """Whether a command is `codex exec` (Codex CLI's one-shot mode)."""
    return is_codex(argv) and list(argv[1:2]) in (["exec"], ["e"])


def lean(out: list[str], options: JudgeOptions) -> list[str]:
    """`codex exec` as a judge: the prompt on stdin, the last message on stdout. It may run
    in any folder (no git repo needed), keeps no session file (a judge is never resumed)
    and reads without writing (a read-only sandbox)."""
    if not has(out, "--skip-git-repo-check"):
        out.append("--skip-git-repo-check")
    if not has(out, "--ephemeral"):
        out.append("--ephemeral")
    if not has(out, "-s", "--sandbox", "--dangerously-bypass-approvals-and-sandbox"):
        out += ["--sandbox", "read-only"]
    if options.model and not has(out, "-m", "--model"):
        out += ["--model", options.model]
    return out


JUDGE = OneShot(("codex", "exec"), is_exec, lean)
