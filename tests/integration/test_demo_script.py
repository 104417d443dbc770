"""`scripts/demo.sh --help`, `scripts/test.sh --help` and `demo.sh --clean` as a person runs
them: before any setup, and `--clean` never deletes the sample project of a demo that is
still running."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ptysup.testing.demo import LOCK, PREFIX
from tests.helpers import REPO, fresh_copy, run_group

# --help must answer at once: the setup it used to run first took a minute or more.
HELP_TIMEOUT_S = 30


def _script(
    script: Path, *args: str, tmp: Path, timeout: float
) -> subprocess.CompletedProcess[str]:
    return run_group(
        ["bash", str(script), *args],
        cwd=REPO,
        env={**os.environ, "TMPDIR": str(tmp)},
        timeout=timeout,
    )


@pytest.mark.parametrize("args", [("--help",), ("--no-recording", "-h")])
def test_help_in_a_fresh_clone_sets_nothing_up(args: tuple[str, ...], tmp_path: Path) -> None:
    clone = fresh_copy(tmp_path / "clone")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    done = _script(clone / "scripts" / "demo.sh", *args, tmp=tmp, timeout=HELP_TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: scripts/demo.sh") and "--clean" in done.stdout
    assert done.stderr == ""  # no "setup: ..." line
    assert not (clone / ".venv").exists() and not (clone / ".tools").exists()
    assert list(tmp.iterdir()) == []  # no sample project either


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_test_sh_help_in_a_fresh_clone_sets_nothing_up(flag: str, tmp_path: Path) -> None:
    clone = fresh_copy(tmp_path / "clone")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    done = _script(clone / "scripts" / "test.sh", flag, tmp=tmp, timeout=HELP_TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: scripts/test.sh") and '-m "not e2e"' in done.stdout
    assert done.stderr == ""  # no "setup: ..." line
    assert not (clone / ".venv").exists() and not (clone / ".tools").exists()


@pytest.fixture
def running_demo(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """A demo folder whose lock a live process holds, as a running demo's is."""
    folder = tmp_path / f"{PREFIX}running"
    hold = (
        "import sys; from pathlib import Path; from ptysup.store import pidlock\n"
        "with pidlock.hold(Path(sys.argv[1])):\n"
        "    print('held', flush=True); sys.stdin.read()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", hold, str(folder / LOCK)],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "held\n"
        yield folder, proc.pid
    finally:
        proc.communicate(input="", timeout=30)  # its stdin ends: it lets go and exits


def test_clean_keeps_a_running_demo_and_removes_finished_ones(
    tmp_path: Path, running_demo: tuple[Path, int]
) -> None:
    running, pid = running_demo
    finished = tmp_path / f"{PREFIX}finished"  # its demo ended: the lock is free
    (finished / LOCK).parent.mkdir(parents=True)
    (finished / LOCK).write_text("1\n")
    older = tmp_path / f"{PREFIX}older"  # from a demo before the lock existed
    older.mkdir()
    other = tmp_path / "someone-elses"
    other.mkdir()
    done = _script(REPO / "scripts" / "demo.sh", "--clean", tmp=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [running.name, other.name]
    assert f"demo: kept {running}: its demo is still running (pid {pid})\n" in done.stderr
    assert done.stderr.endswith(f"demo: removed 2 demo folder(s) from {tmp_path}\n")


def test_an_option_ptysup_refuses_leaves_no_sample_project(tmp_path: Path) -> None:
    # A mistyped option: ptysup says so and exits 2 before any run; there is nothing to
    # look at, and no project tests ran to FAIL.
    done = run_group(
        [sys.executable, "-m", "ptysup.testing.demo", "--max-iterr", "3"],
        cwd=REPO,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "ptysup: No such option" in done.stderr
    assert "FAIL" not in done.stderr and "kept for you" not in done.stderr, done.stderr
    assert "before the run began" in done.stderr.splitlines()[-1]
    assert list(tmp_path.glob(f"{PREFIX}*")) == []
