"""An agent's one-shot mode as ptysup's supervisor (the judge asked at each turn end): what
an agent folder's judge.py says of it, and the helpers those share. The supervisor
(ptysup.supervisor.judge) applies it without naming any agent."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ptysup.config import DEFAULT_SUPERVISOR_TOOLS


@dataclass(frozen=True)
class JudgeOptions:
    """What the run asks of a supervisor."""

    tools: str = DEFAULT_SUPERVISOR_TOOLS  # read-only; --verify runs the real checks
    model: str | None = None  # None: the supervisor's default model
    # The judge's private directory (`judge_dir`), where a judge keeps the files it needs
    # (a policy, a home: OneShot.prepare); None: none was made.
    private: Path | None = None


def _same_env(argv: Sequence[str], env: Mapping[str, str], private: Path | None) -> dict[str, str]:
    return dict(env)


def _never(argv: Sequence[str]) -> bool:
    return False


@dataclass(frozen=True)
class OneShot:
    """One agent's one-shot mode as a judge."""

    # The judge command `--second-opinion auto` tries; its program names the vendor.
    command: tuple[str, ...]
    matches: Callable[[Sequence[str]], bool]  # a supervisor command is this one-shot mode
    # The command line with ptysup's flags added (read-only tools, the model, no saved
    # session); whatever the person already put in it wins.
    lean: Callable[[list[str], JudgeOptions], list[str]]
    # The judge's environment (argv, the environment, its private directory or None).
    env: Callable[[Sequence[str], Mapping[str, str], Path | None], dict[str, str]] = _same_env
    # Writes what the judge needs into its private directory (a 0700 one of the run's),
    # given the environment; None: it needs no directory.
    prepare: Callable[[Path, Mapping[str, str]], None] | None = None
    # Whether ptysup passes its instructions as the system prompt (a file) to this command.
    takes_system_prompt: Callable[[Sequence[str]], bool] = _never
    # Whether to ask this command for its answer as JSON (its cost and errors).
    wants_json: Callable[[Sequence[str]], bool] = _never

    @property
    def vendor(self) -> str:
        """The vendor's name: its CLI's program name."""
        return self.command[0]


def runs(argv: Sequence[str], program: str) -> bool:
    """Whether a command runs PROGRAM (its executable's name), as agent or judge."""
    return bool(argv) and os.path.basename(argv[0]) == program


def has(argv: Sequence[str], *flags: str) -> bool:
    """Whether `argv` gives any of FLAGS (alone or as `--flag=value`)."""
    return any(a == f or a.startswith(f + "=") for a in argv for f in flags)


def with_prompt(out: list[str]) -> list[str]:
    """`-p` with its value: the README's `gemini -p` has none, and Gemini CLI 0.61 (and
    Qwen Code, its fork) refuses that ("Not enough arguments following: p", exit 1). The
    prompt comes on stdin, which it reads before an empty `-p ""`."""
    for i, arg in enumerate(out):
        if arg in ("-p", "--prompt") and (i + 1 == len(out) or out[i + 1].startswith("-")):
            return [*out[: i + 1], "", *out[i + 1 :]]
    return out


def chose_tools(out: Sequence[str], *own: str) -> bool:
    """Whether the person's command says what the judge may do: an approval mode other
    than plan, YOLO, or OWN flags of the agent's (then ptysup adds no restriction)."""
    for i, arg in enumerate(out):
        mode = arg.split("=", 1)[1] if arg.startswith("--approval-mode=") else None
        if arg == "--approval-mode" and i + 1 < len(out):
            mode = out[i + 1]
        if mode is not None and mode != "plan":
            return True
    return has(out, "-y", "--yolo", *own)
