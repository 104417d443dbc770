"""`ptysup completion bash|zsh|fish`: a shell completion script for ptysup's options."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

COMPLETE_VAR = "_PTYSUP_COMPLETE"
SHELLS = ("bash", "zsh", "fish")


def main(args: Sequence[str]) -> int:
    """Print the completion script for a shell; install with e.g.
    `eval "$(ptysup completion bash)"` in ~/.bashrc."""
    from click.shell_completion import get_completion_class

    from ptysup.cli import _command

    if len(args) != 1 or args[0] not in SHELLS:
        out = sys.stdout if args[:1] in (["-h"], ["--help"]) else sys.stderr
        print(f"usage: ptysup completion {{{','.join(SHELLS)}}}", file=out)
        return 0 if out is sys.stdout else 2
    cls = get_completion_class(args[0])
    assert cls is not None
    print(cls(_command(), {}, "ptysup", COMPLETE_VAR).source())
    return 0


def complete(env: Mapping[str, str]) -> int | None:
    """Answer the shell's completion request (the script sets _PTYSUP_COMPLETE), or None."""
    instruction = env.get(COMPLETE_VAR)
    if not instruction:
        return None
    from click.shell_completion import shell_complete

    from ptysup.cli import _command

    os.environ.update(env)  # click reads COMP_WORDS etc. from the process environment
    return shell_complete(_command(), {}, "ptysup", COMPLETE_VAR, instruction)
