"""The agents the tests run, pinned: how a pin is installed and found.

Each agent's folder names its pin (`RELEASE` in ptysup/agents/<name>/testkit.py); the
registry gives them here. CI's end-to-end tests run these releases; `scripts/test-lane.sh`
runs the same tests against the previous pins or each package's newest release instead
(ptysup/testing/lanes.py). Each pin's `bin_env` variable, when set, names the binary the
tests use instead of the pinned one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ptysup.agents import registry
from ptysup.agents.release import Release

REPO_DIR = Path(__file__).resolve().parents[2]
TOOLS_ENV_VAR = "PTYSUP_TOOLS_DIR"


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where a PyPI pin's virtualenv is kept between clones of the repository:
    $XDG_CACHE_HOME/ptysup (default ~/.cache/ptysup)."""
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ptysup"


def tools_dir(env: Mapping[str, str] | None = None, repo: Path = REPO_DIR) -> Path:
    """Where the pinned agents are installed: $PTYSUP_TOOLS_DIR (the repository's scripts
    set it to the checkout's .tools), else the checkout's .tools when this ptysup runs
    from one, else (an installed ptysup: its files are in site-packages, no checkout
    above them) a folder in the cache."""
    env = os.environ if env is None else env
    if env.get(TOOLS_ENV_VAR):
        return Path(env[TOOLS_ENV_VAR])
    if (repo / "pyproject.toml").is_file() and (repo / "ptysup").is_dir():
        return repo / ".tools"
    return cache_dir(env) / "tools"


TOOLS_DIR = tools_dir()


@dataclass(frozen=True)
class Pin:
    """One agent's pinned npm release (or, with `pip`, PyPI release in a virtualenv)."""

    name: str  # the registry's agent name
    package: str
    version: str
    bin_name: str  # the launcher under node_modules/.bin (a virtualenv's bin/)
    bin_env: str  # names another binary for the tests (scripts/test-latest.sh sets it)
    folder: str  # under .tools/
    pip: bool = False  # a PyPI package, in a virtualenv of its own
    python_below: tuple[int, int] = (99, 0)  # a PyPI package's newest Python, excluded
    previous: str | None = None  # the compatibility lane's release (Release.previous)

    @classmethod
    def of(cls, name: str, release: Release) -> Pin:
        """The pin of agent NAME's RELEASE; its binary is overridden by $PTYSUP_<NAME>_BIN."""
        bin_env = f"PTYSUP_{name.upper()}_BIN"
        fields = (release.package, release.version, release.bin_name, bin_env, release.folder)
        return cls(name, *fields, release.pip, release.python_below, release.previous)

    @property
    def prefix(self) -> Path:
        """Where `npm install --prefix` (or the virtualenv) puts the pinned release."""
        return TOOLS_DIR / self.folder

    def local_bin(self, prefix: Path | None = None) -> Path:
        """The launcher installed under `prefix` (default: the pinned one's)."""
        if self.pip:
            return (prefix or self.prefix) / "bin" / self.bin_name
        return (prefix or self.prefix) / "node_modules" / ".bin" / self.bin_name

    def installed_version(self, prefix: Path | None = None) -> str | None:
        """The release installed under `prefix`, from its package.json (or its wheel's
        dist-info folder), or None."""
        if self.pip:
            return _dist_version((prefix or self.prefix), self.package)
        package_json = (prefix or self.prefix) / "node_modules" / self.package / "package.json"
        try:
            version = json.loads(package_json.read_text(encoding="utf-8")).get("version")
        except (OSError, ValueError):
            return None
        return version if isinstance(version, str) else None

    def find(self) -> Path | None:
        """$`bin_env`, else the project-local pinned install, else the launcher on PATH."""
        configured = os.environ.get(self.bin_env)
        if configured:
            return Path(configured)
        local = self.local_bin()
        if local.exists():
            return local
        found = shutil.which(self.bin_name)
        return Path(found) if found else None

    def install(self, prefix: Path | None = None) -> Path:
        """Install the pinned release under `prefix` (npm) unless it is already there."""
        if self.pip:
            return self._pip_install(prefix)
        prefix = prefix or self.prefix
        binary = self.local_bin(prefix)
        if self.installed_version(prefix) == self.version and binary.exists():
            return binary
        npm = shutil.which("npm")
        if npm is None:
            raise FileNotFoundError(f"npm is needed to install {self.package} and is not on PATH")
        prefix.mkdir(parents=True, exist_ok=True)
        argv = [npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix)]
        subprocess.run([*argv, f"{self.package}@{self.version}"], check=True, stdout=sys.stderr)
        if not binary.exists():
            raise FileNotFoundError(f"npm install finished but {binary} is missing")
        return binary

    def _pip_install(self, prefix: Path | None) -> Path:
        """A virtualenv with the pinned release: at `prefix` if given, else one kept by
        version under cache_dir() (a fresh clone, CI's, reuses it: the install is ~700 MB
        and half a minute) and linked from .tools/. Its Python is the one running this."""
        if prefix is not None and prefix != self.prefix:
            return self._venv(prefix)
        kept = cache_dir() / f"{self.folder}-{self.version}"
        binary = self._venv(kept)
        link = self.prefix
        if link.is_symlink() or link.exists():
            if link.resolve() == kept.resolve():
                return self.local_bin(link)
            if link.is_symlink():
                link.unlink()
            else:
                shutil.rmtree(link)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(kept, target_is_directory=True)
        return binary if binary.exists() else self.local_bin(link)

    def _venv(self, prefix: Path) -> Path:
        binary = self.local_bin(prefix)
        python = prefix / "bin" / "python"
        if self.installed_version(prefix) == self.version and binary.exists() and python.exists():
            return binary
        subprocess.run([self._python(), "-m", "venv", "--clear", str(prefix)], check=True)
        pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        subprocess.run([*pip, f"{self.package}=={self.version}"], check=True, stdout=sys.stderr)
        if not binary.exists():
            raise FileNotFoundError(f"pip install finished but {binary} is missing")
        return binary

    def _python(self) -> str:
        """The Python the package runs on: this one, else the newest python3.N on PATH
        that it supports."""
        if sys.version_info[:2] < self.python_below:
            return sys.executable
        major, below = self.python_below
        for minor in range(below - 1, 9, -1):
            found = shutil.which(f"python{major}.{minor}")
            if found:
                return found
        raise FileNotFoundError(
            f"{self.package} {self.version} needs a Python below {major}.{below} on PATH"
        )


def _dist_version(prefix: Path, package: str) -> str | None:
    """The version of PACKAGE installed in the virtualenv at PREFIX, from the name of its
    `<name>-<version>.dist-info` folder."""
    name = package.replace("-", "_").lower()
    for info in prefix.glob("lib/python*/site-packages/*.dist-info"):
        dist, _, version = info.name[: -len(".dist-info")].partition("-")
        if dist.lower() == name and version:
            return version
    return None


# Every agent tested against its real binary, in the registry's order.
PINS: tuple[Pin, ...] = tuple(
    Pin.of(agent.name, agent.release) for agent in registry.AGENTS if agent.release
)


def pin(name: str) -> Pin:
    """The pin of the agent called NAME (KeyError for one without a pin)."""
    for found in PINS:
        if found.name == name:
            return found
    raise KeyError(name)
