"""The agents the tests run, pinned: their npm package, release and launcher.

CI's end-to-end tests run these releases; `scripts/test-latest.sh` runs the same tests
against each package's newest release instead (ptysup/testing/latest.py). Each pin's
`bin_env` variable, when set, names the binary the tests use instead of the pinned one.
"""

from __future__ import annotations

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


CLAUDE = Pin(
    "claude", "@anthropic-ai/claude-code", "2.1.197", "claude", "PTYSUP_CLAUDE_BIN", "claude-code"
)
GEMINI = Pin("gemini", "@google/gemini-cli", "0.61.0", "gemini", "PTYSUP_GEMINI_BIN", "gemini-cli")
PINS: tuple[Pin, ...] = (CLAUDE, GEMINI)
