"""Option defaults from `.ptysup.yaml` or `[tool.ptysup]` in pyproject.toml.

Looked up in the working directory, then in each parent up to the repository root (the
folder holding .git), so a run started in a subfolder finds the project's file. Keys are
option names (`max-iter` or `max_iter`, not both); values as on the command line, each
checked as the command line checks it. The command line and PTYSUP_* variables both win
over the file.
"""

from __future__ import annotations

import difflib
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ptysup import userfile
from ptysup.cli.optioncheck import OptionCheck
from ptysup.config import ConfigError
from ptysup.userfile import InputError, line_of

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


# Options a config file has no use for: the file found is the one used (`config` in it
# would be ignored), and `version` prints the version instead of running.
_NOT_IN_FILE = ("config", "version")


def load(path: Path, checks: Mapping[str, OptionCheck]) -> dict[str, Any]:
    """The option defaults in `path`, keyed by parameter name, each value checked as the
    command line checks it (`checks`: parameter name → check); InputError
    (`FILE:LINE: problem`) if unusable."""
    text = _read(path)
    where = str(path)
    items = _toml_items(text, where) if path.suffix == ".toml" else _yaml_items(text, where)
    values: dict[str, Any] = {}
    seen: dict[str, tuple[int, str]] = {}
    for key, line, value in items:
        name = userfile.key_name(key)
        if name in _NOT_IN_FILE:
            raise InputError(
                where, line, f"`{key}` cannot be set in a config file (only on the command line)"
            )
        check = checks.get(name)
        if check is None:
            close = difflib.get_close_matches(key, [k.replace("_", "-") for k in checks], n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise InputError(where, line, f"unknown option {key!r}{hint}")
        if name in seen:  # TOML's own duplicates are refused by tomllib; its spellings here
            first_line, first = seen[name]
            raise InputError(
                where, line, f"`{key}` is given twice: first at line {first_line} as `{first}`"
            )
        seen[name] = (line, key)
        try:
            check(value)
        except ValueError as exc:
            raise InputError(where, line, f"{key}: {' '.join(str(exc).split())}") from None
        values[name] = value
    return values


def _yaml_items(text: str, where: str) -> list[tuple[str, int, Any]]:
    """(key, line, value) of a YAML config file's table."""
    import yaml  # only when there is a file: `ptysup --help` starts faster

    root = userfile.compose_yaml(text, where)
    if root is None:
        return []
    if not isinstance(root, yaml.MappingNode):
        raise InputError(where, line_of(root), "expected a table of options (key: value)")
    return [(key, line_of(k), userfile.construct(v)) for key, k, v in userfile.mapping_items(root)]


def _toml_items(text: str, where: str) -> list[tuple[str, int, Any]]:
    """(key, line, value) of pyproject.toml's [tool.ptysup] table."""
    try:
        data: Any = tomllib.loads(text).get("tool", {}).get("ptysup", {})
    except tomllib.TOMLDecodeError as exc:
        first = " ".join(str(exc).split())[:200]
        raise InputError(where, 0, f"cannot parse: {first}") from None
    except RecursionError:  # tomllib recurses into nested arrays and tables
        raise InputError(where, 0, "cannot parse: nested too deep") from None
    if not isinstance(data, Mapping):
        raise InputError(where, 0, "[tool.ptysup] must be a table of options")
    return [(str(key), _toml_line(text, str(key)), value) for key, value in data.items()]


def _toml_line(text: str, key: str) -> int:
    """The line of `key = ...` in the [tool.ptysup] table (tomllib keeps no lines)."""
    pattern = re.compile(rf"""\s*["']?{re.escape(key)}["']?\s*=""")
    inside = False
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("["):
            inside = stripped.replace(" ", "").startswith(("[tool.ptysup]", "[tool.ptysup."))
        elif inside and pattern.match(line):
            return number
    return 0


def _read(path: Path) -> str:
    try:
        return userfile.read_text(path)
    except userfile.Unreadable as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
