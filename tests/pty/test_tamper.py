"""The tamper guard with real git and real checks: the checks run again in a scratch copy
with the protected files as they were at the start; the person's tree is never touched."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from ptysup.run.gitsnap import WorkTree
from ptysup.run.tamper import Finding, TamperGuard, Verdict
from ptysup.run.verify import Verifier
from tests.helpers import committed

CHECK = ("python3", "-m", "unittest", "discover", "-s", "tests", "-t", ".")
ASSERTION = "self.assertEqual(add(2, 3), 5)"
TEST = (
    "import unittest\n\nfrom calc import add\n\n\nclass AddTest(unittest.TestCase):\n"
    f"    def test_add(self):\n        {ASSERTION}\n"
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    files = {
        "calc.py": "def add(a, b):\n    return a - b\n",
        "tests/__init__.py": "",
        "tests/test_calc.py": TEST,
        ".gitignore": "node_modules/\n.env\nbuild/\n.ptysup/\n",
    }
    committed(project, files)
    return project


class Guarded:
    """A guard over `repo` from now on, its scratch copies under `scratch`."""

    def __init__(self, repo: Path, scratch: Path) -> None:
        tree = WorkTree.find(repo, repo / ".ptysup" / "runs" / "r" / "evidence")
        assert tree is not None
        start = tree.snapshot()
        entries = tree.entries(start)
        protected = {p: e for p, e in entries.items() if p.startswith("tests/")}
        scratch.mkdir()
        self.scratch = scratch
        self.folders: list[Path] = []
        self.guard = TamperGuard(tree, start, protected, "", self._checks_in, scratch)

    def _checks_in(self, commands: Sequence[tuple[str, ...]], folder: Path) -> Verifier:
        self.folders.append(folder)
        env = {**os.environ, "PWD": str(folder)}
        return Verifier(commands, cwd=str(folder), env=env, timeout=60)

    def check(self, *commands: tuple[str, ...]) -> Finding | None:
        return self.guard.check(commands or (CHECK,))


@pytest.fixture
def guarded(repo: Path, tmp_path: Path) -> Guarded:
    return Guarded(repo, tmp_path / "scratch")


def _edit(path: Path, old: str, new: str) -> None:
    path.write_text(path.read_text().replace(old, new))


def test_a_gutted_test_fails_against_the_original_and_the_tree_is_left_as_it_is(
    repo: Path, guarded: Guarded
) -> None:
    _edit(repo / "tests" / "test_calc.py", ASSERTION, "self.assertTrue(True)")
    finding = guarded.check()
    assert finding is not None and finding.verdict is Verdict.FAILED
    assert finding.files == ("tests/test_calc.py",)
    assert finding.failed is not None and finding.failed.exit_code == 1
    assert "AssertionError: -1 != 5" in finding.failed.output_tail
    assert "tests/test_calc.py" in finding.instruction() and "exited 1" in finding.instruction()
    assert finding.reason().startswith("tampering: ") and "tests/test_calc.py" in finding.reason()
    # The person's tree keeps the agent's change; every scratch copy is gone.
    assert "assertTrue(True)" in (repo / "tests" / "test_calc.py").read_text()
    assert list(guarded.scratch.iterdir()) == []
    assert len(guarded.folders) == 2  # the originals, then the agent's own files


def test_a_deleted_test_is_restored_in_the_copy(repo: Path, guarded: Guarded) -> None:
    (repo / "tests" / "test_calc.py").unlink()
    finding = guarded.check()
    assert finding is not None and (finding.verdict, finding.files) == (
        Verdict.FAILED,
        ("tests/test_calc.py",),
    )
    assert not (repo / "tests" / "test_calc.py").exists()


def test_nothing_protected_changed_is_nothing_to_check(repo: Path, guarded: Guarded) -> None:
    _edit(repo / "calc.py", "a - b", "a + b")
    assert guarded.check() is None
    assert guarded.folders == []


def test_new_tests_and_a_real_fix_pass_against_the_originals(repo: Path, guarded: Guarded) -> None:
    _edit(repo / "calc.py", "a - b", "a + b")
    # A new test in the protected file and a new file of tests: never tampering.
    _edit(
        repo / "tests" / "test_calc.py",
        "    def test_add",
        "    def test_zero(self):\n        self.assertEqual(add(0, 0), 0)\n\n    def test_add",
    )
    (repo / "tests" / "test_more.py").write_text(TEST.replace("AddTest", "MoreTest"))
    finding = guarded.check(CHECK, ("python3", "-m", "unittest", "tests.test_more"))
    assert finding is not None and finding.verdict is Verdict.PASSED
    assert finding.files == ("tests/test_calc.py",)


def test_dependencies_are_linked_and_small_ignored_files_copied_into_the_copy(
    repo: Path, guarded: Guarded
) -> None:
    (repo / "node_modules" / "dep").mkdir(parents=True)
    (repo / "node_modules" / "dep" / "index.js").write_text("module.exports = 1\n")
    (repo / ".env").write_text("SECRET_SETTING=1\n")
    _edit(repo / "tests" / "test_calc.py", ASSERTION, "self.assertTrue(True)")
    needs = ("bash", "-c", "test -f node_modules/dep/index.js && grep -q SETTING .env")
    finding = guarded.check(needs, CHECK)
    assert finding is not None and finding.verdict is Verdict.FAILED
    assert finding.failed is not None and finding.failed.command == CHECK  # not `needs`
    assert (repo / "node_modules" / "dep" / "index.js").exists()  # the link went, not them


def test_a_check_that_cannot_run_in_a_copy_is_unchecked_not_tampering(
    repo: Path, guarded: Guarded
) -> None:
    (repo / "build").mkdir()
    (repo / "build" / "generated.txt").write_text("made by a build step\n")
    _edit(repo / "tests" / "test_calc.py", ASSERTION, "self.assertTrue(True)")
    finding = guarded.check(("test", "-f", "build/generated.txt"))
    assert finding is not None and finding.verdict is Verdict.UNCHECKED
    assert "even with the agent's own files" in finding.why
