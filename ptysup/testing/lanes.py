"""Run the end-to-end tests against other releases of the agents than the pinned ones.

    scripts/test-lane.sh previous [PYTEST ARGS]   the pins before the current ones
    scripts/test-lane.sh latest [PYTEST ARGS]     each package's newest release

`previous` is the compatibility lane: each agent whose pin moved lately keeps its former
release (`Release.previous`), which most people still have installed; `latest` asks npm
for each pinned package's newest version (`npm view PACKAGE version`; pip for a PyPI pin:
`pip index versions PACKAGE`). Either installs each release into its own folder under
.tools/lanes/ (kept between runs: a release is installed once) and runs scripts/test.sh's
end-to-end tests with each pin's `bin_env` variable naming that binary; an agent whose
lane release is its pin runs the pinned install. The pinned installs are not touched.
Prints which releases it tested.
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

LANES_DIR = TOOLS_DIR / "lanes"
LANES = ("previous", "latest")


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


def release(pin: Pin, lane: str, npm: str) -> str:
    """The release LANE tests of PIN's package."""
    if lane == "previous":
        return pin.previous or pin.version
    return newest(pin, npm)


def install(pin: Pin, version: str, npm: str, root: Path = LANES_DIR) -> Path:
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
    """Install LANE's releases and run the end-to-end tests on them."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in LANES:
        print(
            f"ptysup: usage: scripts/test-lane.sh {'|'.join(LANES)} [PYTEST ARGS]", file=sys.stderr
        )
        return 2
    lane, rest = args[0], args[1:]
    npm = shutil.which("npm")
    if npm is None:
        print("ptysup: test-lane needs npm on PATH", file=sys.stderr)
        return 2
    env = dict(os.environ)
    tested = []
    for pin in PINS:
        try:
            version = release(pin, lane, npm)
            if version != pin.version:
                env[pin.bin_env] = str(install(pin, version, npm))
        except (OSError, subprocess.CalledProcessError) as exc:
            print(
                f"ptysup: cannot install {pin.package} for the {lane} lane: {exc}", file=sys.stderr
            )
            return 1
        tested.append(
            f"{pin.name} {version}" + ("" if version == pin.version else f" (pinned {pin.version})")
        )
    said = f"test-lane {lane}: " + "; ".join(tested)
    print(said, file=sys.stderr)
    test = [str(REPO_DIR / "scripts" / "test.sh"), *(rest or ["-m", "e2e", "tests/e2e"])]
    code = subprocess.call(["bash", *test], env=env, cwd=REPO_DIR)
    print(f"{said}: exit {code}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
