"""The pinned Qwen Code and a private, offline environment to run it in.

`python -m ptysup.testing.qwen_env install` installs the pinned version under
`.tools/qwen-code`; `... path` prints the binary that tests will use; `... env --url URL`
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
from ptysup.testing.pins import QWEN

QWEN_CODE_VERSION = QWEN.version
MODEL = "fake-model"
TEST_API_KEY = "sk-fake-qwen"

# Outer variables that would leak a real account or endpoint into the child (OPENAI_API_KEY,
# OPENAI_BASE_URL, DASHSCOPE_API_KEY), or point it at another home or settings file.
_STRIPPED_PREFIXES = ("OPENAI_", "QWEN_", "DASHSCOPE_")


# $PTYSUP_QWEN_BIN, else the project-local pinned install, else `qwen` on PATH.
find_qwen = QWEN.find
# The pinned Qwen Code, installed under .tools/qwen-code (npm) unless it is there.
install_qwen = QWEN.install


# The user settings of the private home: the key comes from the environment (no auth
# dialog), the approval mode is asked for ("auto", the default, would have a classifier
# model judge each tool call), no follow-up suggestion pre-filled in the input box, none of
# the welcome-back, feedback or auto-mode notices, no update check or usage statistics, no
# background memory agents (model calls after every turn), and its own grep: npm installs
# the bundled ripgrep without its execute bit, and the fallback's notice fills the screen.
SETTINGS: Mapping[str, object] = {
    "security": {"auth": {"selectedType": "openai"}},
    "ui": {
        "autoModeAcknowledged": True,
        "enableFollowupSuggestions": False,
        "enableWelcomeBack": False,
        "enableUserFeedback": False,
    },
    "tools": {"approvalMode": "default", "useRipgrep": False},
    "memory": {
        "enableManagedAutoMemory": False,
        "enableManagedAutoDream": False,
        "enableAutoSkill": False,
    },
    "general": {"enableAutoUpdate": False},
    "privacy": {"usageStatisticsEnabled": False},
}


def write_config(home: Path) -> None:
    """Fill HOME so Qwen Code (its config in HOME/.qwen) starts straight at its input box."""
    config = home / ".qwen"
    config.mkdir(parents=True, exist_ok=True)
    (config / "settings.json").write_text(json.dumps(SETTINGS, indent=2), encoding="utf-8")


def make_env(
    base_url: str,
    home: Path,
    qwen_bin: Path | None = None,
    base: Mapping[str, str] | None = None,
    api_key: str = TEST_API_KEY,
) -> dict[str, str]:
    """The environment for running qwen offline against BASE_URL (its `/v1` added), with
    HOME and QWEN_HOME in the private home."""
    variables = {
        "OPENAI_BASE_URL": f"{base_url.rstrip('/')}/v1",
        "OPENAI_API_KEY": api_key,
        "OPENAI_MODEL": MODEL,
        "HOME": str(home),
        "QWEN_HOME": str(home / ".qwen"),
    }
    return offline_env(base, _STRIPPED_PREFIXES, qwen_bin, variables)


def qwen_env(
    base_url: str, qwen_bin: Path | None = None, base: Mapping[str, str] | None = None
) -> AbstractContextManager[AgentEnv]:
    """A private home (removed on exit) and its environment; QWEN_BIN defaults to
    find_qwen()."""

    def fill(home: Path, binary: Path | None) -> dict[str, str]:
        write_config(home)
        return make_env(base_url, home, binary, base)

    return private_env(QWEN, qwen_bin, fill)


def main(argv: Sequence[str] | None = None) -> int:
    """`install` installs the pinned Qwen Code; `path` prints the binary in use."""
    args = envcli.parser(QWEN, "--home", "HOME", projects=False).parse_args(argv)
    if args.command == "env":
        return _print_env(args.url, args.home)
    return envcli.install_or_path(QWEN, args.command, args.prefix, "Qwen Code", find_qwen)


def _print_env(url: str | None, home: Path | None) -> int:
    """`env`: write a private home and print the `export` lines for a shell."""

    def env_for(url: str, home: Path) -> dict[str, str]:
        write_config(home)
        return make_env(url, home, find_qwen(), base=envcli.shell_path())

    return envcli.print_env(QWEN, url, home, env_for, _STRIPPED_PREFIXES)


if __name__ == "__main__":
    sys.exit(main())
