"""The pinned Codex CLI binary and a private, offline environment to run it in.

`python -m ptysup.testing.codex_env install` installs the pinned version under
`.tools/codex`; `... path` prints the binary that tests will use; `... env --url URL`
prints the `export` lines of a private CODEX_HOME pointed at the fake model.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from ptysup.testing import envcli
from ptysup.testing.agenthome import AgentEnv, offline_env, private_env
from ptysup.testing.pins import CODEX

CODEX_VERSION = CODEX.version
BIN_ENV_VAR = CODEX.bin_env
MODEL = "fake-model"
PROVIDER = "ptysup-fake"
# The provider's `env_key`: Codex sends its value as the bearer token.
API_KEY_VAR = "FAKE_MODEL_API_KEY"
TEST_API_KEY = "sk-fake-codex"

# Outer variables with these prefixes would leak a real account or endpoint (OPENAI_API_KEY,
# OPENAI_BASE_URL) or another Codex's home into the child.
_STRIPPED_PREFIXES = ("OPENAI_", "CODEX_")


# $PTYSUP_CODEX_BIN, else the project-local pinned install, else `codex` on PATH.
find_codex = CODEX.find
# The pinned Codex CLI, installed under .tools/codex (npm) unless it is there.
install_codex = CODEX.install


def _toml(value: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's, for the text written here)."""
    return json.dumps(value, ensure_ascii=False)


def config_toml(base_url: str, project_dirs: Iterable[Path | str]) -> str:
    """The config.toml that points Codex at the fake model and starts it at its input box.

    `wire_api = "responses"`: Codex 0.169 rejects `chat`. No retries: a scripted error is
    shown at once (Codex would retry a 500 several times, with backoff). The projects are
    trusted (else a git repo opens on "Trust this folder?"), the update check is off, and
    so is the login-shell snapshot.
    """
    lines = [
        f"model = {_toml(MODEL)}",
        f"model_provider = {_toml(PROVIDER)}",
        'approval_policy = "on-request"',
        'sandbox_mode = "workspace-write"',
        "check_for_update_on_startup = false",
        "",
        f"[model_providers.{PROVIDER}]",
        'name = "ptysup fake model"',
        f"base_url = {_toml(base_url.rstrip('/') + '/v1')}",
        'wire_api = "responses"',
        f"env_key = {_toml(API_KEY_VAR)}",
        "request_max_retries = 0",
        "stream_max_retries = 0",
        "",
        # Codex snapshots the person's login shell at start (bash -l): a ~/.bashrc that
        # starts background jobs (pyenv's rehash) leaves them running, with CODEX_HOME in
        # their environment, a moment after Codex is gone. Not Codex's own processes, and
        # not wanted in a private, offline test home.
        "[features]",
        "shell_snapshot = false",
    ]
    for project in project_dirs:
        lines += ["", f"[projects.{_toml(str(Path(project).resolve()))}]"]
        lines.append('trust_level = "trusted"')
    return "\n".join(lines) + "\n"


def write_config(codex_home: Path, base_url: str, project_dirs: Iterable[Path | str]) -> None:
    """Fill CODEX_HOME so Codex starts straight at its input box, talking to BASE_URL."""
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(config_toml(base_url, project_dirs), encoding="utf-8")


def make_env(
    codex_home: Path,
    codex_bin: Path | None = None,
    base: Mapping[str, str] | None = None,
    api_key: str = TEST_API_KEY,
) -> dict[str, str]:
    """The environment for running codex offline with the config in CODEX_HOME."""
    variables = {"CODEX_HOME": str(codex_home), API_KEY_VAR: api_key}
    return offline_env(base, _STRIPPED_PREFIXES, codex_bin, variables)


def codex_env(
    base_url: str,
    project_dirs: Sequence[Path | str],
    codex_bin: Path | None = None,
    base: Mapping[str, str] | None = None,
) -> AbstractContextManager[AgentEnv]:
    """A private CODEX_HOME (removed on exit) and its environment; CODEX_BIN defaults to
    find_codex()."""

    def fill(home: Path, binary: Path | None) -> dict[str, str]:
        write_config(home, base_url, project_dirs)
        return make_env(home, binary, base)

    return private_env(CODEX, codex_bin, fill)


def main(argv: Sequence[str] | None = None) -> int:
    """`install` installs the pinned Codex CLI; `path` prints the binary in use; `env`
    writes a private CODEX_HOME and prints the shell lines that use it."""
    args = envcli.parser(CODEX, "--codex-home", "CODEX_HOME", projects=True).parse_args(argv)
    if args.command == "env":
        return _print_env(args.url, args.project or [], args.codex_home)
    return envcli.install_or_path(CODEX, args.command, args.prefix, "Codex CLI", find_codex)


def _print_env(url: str | None, projects: Sequence[Path], codex_home: Path | None) -> int:
    """`env`: write a private CODEX_HOME and print the `export` lines for a shell."""

    def env_for(url: str, codex_home: Path) -> dict[str, str]:
        write_config(codex_home, url, projects)
        return make_env(codex_home, find_codex(), base=envcli.shell_path())

    return envcli.print_env(CODEX, url, codex_home, env_for, _STRIPPED_PREFIXES)


if __name__ == "__main__":
    sys.exit(main())
