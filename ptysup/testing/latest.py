"""Run the end-to-end tests against the newest release of every agent, not the pinned one.

    scripts/test-latest.sh [PYTEST ARGS]

Asks npm for each pinned package's newest version (`npm view PACKAGE version`; pip for a
PyPI pin: `pip index versions PACKAGE`), installs it into its own folder under
.tools/latest/ (kept between runs: a release is installed once), and runs
scripts/test.sh's end-to-end tests with each pin's `bin_env` variable naming that binary.
The pinned installs are not touched. Prints which releases it tested.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from ptysup.testing.pins import PINS, REPO_DIR, TOOLS_DIR, Pin

LATEST_DIR = TOOLS_DIR / "latest"


def newest(pin: Pin, npm: str) -> str:
    """The package's newest release, as npm's registry (or PyPI) says."""
    if pin.pip:
        argv = [sys.executable, "-m", "pip", "index", "versions", pin.package]
        done = subprocess.run(argv, capture_output=True, text=True, check=True)
        found = re.match(rf"{re.escape(pin.package)} \(([^)]+)\)", done.stdout.strip())
        if found is None:
            raise OSError(f"pip index printed no version of {pin.package}")
        return found.group(1)
    done = subprocess.run(
        [npm, "view", pin.package, "version"], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def install(pin: Pin, version: str, npm: str, root: Path = LATEST_DIR) -> Path:
    """That release, installed under `root` once; its launcher."""
    prefix = root / f"{pin.folder}-{version}"
    if pin.pip:  # a virtualenv of its own
        return dataclasses.replace(pin, version=version).install(prefix)
    binary = pin.local_bin(prefix)
    if not binary.exists():
        prefix.mkdir(parents=True, exist_ok=True)
        argv = [npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix)]
        subprocess.run([*argv, f"{pin.package}@{version}"], check=True, stdout=sys.stderr)
    return binary


def main(argv: Sequence[str] | None = None) -> int:
    """Install the newest releases and run the end-to-end tests on them."""
    args = list(sys.argv[1:] if argv is None else argv)
    npm = shutil.which("npm")
    if npm is None:
        print("ptysup: test-latest needs npm on PATH", file=sys.stderr)
        return 2
    env = dict(os.environ)
    tested = []
    for pin in PINS:
        try:
            version = newest(pin, npm)
            env[pin.bin_env] = str(install(pin, version, npm))
        except (OSError, subprocess.CalledProcessError) as exc:
            print(f"ptysup: cannot install the newest {pin.package}: {exc}", file=sys.stderr)
            return 1
        tested.append(f"{pin.name} {version} (pinned {pin.version})")
    print("test-latest: " + "; ".join(tested), file=sys.stderr)
    test = [str(REPO_DIR / "scripts" / "test.sh"), *(args or ["-m", "e2e", "tests/e2e"])]
    code = subprocess.call(["bash", *test], env=env, cwd=REPO_DIR)
    print("test-latest: " + "; ".join(tested) + f": exit {code}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
