"""aider in the tests and the demo: its pinned release (PyPI: a virtualenv of its own, kept
under ~/.cache/ptysup and linked from `.tools/aider`) and a private, offline home pointed at
the fake model (`python -m ptysup.testing.kit aider install|path|env`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from ptysup.agents.release import OfflineHome, Release, Setup, offline_env

# aider-chat 0.86.2 declares Python >=3.10,<3.13.
RELEASE = Release("aider-chat", "0.86.2", "aider", "aider", pip=True, python_below=(3, 13))
MODEL = "openai/fake-model"  # litellm's `openai/` provider: any OpenAI-compatible endpoint
TEST_API_KEY = "sk-fake-aider"

# Outer variables that would leak a real option, account or endpoint into the child:
# aider reads every `AIDER_<OPTION>` as an option, and litellm OpenAI's variables for the
# `openai/` model. (Anthropic's are left: a `claude -p` supervisor beside it needs them.)
_STRIPPED_PREFIXES = ("AIDER_", "OPENAI_", "OPENROUTER_")


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


def fill(
    home: Path, setup: Setup, base: Mapping[str, str] | None, binary: Path | None
) -> dict[str, str]:
    """Write the home and give the environment that runs aider there."""
    write_config(home)
    return make_env(setup.base_url, home, binary, base)


HOME = OfflineHome("aider", _STRIPPED_PREFIXES, fill, "HOME")
