"""The pinned Codex CLI binary and a private, offline environment to run it in.

`python -m ptysup.testing.codex_env install` installs the pinned version under
`.tools/codex`; `... path` prints the binary that tests will use; `... env --url URL`
prints the `export` lines of a private CODEX_HOME pointed at the fake model.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ptysup.testing import envcli
from ptysup.testing.pins import CODEX

CODEX_VERSION = CODEX.version
TOOLS_DIR = CODEX.prefix
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
    outer = os.environ if base is None else base
    env = {k: v for k, v in outer.items() if not k.startswith(_STRIPPED_PREFIXES)}
    env.update({"CODEX_HOME": str(codex_home), API_KEY_VAR: api_key})
    if codex_bin is not None:
        rest = env.get("PATH", os.defpath)
        env["PATH"] = os.pathsep.join([str(codex_bin.parent), rest])
    return env


@dataclass(frozen=True)
class CodexEnv:
    """A private CODEX_HOME and the environment that points codex at it."""

    codex_home: Path
    env: Mapping[str, str]
    codex_bin: Path | None

    def argv(self, *args: str) -> list[str]:
        """The command line for the pinned binary (or plain `codex`) with ARGS."""
        return [str(self.codex_bin) if self.codex_bin else "codex", *args]


@contextmanager
def codex_env(
    base_url: str,
    project_dirs: Sequence[Path | str],
    codex_bin: Path | None = None,
    base: Mapping[str, str] | None = None,
) -> Iterator[CodexEnv]:
    """A CodexEnv in a temp dir that is removed on exit; CODEX_BIN defaults to find_codex()."""
    binary = codex_bin if codex_bin is not None else find_codex()
    with tempfile.TemporaryDirectory(prefix="ptysup-codex-") as tmp:
        home = Path(tmp) / "home"
        write_config(home, base_url, project_dirs)
        yield CodexEnv(codex_home=home, env=make_env(home, binary, base), codex_bin=binary)


def main(argv: Sequence[str] | None = None) -> int:
    """`install` installs the pinned Codex CLI; `path` prints the binary in use; `env`
    writes a private CODEX_HOME and prints the shell lines that use it."""
    parser = argparse.ArgumentParser(prog="python -m ptysup.testing.codex_env")
    parser.add_argument("command", choices=["install", "path", "env"])
    parser.add_argument("--url", help="env: the fake model's base URL")
    parser.add_argument("--project", type=Path, action="append", help="env: a folder to trust")
    parser.add_argument("--codex-home", type=Path, help="env: default a new temp dir")
    parser.add_argument(
        "--prefix", type=Path, default=TOOLS_DIR, help="install: where (default .tools/codex)"
    )
    args = parser.parse_args(argv)
    if args.command == "env":
        return _print_env(args.url, args.project or [], args.codex_home)
    return envcli.install_or_path(CODEX, args.command, args.prefix, "Codex CLI", find_codex)


def _print_env(url: str | None, projects: Sequence[Path], codex_home: Path | None) -> int:
    """`env`: write a private CODEX_HOME and print the `export` lines for a shell."""
    if not url:
        print("ptysup: env needs --url (the fake model's base URL)", file=sys.stderr)
        return 2
    codex_home = codex_home or Path(tempfile.mkdtemp(prefix="ptysup-codex-"))
    write_config(codex_home, url, projects)
    env = make_env(codex_home, find_codex(), base=envcli.shell_path())
    return envcli.print_exports(env, _STRIPPED_PREFIXES)


if __name__ == "__main__":
    sys.exit(main())
