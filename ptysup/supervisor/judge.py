"""The lean judge: what ptysup adds to a supervisor's command line and environment, as the
agent whose one-shot mode it is says (its folder's judge.py, found through the registry).
Any other supervisor command is left as it is."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path

from ptysup.agents.oneshot import JudgeOptions, OneShot
from ptysup.agents.private import private_dir
from ptysup.agents.registry import JUDGES as ONE_SHOTS

__all__ = [
    "JUDGES",
    "VENDORS",
    "JudgeOptions",
    "judge_dir",
    "lean_argv",
    "lean_env",
    "other_judge",
    "takes_system_prompt",
    "vendor",
    "wants_json",
    "with_system_prompt",
]


def one_shot(argv: Sequence[str]) -> OneShot | None:
    """The agent one-shot mode that `argv` runs, if it is one ptysup knows."""
    return next((one for one in ONE_SHOTS if one.matches(argv)), None)


def lean_argv(argv: Sequence[str], options: JudgeOptions) -> list[str]:
    """`argv` with the judge's tools, model and no saved session added; whatever the user
    already put in the command wins. Other supervisor commands are left as they are."""
    one = one_shot(argv)
    return one.lean(list(argv), options) if one else list(argv)


@contextlib.contextmanager
def judge_dir(
    argv: Sequence[str], env: Mapping[str, str], run_id: str | None = None
) -> Iterator[Path | None]:
    """A private directory for the judge's own files (a policy and a home of its own, say),
    removed after the block (a killed run's is removed by its resume, as its agent's).
    None for a judge that needs none."""
    one = one_shot(argv)
    if one is None or one.prepare is None:
        yield None
        return
    with private_dir(run_id, env) as private:
        one.prepare(private, env)
        yield private


def lean_env(
    argv: Sequence[str], env: Mapping[str, str], private: Path | None = None
) -> dict[str, str]:
    """The supervisor's environment, as its agent's one-shot mode wants it (no relaunch of
    a child that would outlive a killed ptysup, a home of its own in PRIVATE, read-only
    permissions…)."""
    one = one_shot(argv)
    return one.env(argv, env, private) if one else dict(env)


def takes_system_prompt(argv: Sequence[str]) -> bool:
    """Whether ptysup passes its instructions as the system prompt: a supervisor that
    takes one and whose command line does not set a system prompt of its own."""
    one = one_shot(argv)
    return one is not None and one.takes_system_prompt(argv)


def wants_json(argv: Sequence[str]) -> bool:
    """Whether to ask the supervisor for its answer as JSON (its cost and errors)."""
    one = one_shot(argv)
    return one is not None and one.wants_json(argv)


def with_system_prompt(argv: Sequence[str], path: str) -> list[str]:
    """`argv` reading its system prompt from the file at `path` (kept out of `ps`)."""
    return [*argv, "--system-prompt-file", path]


# Each vendor's CLI as a judge, in the order `--second-opinion auto` prefers them; the
# program's name is the vendor's (a judge's or an agent's).
JUDGES: tuple[tuple[str, tuple[str, ...]], ...] = tuple(
    (one.vendor, one.command) for one in ONE_SHOTS
)
VENDORS = tuple(name for name, _ in JUDGES)


def vendor(argv: Sequence[str]) -> str | None:
    """The vendor of a command (its program is one of VENDORS' CLIs), else None."""
    name = os.path.basename(argv[0]) if argv else ""
    return name if name in VENDORS else None


def other_judge(
    excluded: Collection[str | None], installed: Callable[[str], bool]
) -> tuple[str, ...] | None:
    """The first judge command of a vendor not in `excluded` whose program is installed."""
    return next(
        (argv for name, argv in JUDGES if name not in excluded and installed(argv[0])), None
    )
