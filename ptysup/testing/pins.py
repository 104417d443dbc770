"""The agents the tests run, pinned: their npm package, release and launcher.

CI's end-to-end tests run these releases; `scripts/test-latest.sh` runs the same tests
against each package's newest release instead (ptysup/testing/latest.py). Each pin's
`bin_env` variable, when set, names the binary the tests use instead of the pinned one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parents[2]
TOOLS_DIR = REPO_DIR / ".tools"


@dataclass(frozen=True)
class Pin:
    """One agent's pinned npm release."""

    name: str  # the registry's agent name
    package: str
    version: str
    bin_name: str  # the launcher under node_modules/.bin
    bin_env: str  # names another binary for the tests (scripts/test-latest.sh sets it)
    folder: str  # under .tools/

    @property
    def prefix(self) -> Path:
        """Where `npm install --prefix` puts the pinned release."""
        return TOOLS_DIR / self.folder

    def local_bin(self, prefix: Path | None = None) -> Path:
        """The launcher npm installs under `prefix` (default: the pinned one's)."""
        return (prefix or self.prefix) / "node_modules" / ".bin" / self.bin_name

    def installed_version(self, prefix: Path | None = None) -> str | None:
        """The release installed under `prefix`, from its package.json, or None."""
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


CLAUDE = Pin(
    "claude", "@anthropic-ai/claude-code", "2.1.197", "claude", "PTYSUP_CLAUDE_BIN", "claude-code"
)
GEMINI = Pin("gemini", "@google/gemini-cli", "0.61.0", "gemini", "PTYSUP_GEMINI_BIN", "gemini-cli")
CODEX = Pin("codex", "@openai/codex", "0.169.0", "codex", "PTYSUP_CODEX_BIN", "codex")
QWEN = Pin("qwen", "@qwen-code/qwen-code", "0.24.4", "qwen", "PTYSUP_QWEN_BIN", "qwen-code")
OPENCODE = Pin("opencode", "opencode-ai", "1.18.33", "opencode", "PTYSUP_OPENCODE_BIN", "opencode")
PINS: tuple[Pin, ...] = (CLAUDE, GEMINI, CODEX, QWEN, OPENCODE)
