"""Which files define "done": the test files of each language's common layout, the files
the checks name, --protect's pathspecs, and `none`."""

from __future__ import annotations

import pytest

from ptysup.run.protect import ProtectSpec, is_test_file, named_files, protected_files

TOP = "/work/proj"


@pytest.mark.parametrize(
    "path",
    [
        # Python
        "tests/test_calc.py",
        "test_calc.py",
        "pkg/calc_test.py",
        "conftest.py",
        "src/pkg/conftest.py",
        "pkg/tests/helpers.py",
        # JS/TS
        "src/calc.test.ts",
        "src/calc.spec.js",
        "src/Button.test.tsx",
        "lib/util.spec.mjs",
        "src/__tests__/calc.js",
        "src/__tests__/__snapshots__/calc.js.snap",
        "test/index.js",
        # Go
        "calc/calc_test.go",
        "calc/testdata/input.txt",
        # Rust
        "tests/integration.rs",
        # Java / Kotlin
        "src/test/java/com/acme/CalcTest.java",
        "src/main/java/com/acme/CalcTest.java",
        "src/main/java/com/acme/CalcIT.java",
        "app/src/test/kotlin/CalcTests.kt",
        # Ruby
        "spec/calc_spec.rb",
        "lib/calc_spec.rb",
        "test/calc_test.rb",
    ],
)
def test_the_test_files_of_each_common_layout_are_test_files(path: str) -> None:
    assert is_test_file(path)


@pytest.mark.parametrize(
    "path",
    [
        "calc.py",
        "src/calc.ts",
        "src/testing/fakes.py",  # a library's testing helpers are its code
        "contest.py",
        "latest.py",
        "src/main/java/com/acme/Calc.java",
        "src/main.rs",
        "attest/x.go",
        "calc_test.go.orig",
        "README.md",
        "pytest.ini",
        "package.json",
    ],
)
def test_code_and_configuration_are_not_test_files(path: str) -> None:
    assert not is_test_file(path)


FILES = {"run_tests.sh", "ci/pytest.ini", "tests/test_calc.py", "src/calc.py", "scripts/check.py"}


@pytest.mark.parametrize(
    ("command", "cwd", "named"),
    [
        (["bash", "run_tests.sh"], "", {"run_tests.sh"}),
        (["./run_tests.sh"], "", {"run_tests.sh"}),
        (["pytest", "-c", "ci/pytest.ini"], "", {"ci/pytest.ini"}),
        (["pytest", "--config-file=ci/pytest.ini"], "", {"ci/pytest.ini"}),
        (["pytest", "tests/test_calc.py::test_add"], "", {"tests/test_calc.py"}),
        (["bash", "-c", "python scripts/check.py && pytest -q"], "", {"scripts/check.py"}),
        (["python", "../scripts/check.py"], "src", {"scripts/check.py"}),
        (["python", f"{TOP}/scripts/check.py"], "", {"scripts/check.py"}),
        # A folder, the project itself, or what lies outside it is never named.
        (["pytest", "src"], "", set()),
        (["python3", "-m", "unittest", "discover", "-s", "tests", "-t", "."], "", set()),
        (["python", "/etc/passwd"], "", set()),
        (["python", "../../x.py"], "src", set()),
        (["bash", "-c", "echo 'unclosed"], "", set()),
    ],
)
def test_the_files_a_check_names(command: list[str], cwd: str, named: set[str]) -> None:
    assert named_files([command], cwd, TOP, FILES) == named


def test_protected_are_the_tracked_test_files_the_named_and_the_matched_present_at_start() -> None:
    tracked = ["calc.py", "tests/test_calc.py", "tests/test_gone.py"]
    present = {"calc.py", "tests/test_calc.py", "golden/out.txt", "check.sh", "tests/test_new.py"}
    got = protected_files(tracked, present, ProtectSpec(), {"check.sh"}, ["golden/out.txt"])
    # test_gone.py was deleted before the start; test_new.py is not tracked by git.
    assert got == ("check.sh", "golden/out.txt", "tests/test_calc.py")


def test_protect_none_protects_nothing_and_cannot_come_with_a_pathspec() -> None:
    spec = ProtectSpec.parse(["none"])
    assert spec.off
    assert protected_files(["tests/test_a.py"], {"tests/test_a.py"}, spec, {"x"}, ["x"]) == ()
    with pytest.raises(ValueError, match="none turns protection off"):
        ProtectSpec.parse(["none", "golden/"])
    assert ProtectSpec.parse(["golden/", "*.snap"]) == ProtectSpec(True, ("golden/", "*.snap"))
    assert ProtectSpec.parse([]) == ProtectSpec()
