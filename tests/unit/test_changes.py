"""What changed in the files, read from git's output and said within bounds."""

from __future__ import annotations

from ptysup.run.changes import Change, Kind, parse, render, totals


def test_git_output_becomes_changes_with_their_line_counts() -> None:
    name_status = b"M\0calc.py\0A\0tests/test_new.py\0D\0old.txt\0T\0link\0A\0logo.png\0"
    counts = (b"2\t1\tcalc.py", b"10\t0\ttests/test_new.py", b"0\t3\told.txt", b"-\t-\tlogo.png")
    numstat = b"\x00".join(counts) + b"\x00"
    assert parse(name_status, numstat) == [
        Change("calc.py", Kind.MODIFIED, 2, 1),
        Change("tests/test_new.py", Kind.ADDED, 10, 0),
        Change("old.txt", Kind.DELETED, 0, 3),
        Change("link", Kind.TYPE),
        Change("logo.png", Kind.ADDED),
    ]
    assert parse(b"", b"") == []


def test_a_name_that_is_not_utf8_or_holds_a_tab_still_names_its_file() -> None:
    name = b"odd\tname-\xff.txt"
    changes = parse(b"A\0" + name + b"\0", b"1\t0\t" + name + b"\0")
    assert changes == [Change(name.decode("utf-8", "surrogateescape"), Kind.ADDED, 1, 0)]
    assert render(changes) == ["A odd\tname-\\xff.txt (+1) [new]"]


def test_protected_files_come_first_and_new_and_untracked_files_are_said_so() -> None:
    changes = [
        Change("calc.py", Kind.MODIFIED, 2, 1),
        Change("notes.md", Kind.ADDED, 3, 0),
        Change("tests/test_calc.py", Kind.MODIFIED, 1, 1),
        Change("tests/test_old.py", Kind.DELETED, 0, 9),
        Change("logo.png", Kind.MODIFIED),
    ]
    lines = render(
        changes, protected={"tests/test_calc.py", "tests/test_old.py"}, untracked={"notes.md"}
    )
    assert lines == [
        "M tests/test_calc.py (+1 -1) [PROTECTED: it defines done]",
        "D tests/test_old.py (-9) [deleted, PROTECTED: it defines done]",
        "M calc.py (+2 -1)",
        "A notes.md (+3) [new, untracked]",
        "M logo.png (binary)",
    ]
    assert totals(changes) == "5 files (+6 -11)"
    assert totals(changes[:1]) == "1 file (+2 -1)"


def test_a_long_list_is_cut_with_a_count_and_a_long_path_in_its_middle() -> None:
    changes = [Change(f"src/file{i}.py", Kind.MODIFIED, 1, 0) for i in range(40)]
    lines = render(changes, limit=15)
    assert len(lines) == 16 and lines[-1] == "… and 25 more"
    long = Change("a/" + "x" * 500 + "/end.py", Kind.ADDED, 1, 0)
    (line,) = render([long])
    assert len(line) < 260 and "…" in line and line.endswith("/end.py (+1) [new]")


def test_a_test_file_that_is_not_protected_is_said_to_be_one() -> None:
    changes = [
        Change("conftest.py", Kind.ADDED, 4, 0),
        Change("tests/test_a.py", Kind.MODIFIED, 1, 1),
    ]
    lines = render(changes, protected={"tests/test_a.py"}, is_test=lambda p: True)
    assert lines == [
        "M tests/test_a.py (+1 -1) [PROTECTED: it defines done]",
        "A conftest.py (+4) [new, a test file]",
    ]
