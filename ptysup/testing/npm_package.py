"""A pinned npm package installed under a prefix of its own in `.tools/` (the agents the
tests drive, the linters): is it there, at which version, and installing it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class NpmPackage:
    """One package at one version, and the command it puts in `node_modules/.bin`."""

    name: str  # e.g. "@openai/codex"
    version: str
    command: str | None = None  # None: a library, no command

    def local_bin(self, prefix: Path) -> Path:
        """Where `npm install --prefix PREFIX` puts the command's launcher."""
        return prefix / "node_modules" / ".bin" / (self.command or self.name.rsplit("/", 1)[-1])

    def installed_version(self, prefix: Path) -> str | None:
        """The version installed under PREFIX, from its package.json, or None."""
        package_json = prefix / "node_modules" / Path(*self.name.split("/")) / "package.json"
        try:
            version = json.loads(package_json.read_text(encoding="utf-8")).get("version")
        except (OSError, ValueError, AttributeError):
            return None
        return version if isinstance(version, str) else None

    def install(self, prefix: Path) -> Path:
        """Install the pinned version under PREFIX unless it is already there; the command
        (or, for a library, the package's folder). npm's output goes to stderr."""
        binary = self.local_bin(prefix) if self.command else prefix / "node_modules" / self.name
        if self.installed_version(prefix) == self.version and binary.exists():
            return binary
        npm = shutil.which("npm")
        if npm is None:
            raise FileNotFoundError(f"npm is needed to install {self.name} and is not on PATH")
        prefix.mkdir(parents=True, exist_ok=True)
        argv = [npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix)]
        subprocess.run([*argv, f"{self.name}@{self.version}"], check=True, stdout=sys.stderr)
        if not binary.exists():
            raise FileNotFoundError(f"npm install finished but {binary} is missing")
        return binary
