"""The pinned Qwen Code and a private, offline environment to run it in.

`python -m ptysup.testing.qwen_env install` installs the pinned version under
`.tools/qwen-code`; `... path` prints the binary that tests will use; `... env --url URL`
prints the `export` lines of a private home pointed at a fake model.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ptysup.testing import envcli
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
    """The environment for running qwen offline against BASE_URL (its `/v1` added)."""
    outer = os.environ if base is None else base
    env = {k: v for k, v in outer.items() if not k.startswith(_STRIPPED_PREFIXES)}
    env.update(
        OPENAI_BASE_URL=f"{base_url.rstrip('/')}/v1",
        OPENAI_API_KEY=api_key,
        OPENAI_MODEL=MODEL,
        HOME=str(home),
        QWEN_HOME=str(home / ".qwen"),
    )
    if qwen_bin is not None:
        rest = env.get("PATH", os.defpath)
        env["PATH"] = os.pathsep.join([str(qwen_bin.parent), rest])
    return env


@dataclass(frozen=True)
class QwenEnv:
    """A private Qwen Code home and the environment that points qwen at it."""

    home: Path
    env: Mapping[str, str]
    qwen_bin: Path | None

    def argv(self, *args: str) -> list[str]:
        """The command line for the pinned binary (or plain `qwen`) with ARGS."""
        return [str(self.qwen_bin) if self.qwen_bin else "qwen", *args]


@contextmanager
def qwen_env(
    base_url: str, qwen_bin: Path | None = None, base: Mapping[str, str] | None = None
) -> Iterator[QwenEnv]:
    """A QwenEnv in a temp dir that is removed on exit; QWEN_BIN defaults to find_qwen()."""
    binary = qwen_bin if qwen_bin is not None else find_qwen()
    with tempfile.TemporaryDirectory(prefix="ptysup-qwen-") as tmp:
        home = Path(tmp) / "home"
        write_config(home)
        env = make_env(base_url, home, binary, base)
        yield QwenEnv(home=home, env=env, qwen_bin=binary)


def main(argv: Sequence[str] | None = None) -> int:
    """`install` installs the pinned Qwen Code; `path` prints the binary in use."""
    parser = argparse.ArgumentParser(prog="python -m ptysup.testing.qwen_env")
    parser.add_argument("command", choices=["install", "path", "env"])
    parser.add_argument("--url", help="env: the fake model's base URL")
    parser.add_argument("--home", type=Path, help="env: HOME; default a new temp dir")
    parser.add_argument(
        "--prefix", type=Path, default=QWEN.prefix, help="install: where (default .tools/)"
    )
    args = parser.parse_args(argv)
    if args.command == "env":
        return _print_env(args.url, args.home)
    return envcli.install_or_path(QWEN, args.command, args.prefix, "Qwen Code", find_qwen)


def _print_env(url: str | None, home: Path | None) -> int:
    """`env`: write a private home and print the `export` lines for a shell."""
    if not url:
        print("ptysup: env needs --url (the fake model's base URL)", file=sys.stderr)
        return 2
    home = home or Path(tempfile.mkdtemp(prefix="ptysup-qwen-"))
    write_config(home)
    env = make_env(url, home, find_qwen(), base=envcli.shell_path())
    return envcli.print_exports(env, _STRIPPED_PREFIXES)


if __name__ == "__main__":
    sys.exit(main())
