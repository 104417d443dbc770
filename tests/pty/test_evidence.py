"""The evidence section from a real git repository: what changed since the start and the
last decision, ptysup's snapshots never touching the person's repository, and the bounds
of the section and of the prompt it goes into."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from ptysup.events import EventLog
from ptysup.run import gitsnap
from ptysup.run.evidence import MAX_BYTES, Journal, RunEvidence, Start
from ptysup.run.gitsnap import WorkTree
from ptysup.supervisor.prompt import DEFAULT_MAX_BYTES, PromptContext, build_prompt
from tests.helpers import committed, git


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    files = {
        "calc.py": "def add(a, b):\n    return a - b\n",
        "tests/test_calc.py": "assert add(2, 3) == 5\n",
        ".gitignore": "node_modules/\n.ptysup/\n",
    }
    committed(project, files)
    return project


def _start(project: Path, protected: tuple[str, ...] = ()) -> Start:
    tree = WorkTree.find(
        project, project / ".ptysup" / "runs" / "r" / "evidence", [project / "log.jsonl"]
    )
    assert tree is not None
    snapshot = tree.snapshot()
    entries = tree.entries(snapshot)
    return Start(tree, snapshot, {p: entries[p] for p in protected})


def _fingerprint(project: Path) -> tuple[str, ...]:
    """The person's repository as git keeps it: index, refs, objects, status."""
    dot = project / ".git"
    objects = sorted(str(p.relative_to(dot)) for p in (dot / "objects").rglob("*") if p.is_file())
    index = hashlib.sha256((dot / "index").read_bytes()).hexdigest()
    return (
        index,
        git(project, "show-ref"),
        "\n".join(objects),
        git(project, "status", "--porcelain"),
    )


def test_what_changed_since_the_start_and_since_the_last_decision(repo: Path) -> None:
    start = _start(repo, protected=("tests/test_calc.py",))
    evidence = RunEvidence(Journal(), start)
    assert evidence.gather() == "Files changed since the start: none."
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "notes.md").write_text("one\ntwo\n")
    (repo / "log.jsonl").write_text("ptysup's own log\n")  # left out
    (repo / "node_modules").mkdir()
    (repo / "node_modules" / "x.js").write_text("ignored\n")  # left out
    assert evidence.gather().splitlines() == [
        "Files changed since the last decision: 2 files (+3 -1)",
        "  M calc.py (+1 -1)",
        "  A notes.md (+2) [new, untracked]",
        "Files changed since the start: 2 files (+3 -1)",
        "  M calc.py (+1 -1)",
        "  A notes.md (+2) [new, untracked]",
    ]
    (repo / "tests" / "test_calc.py").unlink()
    git(repo, "add", "notes.md")  # git tracks it now
    git(repo, "commit", "-q", "-am", "the agent commits")  # changes since the start still show
    assert evidence.gather().splitlines() == [
        "Files changed since the last decision: 1 file (+0 -1)",
        "  D tests/test_calc.py (-1) [deleted, PROTECTED: it defines done]",
        "Files changed since the start: 3 files (+3 -2)",
        "  D tests/test_calc.py (-1) [deleted, PROTECTED: it defines done]",
        "  M calc.py (+1 -1)",
        "  A notes.md (+2) [new]",
    ]


def test_snapshots_never_touch_the_persons_repository(repo: Path) -> None:
    (repo / "calc.py").write_text("changed but not staged\n")
    (repo / "new.txt").write_text("untracked\n")
    before = _fingerprint(repo)
    start = _start(repo)
    assert start.tree is not None
    (repo / "more.txt").write_text("another\n")
    now = start.tree.snapshot()
    assert [c.path for c in start.tree.changes(start.snapshot or "", now)] == ["more.txt"]
    (repo / "more.txt").unlink()
    assert _fingerprint(repo) == before
    # ptysup's objects are in its own store.
    assert any((start.tree.store / "objects").rglob("*"))


def test_a_large_new_file_is_left_out_of_the_snapshots(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gitsnap, "MAX_NEW_FILE", 1_000)
    start = _start(repo)
    (repo / "data.bin").write_bytes(os.urandom(2_000))
    (repo / "small.txt").write_text("small\n")
    assert start.tree is not None
    changes = start.tree.changes(start.snapshot or "", start.tree.snapshot())
    assert [c.path for c in changes] == ["small.txt"]


