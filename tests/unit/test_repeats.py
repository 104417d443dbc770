"""The spinning detector: what counts as the same round, what it says, when it stops."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ptysup.run.gitstate import git_fingerprint
from ptysup.run.repeats import RepeatDetector, Round, new_text, normalise


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("✻ Worked for 12s\nI cannot find it", "✽ Churned for 3m 4s\nI cannot find it"),
        ("⠋ Thinking\nDone.", "⠹ Thinking\nDone."),
        ("Ran the tests in 0.42s: 1 failed", "Ran the tests in 1.3 seconds: 1 failed"),
        ("(↓ 1.2k tokens · $0.0123)", "(↓ 988 tokens · $0.0051)"),
        ("at 14:03:22 it failed", "at 9:15:01 it failed"),
        ('error "request_id":"req_011ABC"', 'error "request_id":"req_022XYZ"'),
        ("a   b\n\n\n c ", "a b\n c"),
    ],
)
def test_what_changes_by_itself_is_no_change(one: str, other: str) -> None:
    assert normalise(one) == normalise(other)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("Step 1 of 9 done", "Step 2 of 9 done"),
        ("Fixed 3 tests", "Fixed 4 tests"),
        ("I cannot find the file", "I cannot find the folder"),
        ("exit 1", "exit 2"),
    ],
)
def test_anything_else_that_differs_is_a_change(one: str, other: str) -> None:
    assert normalise(one) != normalise(other)


def test_new_text_is_what_the_screen_did_not_show_before() -> None:
    before = "fake-agent ready\n> first\ndone: first\n> "
    after = "> first\ndone: first\n> again\nworking...\ndone: again\n> "
    assert new_text(before, after) == "> again\nworking...\ndone: again"
    assert new_text(after, after) == ""


def test_the_same_round_counts_up_and_is_exhausted_at_max_repeats() -> None:
    detector = RepeatDetector(3)
    assert detector.observe("the task", "I cannot") is None
    assert detector.observe("try again", "I cannot", "continue") is None
    second = detector.observe("try again", "I cannot", "continue")
    assert second is not None and second.count == 2 and not detector.exhausted(second)
    third = detector.observe("try again", "I cannot", "continue")
    assert third is not None and third.count == 3 and detector.exhausted(third)


def test_a_changed_round_starts_the_count_again() -> None:
    detector = RepeatDetector(3)
    for _ in range(2):
        detector.observe("try again", "I cannot")
    assert detector.observe("try again", "I found it") is None
    assert detector.observe("try again", "I found it") is not None
    detector.reset()
    assert detector.observe("try again", "I found it") is None


def test_the_fingerprint_is_asked_at_every_round_and_compared() -> None:
    prints = iter(["a", "b", "b", "b"])
    detector = RepeatDetector(3, fingerprint=lambda: next(prints))
    counts = [detector.observe("go", "same") for _ in range(4)]
    assert [c.count if c else None for c in counts] == [None, None, 2, 3]
    assert counts[-1] is not None and "files" in counts[-1].what()


def test_off_is_never_a_repeat() -> None:
    detector = RepeatDetector(0)
    assert all(detector.observe("go", "same") is None for _ in range(10))


def test_the_note_and_the_reason_say_what_did_not_change() -> None:
    detector = RepeatDetector(4, fingerprint=lambda: "f")
    for _ in range(2):
        repeat = detector.observe("Run make", "Tests fail", "complete", ["`make` exited 1"])
    assert repeat is not None
    note = repeat.note(4)
    assert note.startswith("Repeating: the same instruction got the same answer 2 times")
    for said in ('"Run make"', '"Tests fail"', "the files", '"`make` exited 1"', "[COMPLETE]"):
        assert said in note and said in repeat.reason()
    assert "2 more identical rounds end the run" in note
    assert repeat.what() == ["instruction", "answer", "files", "verify", "decision"]


def test_an_api_error_round_is_named_so() -> None:
    detector = RepeatDetector(2)
    detector.observe("continue", "API Error: 529 overloaded", api_error=True)
    repeat = detector.observe("continue", "API Error: 529 overloaded", api_error=True)
    assert repeat is not None and repeat.what()[1] == "api_error"
    assert repeat.reason().startswith("spinning: the agent hit the same API error 2 times")


def test_a_long_instruction_is_quoted_cut() -> None:
    detector = RepeatDetector(2)
    for _ in range(2):
        repeat = detector.observe("x" * 1000, "y")
    assert repeat is not None and len(repeat.reason()) < 600
    assert Round.of("x" * 1000, "y").instruction == "x" * 1000  # compared whole


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(("git", *args), cwd=cwd, check=True, capture_output=True)


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
def test_the_git_fingerprint_changes_with_any_file_and_not_with_ptysups_own(
    tmp_path: Path,
) -> None:
    assert git_fingerprint(tmp_path) is None  # not a repository: files are not compared
    _git(tmp_path, "init", "-q")
    log = tmp_path / "ptysup.jsonl"
    own = [log]
    empty = git_fingerprint(tmp_path, own)
    assert empty is not None and empty == git_fingerprint(tmp_path, own)
    (tmp_path / "a.txt").write_text("one\n")
    untracked = git_fingerprint(tmp_path, own)
    assert untracked != empty
    log.write_text("an event\n")  # ptysup writing its log is no change of the agent's
    assert git_fingerprint(tmp_path, own) == untracked
    _git(tmp_path, "add", "a.txt")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    committed = git_fingerprint(tmp_path, own)
    assert committed not in (empty, untracked)
    (tmp_path / "a.txt").write_text("two\n")
    changed = git_fingerprint(tmp_path, own)
    assert changed != committed
    (tmp_path / "a.txt").write_text("three\n")
    assert git_fingerprint(tmp_path, own) != changed  # the same `M a.txt`, another diff
