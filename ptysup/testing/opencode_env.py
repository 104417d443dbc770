"""The pinned opencode and a private, offline environment to run it in.

`python -m ptysup.testing.opencode_env install` installs the pinned version under
`.tools/opencode`; `... path` prints the binary that tests will use; `... env --url URL`
prints the `export` lines of a private home pointed at a fake model.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from ptysup.testing import envcli
from ptysup.testing.agenthome import AgentEnv, offline_env, private_env
from ptysup.testing.pins import OPENCODE

OPENCODE_VERSION = OPENCODE.version
PROVIDER = "fake"
MODEL = "fake-model"
TEST_API_KEY = "sk-fake-opencode"
# Names the private home in the environment, so the tests find what a run left running
# (opencode itself ignores it).
HOME_MARKER = "OPENCODE_PTYSUP_TEST_HOME"  # not PTYSUP_: ptysup warns of those it does not know

# Outer variables that would point the child at another config, data dir or account.
_STRIPPED_PREFIXES = ("OPENCODE_", "XDG_")


# $PTYSUP_OPENCODE_BIN, else the project-local pinned install, else `opencode` on PATH.
find_opencode = OPENCODE.find
# The pinned opencode, installed under .tools/opencode (npm) unless it is there.
install_opencode = OPENCODE.install


def config(base_url: str, approvals: bool = True) -> dict[str, object]:
    """The global opencode.json: the fake model as an OpenAI-compatible provider (built
    in, nothing is downloaded), the same model for titles, no update or sharing, and with
    APPROVALS, approvals asked for edits and shell commands (by default opencode runs
    them: the demo does)."""
    model = {"name": "Fake Model", "tool_call": True, "limit": {"context": 200000, "output": 8000}}
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "Fake",
        "options": {"baseURL": f"{base_url.rstrip('/')}/v1", "apiKey": TEST_API_KEY},
        "models": {MODEL: model},
    }
    made: dict[str, object] = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "model": f"{PROVIDER}/{MODEL}",
        "small_model": f"{PROVIDER}/{MODEL}",
        "provider": {PROVIDER: provider},
    }
    if approvals:
        made["permission"] = {"bash": "ask", "edit": "ask"}
    return made


def xdg(home: Path) -> dict[str, str]:
    """The XDG directories of the private home (opencode keeps everything under them)."""
    parts = {"CONFIG": "config", "DATA": "data", "CACHE": "cache", "STATE": "state"}
    return {f"XDG_{key}_HOME": str(home / sub) for key, sub in parts.items()}


def write_config(home: Path, base_url: str, approvals: bool = True) -> None:
    """Fill HOME so opencode starts straight at its input box with the fake model."""
    folder = home / "config" / "opencode"
    folder.mkdir(parents=True, exist_ok=True)
    text = json.dumps(config(base_url, approvals), indent=2)
    (folder / "opencode.json").write_text(text, encoding="utf-8")


def make_env(
    home: Path, opencode_bin: Path | None = None, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment for running opencode offline with its XDG directories in HOME."""
    variables = {**xdg(home), HOME_MARKER: str(home)}
    return offline_env(base, _STRIPPED_PREFIXES, opencode_bin, variables)


def opencode_env(
    base_url: str,
    opencode_bin: Path | None = None,
    base: Mapping[str, str] | None = None,
    approvals: bool = True,
) -> AbstractContextManager[AgentEnv]:
    """A private home (removed on exit) and its environment; OPENCODE_BIN defaults to
    find_opencode(); BASE (default os.environ) is the environment it goes on top of;
    APPROVALS: see config()."""

    def fill(home: Path, binary: Path | None) -> dict[str, str]:
        write_config(home, base_url, approvals)
        return make_env(home, binary, base)

    return private_env(OPENCODE, opencode_bin, fill)


def main(argv: Sequence[str] | None = None) -> int:
    """`install` installs the pinned opencode; `path` prints the binary in use."""
    args = envcli.parser(OPENCODE, "--home", "HOME", projects=False).parse_args(argv)
    if args.command == "env":
        return _print_env(args.url, args.home)
    return envcli.install_or_path(OPENCODE, args.command, args.prefix, "opencode", find_opencode)


def _print_env(url: str | None, home: Path | None) -> int:
    """`env`: write a private home and print the `export` lines for a shell."""

    def env_for(url: str, home: Path) -> dict[str, str]:
        write_config(home, url)
        return make_env(home, find_opencode(), base=envcli.shell_path())

    return envcli.print_env(OPENCODE, url, home, env_for, _STRIPPED_PREFIXES)


if __name__ == "__main__":
    sys.exit(main())