def test_outside_git_the_section_says_so(tmp_path: Path) -> None:
    assert WorkTree.find(tmp_path, tmp_path / "store") is None
    evidence = RunEvidence(Journal(), Start(None, no_git="not a git work tree"))
    assert evidence.gather() == "What changed in the files: not known (not a git work tree)."


def test_a_git_failure_is_said_once_and_the_run_goes_on(repo: Path) -> None:
    start = _start(repo)
    warned: list[str] = []
    evidence = RunEvidence(Journal(), start, warn=warned.append)
    (start.tree.store / "index").write_bytes(b"not an index")  # type: ignore[union-attr]
    assert evidence.gather().startswith("What changed in the files: not known (git: ")
    evidence.gather()
    assert len(warned) == 1 and warned[0].startswith("cannot tell the supervisor what changed")


def _full_journal() -> Journal:
    journal = Journal()
    log = EventLog(journal.sinks())
    checks = [["python3", "-m", "pytest", f"tests/part{i}", "-q", "-x" * 40] for i in range(15)]
    log.emit(
        "verify_baseline",
        results=[{"command": c, "exit_code": 1, "passed": False} for c in checks],
        cannot_tell=[],
    )
    for i in range(1, 30):
        log.emit("decision", iteration=i, action="continue", content="do this " * 200)
        for c in checks:
            log.emit("verify", iteration=i, command=c, exit_code=i % 2, passed=bool(i % 2))
        for _ in range(10):
            log.emit("person_prompt", text="p" * 2_000)
    return journal


def test_the_section_and_the_prompt_stay_within_their_bounds_at_worst(repo: Path) -> None:
    start = _start(repo)
    for i in range(100):
        (repo / f"{'long-folder-name/' * 8}file{i}.py").parent.mkdir(parents=True, exist_ok=True)
        (repo / f"{'long-folder-name/' * 8}file{i}.py").write_text("x\n" * i)
    evidence = RunEvidence(_full_journal(), start)
    evidence.gather()
    for i in range(100):
        (repo / f"{'long-folder-name/' * 8}file{i}.py").write_text("y\n" * i)
    text = evidence.gather()
    assert len(text.encode()) <= MAX_BYTES
    for part in ("The run so far", "Files changed since the last decision", "Checks ("):
        assert part in text
    screen = "\n".join("█" * 120 for _ in range(60))
    ctx = PromptContext(
        "fix calc.py", 30, 50, 600.0, "stop", ("Bash(x)",) * 50, "m" * 5_000, screen, evidence=text
    )
    for split in (False, True):
        prompt = build_prompt(ctx, DEFAULT_MAX_BYTES, split=split)
        assert len(prompt.encode()) <= DEFAULT_MAX_BYTES
        assert text.splitlines()[-1] in prompt  # the evidence is whole; the agent's part elided
        assert "bytes elided" in prompt


def test_a_lean_judges_prompt_with_typical_evidence_is_well_under_20_kb(repo: Path) -> None:
    start = _start(repo, protected=("tests/test_calc.py",))
    journal = Journal()
    log = EventLog(journal.sinks())
    log.emit(
        "verify_baseline",
        results=[{"command": ["python3", "-m", "pytest", "-q"], "exit_code": 1, "passed": False}],
        cannot_tell=[],
    )
    for i in range(1, 6):
        log.emit("decision", iteration=i, action="continue", content="Fix the failing test " * 5)
    evidence = RunEvidence(journal, start)
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "tests" / "test_extra.py").write_text("assert True\n")
    # A busy turn: a full screen of a wide terminal, twenty tool calls, a long last message.
    screen = "\n".join(f"● Bash(python -m pytest tests/test_{i}.py) {'·' * 80}" for i in range(60))
    tools = tuple(f"Edit(/home/me/project/src/module_{i}.py) → ok" for i in range(20))
    ctx = PromptContext(
        "fix calc.py", 6, 50, 300.0, "stop", tools, "x" * 2_000, screen, evidence=evidence.gather()
    )
    assert len(build_prompt(ctx, split=True).encode()) < 20_000
