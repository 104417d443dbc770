"""Qwen Code's npm launcher, skipped where its second process would be left behind.

Qwen Code 0.24's `qwen` (the package's `cli-entry.js`) never runs the CLI itself: it
starts `node --expose-gc cli.js …` as a child and waits for it. A SIGKILL reaches only the
launcher (the kernel's parent-death signal ptysup gives a supervisor included), and the
child goes on waiting for its model. A `qwen -p` supervisor is therefore started as that
child directly, which ends with ptysup.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

ENTRY = "cli-entry.js"
CLI = "cli.js"


def direct(argv: Sequence[str]) -> list[str]:
    """ARGV with the `qwen` launcher replaced by what it would start (node, --expose-gc,
    the package's cli.js); ARGV as it is when the launcher is not the npm package's."""
    found = shutil.which(argv[0]) if argv else None
    node = shutil.which("node")
    if found is None or node is None:
        return list(argv)
    entry = Path(os.path.realpath(found))
    cli = entry.with_name(CLI)
    if entry.name != ENTRY or not cli.is_file():
        return list(argv)
    return [node, "--expose-gc", str(cli), *argv[1:]]
