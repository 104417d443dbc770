"""`ptysup send RUN TEXT`, `ptysup budget RUN --max-iter +10 ...` and `ptysup stop RUN`:
steer a live run from another shell, over its private attach socket (ptysup.attach.steer).

One line on stdout when the run did it; one line on stderr and exit 2 when it did not (a
bad or finished RUN, a wrong value, another user's run).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from ptysup.argspec import ArgSpec
from ptysup.attach import steer
from ptysup.exitcodes import ExitCode
from ptysup.store.rundir import RUNS_DIR, RunNotFound, find_run_dir

RUN = "RUN: a run id, a unique prefix of one, 'last', a run directory or an events file"
USAGE = {
    "send": f"usage: ptysup send RUN TEXT...   (TEXT '-': read it from stdin; {RUN})",
    "budget": "usage: ptysup budget RUN [--max-iter N|+N|-N] [--max-time D|+D|-D] "
    f"[--max-cost X|+X|-X]   ({RUN})",
    "stop": f"usage: ptysup stop RUN   ({RUN})",
}
BUDGETS = {"--max-iter": "max_iter", "--max-time": "max_time", "--max-cost": "max_cost"}
SPECS = {
    "send": ArgSpec(args=("file", "text")),
    "budget": ArgSpec(options={name: "text" for name in BUDGETS}, args=("file",)),
    "stop": ArgSpec(args=("file",)),
}


class _Usage(Exception):
    """The command line is wrong; the message is the usage line or what is wrong."""


def source() -> str:
    """Where a request comes from, in words: 'shell pid 4242 on /dev/pts/3'."""
    where = "no terminal"
    for fd in (0, 1, 2):
        if os.isatty(fd):
            where = os.ttyname(fd)
            break
    return f"shell pid {os.getppid()} on {where}"


def send_main(args: Sequence[str]) -> int:
    """Entry point of `ptysup send`."""
    return _main("send", args, _send)


def budget_main(args: Sequence[str]) -> int:
    """Entry point of `ptysup budget`."""
    return _main("budget", args, _budget)


def stop_main(args: Sequence[str]) -> int:
    """Entry point of `ptysup stop`."""
    return _main("stop", args, _stop)


def _main(
    name: str,
    args: Sequence[str],
    act: Callable[[Path, list[str]], str],
    out: TextIO | None = None,
    err: TextIO | None = None,
    runs_dir: Path = RUNS_DIR,
) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    if args[:1] and args[0] in ("-h", "--help"):
        print(USAGE[name], file=out)
        return 0
    try:
        if not args or args[0].startswith("-"):
            raise _Usage(USAGE[name])
        run = find_run_dir(args[0], runs_dir)
        print(act(run.path, list(args[1:])), file=out)
    except _Usage as exc:
        print(f"ptysup: {exc}", file=err)
        return int(ExitCode.USAGE)
    except (RunNotFound, steer.SteerError) as exc:
        print(f"ptysup: {name}: {exc}", file=err)
        return int(ExitCode.USAGE)
    return 0


def _send(run: Path, words: list[str]) -> str:
    if words[:1] == ["--"]:
        words = words[1:]
    if not words:
        raise _Usage(USAGE["send"])
    text = sys.stdin.read() if words == ["-"] else " ".join(words)
    return steer.send(run, text, source())


def _budget(run: Path, words: list[str]) -> str:
    changes: dict[str, str] = {}
    given = iter(words)
    for word in given:
        option, has_value, value = word.partition("=")
        if option not in BUDGETS:
            raise _Usage(f"budget: unknown option {word!r}; {USAGE['budget']}")
        if not has_value:
            value = next(given, "")
        if not value:
            raise _Usage(f"budget: {option} needs a value (e.g. {option} +10)")
        changes[BUDGETS[option]] = value
    if not changes:
        raise _Usage(f"budget: say which budget to change; {USAGE['budget']}")
    return steer.budget(run, changes, source())


def _stop(run: Path, words: list[str]) -> str:
    if words:
        raise _Usage(USAGE["stop"])
    return steer.stop(run, source())
