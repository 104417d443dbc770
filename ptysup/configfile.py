"""Option defaults from `.ptysup.yaml` or `[tool.ptysup]` in pyproject.toml.

Looked up in the working directory, then in each parent up to the repository root (the
folder holding .git), so a run started in a subfolder finds the project's file. Keys are
option names (`max-iter` or `max_iter`); values as on the command line. The
command line and PTYSUP_* variables both win over the file.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ptysup.config import ConfigError

YAML_NAME = ".ptysup.yaml"

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]


def find(cwd: Path) -> Path | None:
    """The config file that applies in `cwd`: .ptysup.yaml, else a pyproject.toml with
    a [tool.ptysup] table; in `cwd`, else in each parent up to the repository root."""
    for folder in _up_to_repo_root(cwd):
        yaml_path = folder / YAML_NAME
        if yaml_path.exists():
            return yaml_path
        pyproject = folder / "pyproject.toml"
        if pyproject.exists() and "[tool.ptysup" in _read(pyproject):
            return pyproject
    return None


def _up_to_repo_root(cwd: Path) -> list[Path]:
    """`cwd` and its parents up to the one holding .git; only `cwd` outside a repository."""
    chain = [cwd, *cwd.parents]
    for i, folder in enumerate(chain):
        if (folder / ".git").exists():
            return chain[: i + 1]
    return [cwd]


def load(path: Path, known: Iterable[str]) -> dict[str, Any]:
    """The option defaults in `path`, keyed by parameter name; ConfigError if unusable."""
    import yaml  # only when there is a file: `ptysup --help` starts faster

    text = _read(path)
    try:
        if path.suffix == ".toml":
            data: Any = tomllib.loads(text).get("tool", {}).get("ptysup", {})
        else:
            data = yaml.safe_load(text) or {}
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        first = " ".join(str(exc).split())[:200]
        raise ConfigError(f"cannot parse {path}: {first}") from exc
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: expected a table of options")
    names = set(known)
    values: dict[str, Any] = {}
    for key, value in data.items():
        name = option_name(key)
        if name not in names:
            raise ConfigError(f"{path}: unknown option {key!r}")
        values[name] = value
    return values


def option_name(key: object) -> str:
    """A key of a config file or plan as the option's parameter name (`max-iter` → `max_iter`)."""
    return str(key).replace("-", "_")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise ConfigError(f"cannot read {path}: {reason}") from exc
