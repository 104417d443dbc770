"""`ptysup check FILE`: validate a plan (or a config file) without running anything."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from ptysup.argspec import ArgSpec
from ptysup.cli import configfile
from ptysup.cli.options import checks
from ptysup.cli.planoptions import load
from ptysup.config import ConfigError
from ptysup.exitcodes import ExitCode

USAGE = (
    "usage: ptysup check FILE   (validate a plan, or a .ptysup.yaml / pyproject.toml: "
    "exit 0, or exit 2 with FILE:LINE: problem)"
)
ARGS = ArgSpec(args=("file",))


def main(args: Sequence[str], out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Entry point of `ptysup check FILE`."""
    if args[:1] in (["-h"], ["--help"]):
        print(USAGE, file=out)
        return 0
    if len(args) != 1:
        print(USAGE, file=err)
        return int(ExitCode.USAGE)
    path = Path(args[0])
    try:
        if path.name in (configfile.YAML_NAME, "pyproject.toml"):
            options = configfile.load(path, checks())
            print(f"{args[0]}: ok, {len(options)} option(s)", file=out)
            return 0
        plan = load(path)
    except ConfigError as exc:
        print(f"ptysup: {exc}", file=err)
        return int(ExitCode.USAGE)
    ids = ", ".join(step.id for step in plan.steps)
    print(f"{args[0]}: ok, {len(plan.steps)} step(s): {ids}", file=out)
    return 0
