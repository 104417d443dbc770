"""Which files define "done": the test files of the common layouts, and the files the
checks name. Pure: paths in (relative to the repository's top, with `/`), a set out.

The tamper guard (`ptysup.run.tamper`) runs the checks again with these files as they were
at the start when the agent changed one; anything the agent adds is never protected.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
import shlex
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

OFF = "none"  # --protect none: no file is protected

# A file under a folder of one of these names is a test file, at any depth: Python's and
# Rust's tests/, Ruby's and JS's test/ and spec/, Java's src/test/, Jest's __tests__ and its
# snapshots (an updated snapshot passes whatever the code does), Go's testdata.
TEST_DIRS = frozenset({"tests", "test", "spec", "specs", "__tests__", "__snapshots__", "testdata"})
_JS = "js,jsx,mjs,cjs,ts,tsx,mts,cts"
# A file whose name matches one of these is a test file wherever it is.
TEST_NAMES = (
    # Python (unittest, pytest)
    "test_*.py",
    "*_test.py",
    "conftest.py",
    # Go
    "*_test.go",
    # JS/TS (Jest, Vitest, Mocha, Jasmine)
    *(f"*.{kind}.{ext}" for kind in ("test", "spec") for ext in _JS.split(",")),
    # Java, Kotlin (JUnit: Surefire's and Failsafe's default includes)
    "*Test.java",
    "*Tests.java",
    "*IT.java",
    "*Test.kt",
    "*Tests.kt",
    # Ruby (RSpec, Minitest)
    "*_spec.rb",
    "*_test.rb",
)
_NAME_RE = re.compile("|".join(fnmatch.translate(p) for p in TEST_NAMES))


def is_test_file(path: str) -> bool:
    """Whether `path` (relative, `/`-separated) is a test file in a common layout."""
    *folders, name = path.split("/")
    return any(f in TEST_DIRS for f in folders) or _NAME_RE.fullmatch(name) is not None


@dataclass(frozen=True)
class ProtectSpec:
    """What --protect asked for: the default test files (unless `none`), plus pathspecs."""

    defaults: bool = True
    pathspecs: tuple[str, ...] = ()

    @property
    def off(self) -> bool:
        """Nothing is protected."""
        return not self.defaults and not self.pathspecs

    @classmethod
    def parse(cls, values: Sequence[str]) -> ProtectSpec:
        """From --protect's values; ValueError when `none` comes with a pathspec."""
        if OFF in values:
            if len(values) > 1:
                raise ValueError(f"{OFF} turns protection off: it cannot come with a pathspec")
            return cls(defaults=False)
        return cls(pathspecs=tuple(values))


def named_files(
    commands: Iterable[Sequence[str]], cwd: str, top: str, files: Collection[str]
) -> set[str]:
    """The files of `files` (relative to the repository's top `top`, an absolute path) that a
    check's command line names, read from `cwd` (relative to the top, "" for the top): an
    argument, `--opt=FILE`, a pytest node id's file, a word of a `bash -c` script. A folder
    is never taken (`pytest src` must leave the code the agent fixes unprotected)."""
    found = set()
    for command in commands:
        for word in _words(command):
            path = _relative(word, cwd, top)
            if path is not None and path in files:
                found.add(path)
    return found


def _words(command: Sequence[str]) -> Iterable[str]:
    for arg in command:
        yield from _candidates(arg)
        if any(c.isspace() for c in arg):  # a script: bash -c 'python -m pytest t.py'
            try:
                inner = shlex.split(arg)
            except ValueError:
                continue
            for word in inner:
                yield from _candidates(word)


def _candidates(word: str) -> Iterable[str]:
    if not word or (word.startswith("-") and "=" not in word):
        return
    if "=" in word:  # --config=ci/pytest.ini, PYTHONPATH=x
        word = word.split("=", 1)[1]
    yield word.split("::", 1)[0]  # tests/test_calc.py::test_add


def _relative(word: str, cwd: str, top: str) -> str | None:
    if not word:
        return None
    if posixpath.isabs(word):
        rel = posixpath.relpath(posixpath.normpath(word), top)
    else:
        rel = posixpath.normpath(posixpath.join(cwd, word))
    if rel == "." or rel.startswith("../") or rel == "..":
        return None
    return rel


def protected_files(
    tracked: Collection[str],
    present: Collection[str],
    spec: ProtectSpec,
    named: Collection[str],
    matched: Collection[str] = (),
) -> tuple[str, ...]:
    """The protected files, sorted: the test files git tracks (`tracked`) unless the
    defaults are off, the files the checks name (`named`) and those --protect's pathspecs
    matched (`matched`), each only if it was there at the start (`present`)."""
    if spec.off:
        return ()
    chosen = set(matched)
    if spec.defaults:
        chosen.update(p for p in tracked if is_test_file(p))
        chosen.update(named)
    return tuple(sorted(p for p in chosen if p in present))
