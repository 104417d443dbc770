"""The tiers hold (docs/development.md): a test of tests/unit starts no process and opens
no PTY unless it is marked `pty`, and tests/pty's tests are all marked."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import keep_part, mark_tiers, run_logs

TESTS = Path(__file__).resolve().parents[1]


def test_a_pure_test_that_starts_a_process_fails_saying_where_it_belongs() -> None:
    with pytest.raises(AssertionError, match=r"mark it pytest\.mark\.pty or move it to tests/pty"):
        subprocess.run(["true"], check=True)
    with pytest.raises(AssertionError, match=r"os\.openpty"):
        os.openpty()


@pytest.mark.pty
def test_a_test_marked_pty_may_start_one() -> None:
    assert subprocess.run(["true"], check=True).returncode == 0


class Item:
    """What the tier hook reads of a collected test: its path; what it writes: marks."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.marks: list[str] = []

    def add_marker(self, mark: pytest.MarkDecorator) -> None:
        self.marks.append(mark.name)


def test_each_test_is_marked_with_its_folders_tier() -> None:
    items = [Item(TESTS / folder / "test_x.py") for folder in ("pty", "integration", "unit")]
    mark_tiers(items)  # type: ignore[arg-type]
    assert [i.marks for i in items] == [["pty"], ["pty"], []]


class Marked:
    """A collected test as the part hook reads it: whether it is marked `alone`."""

    def __init__(self, name: str, alone: bool) -> None:
        self.name = name
        self.alone = alone

    def get_closest_marker(self, name: str) -> object | None:
        return object() if name == "alone" and self.alone else None


class Hooks:
    def __init__(self) -> None:
        self.deselected: list[str] = []

    def pytest_deselected(self, items: list[Marked]) -> None:
        self.deselected += [i.name for i in items]


@pytest.mark.parametrize(
    ("wanted", "kept", "left_out"),
    [("skip", ["a", "c"], ["b"]), ("only", ["b"], ["a", "c"]), ("", ["a", "b", "c"], [])],
)
def test_the_alone_tests_run_in_a_part_of_their_own(
    wanted: str, kept: list[str], left_out: list[str]
) -> None:
    items = [Marked("a", False), Marked("b", True), Marked("c", False)]
    config = type("Config", (), {"hook": Hooks()})()
    keep_part(config, items, wanted)  # type: ignore[arg-type]
    assert [i.name for i in items] == kept
    assert config.hook.deselected == left_out


def test_a_failed_testsrun_logs_are_read_but_never_a_fifo(tmp_path: Path) -> None:
    (tmp_path / "events.jsonl").write_text('{"event": "run_end"}\n')
    os.mkfifo(tmp_path / "events-fifo.jsonl")  # opened for reading, it would wait forever
    assert run_logs(tmp_path) == [(tmp_path / "events.jsonl", ['{"event": "run_end"}'])]


def test_a_failed_tests_run_log_is_read_from_its_end_only(tmp_path: Path) -> None:
    # test_damaged_runs leaves a 600 MiB log: a report reads its last lines, not all of it.
    log = tmp_path / "events.jsonl"
    log.write_text("".join(f'{{"n": {n}}}\n' for n in range(1000)))
    ((path, lines),) = run_logs(tmp_path, tail=40)
    assert path == log
    assert lines == ['{"n": 997}', '{"n": 998}', '{"n": 999}']  # the cut line left out


def test_the_suite_s_parts_are_picked_by_a_pytest_option(pytester: pytest.Pytester) -> None:
    # Not a variable: every ptysup the tests start inherited PTYSUP_ALONE and warned of it.
    pytester.makeconftest((TESTS / "conftest.py").read_text())
    pytester.makepyfile(
        "import pytest\n@pytest.mark.alone\ndef test_loads(): pass\ndef test_plain(): pass\n"
    )
    assert pytester.runpytest("--alone=only").parseoutcomes() == {"passed": 1, "deselected": 1}
    assert pytester.runpytest("--alone=skip").parseoutcomes() == {"passed": 1, "deselected": 1}
    assert pytester.runpytest().parseoutcomes() == {"passed": 2}
