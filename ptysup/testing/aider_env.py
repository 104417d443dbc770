"""The pinned aider and a private, offline environment to run it in.

`python -m ptysup.testing.aider_env install` installs the pinned version into a virtualenv
of its own (kept under ~/.cache/ptysup, linked from `.tools/aider`: see pins.py); `... path`
prints the binary that tests will use; `... env --url URL` prints the `export` lines of a
private home pointed at a fake model.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from ptysup.testing import envcli
from ptysup.testing.agenthome import AgentEnv, offline_env, private_env
from ptysup.testing.pins import AIDER

AIDER_VERSION = AIDER.version
MODEL = "openai/fake-model"  # litellm's `openai/` provider: any OpenAI-compatible endpoint
TEST_API_KEY = "sk-fake-aider"

# Outer variables that would leak a real option, account or endpoint into the child:
# aider reads every `AIDER_<OPTION>` as an option, and litellm OpenAI's variables for the
# `openai/` model. (Anthropic's are left: a `claude -p` supervisor beside it needs them.)
_STRIPPED_PREFIXES = ("AIDER_", "OPENAI_", "OPENROUTER_")


# $PTYSUP_AIDER_BIN, else the project-local pinned install, else `aider` on PATH.
find_aider = AIDER.find
# The pinned aider, in its virtualenv (pip) unless it is there.
install_aider = AIDER.install


# aider 0.86 fetches litellm's model prices from GitHub at each start unless its cache
# (HOME/.aider/caches, a day old at most) holds some: offline that prints an error, and
# waits up to 5 s where a name lookup hangs. The fake model's entry fills it.
PRICES: Mapping[str, object] = {
    "fake-model": {
        "litellm_provider": "openai",
        "mode": "chat",
        "max_input_tokens": 128_000,
        "max_output_tokens": 8_192,
        "input_cost_per_token": 0,
        "output_cost_per_token": 0,
    }
}


def write_config(home: Path) -> None:
    """Fill HOME: a git identity (aider's commits need no question and print no hint),
    and the model-price cache that keeps its start offline."""
    home.mkdir(parents=True, exist_ok=True)
    (home / ".gitconfig").write_text(
        "[user]\n\tname = ptysup test\n\temail = ptysup-test@example.invalid\n", encoding="utf-8"
    )
    caches = home / ".aider" / "caches"
    caches.mkdir(parents=True, exist_ok=True)
    prices = caches / "model_prices_and_context_window.json"
    prices.write_text(json.dumps(PRICES), encoding="utf-8")


def make_env(
    base_url: str,
    home: Path,
    aider_bin: Path | None = None,
    base: Mapping[str, str] | None = None,
    api_key: str = TEST_API_KEY,
) -> dict[str, str]:
    """The environment for running aider offline against BASE_URL (its `/v1` added), with
    HOME in the private home. The model and its endpoint are options given as aider's
    environment variables, so the command line stays `aider`; the edit format is `diff`
    (a new file is a SEARCH/REPLACE block with an empty SEARCH)."""
    variables = {
        "AIDER_MODEL": MODEL,
        "AIDER_OPENAI_API_BASE": f"{base_url.rstrip('/')}/v1",
        "AIDER_OPENAI_API_KEY": api_key,
        "AIDER_EDIT_FORMAT": "diff",
        "HOME": str(home),
    }
    return offline_env(base, _STRIPPED_PREFIXES, aider_bin, variables)


def aider_env(
    base_url: str, aider_bin: Path | None = None, base: Mapping[str, str] | None = None
) -> AbstractContextManager[AgentEnv]:
    """A private home (removed on exit) and its environment; AIDER_BIN defaults to
    find_aider()."""

    def fill(home: Path, binary: Path | None) -> dict[str, str]:
        write_config(home)
        return make_env(base_url, home, binary, base)

    return private_env(AIDER, aider_bin, fill)


def main(argv: Sequence[str] | None = None) -> int:
    """`install` installs the pinned aider; `path` prints the binary in use."""
    args = envcli.parser(AIDER, "--home", "HOME", projects=False).parse_args(argv)
    if args.command == "env":
        return _print_env(args.url, args.home)
    return envcli.install_or_path(AIDER, args.command, args.prefix, "aider", find_aider)


def _print_env(url: str | None, home: Path | None) -> int:
    """`env`: write a private home and print the `export` lines for a shell."""

    def env_for(url: str, home: Path) -> dict[str, str]:
        write_config(home)
        return make_env(url, home, find_aider(), base=envcli.shell_path())

    return envcli.print_env(AIDER, url, home, env_for, _STRIPPED_PREFIXES)


if __name__ == "__main__":
    sys.exit(main())
