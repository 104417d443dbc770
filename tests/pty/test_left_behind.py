"""What a ptysup killed with SIGKILL leaves behind (it runs no cleanup) is removed by the
next one: the judge's temp folder once its owner is dead, a state file's temp file when
the run (or batch) is taken up again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from ptysup.store.rundir import remove_left_temps, write_atomic
from ptysup.supervisor.judgedir import OWNER, PREFIX, JudgeDir

# A child that makes a judge folder in PARENT, says where, and waits to be killed.
_HOLDER = (
    "import sys; from ptysup.supervisor.judgedir import JudgeDir;"
    "d = JudgeDir(sys.argv[1]); print(d.path, flush=True); sys.stdin.read()"
)


def _holder(parent: Path) -> tuple[subprocess.Popen[str], Path]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(parent)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    return proc, Path(proc.stdout.readline().strip())


def test_a_judge_folder_whose_owner_was_killed_goes_with_the_next_one(tmp_path: Path) -> None:
    killed, left = _holder(tmp_path)
    alive, kept = _holder(tmp_path)
    try:
        killed.send_signal(signal.SIGKILL)
        killed.wait(10)
        assert left.is_dir() and (left / OWNER).exists()  # SIGKILL ran no cleanup
        older = tmp_path / f"{PREFIX}older"  # made before owners held a lock: left alone
        older.mkdir()
        made = JudgeDir(str(tmp_path))
        assert not left.exists()
        assert kept.is_dir() and older.is_dir()  # a live owner's, and an unknown one
        made.close()
        assert not Path(made.path).exists()
    finally:
        alive.kill()
        alive.wait(10)


def test_temp_files_a_killed_writer_left_are_removed_and_never_written_through(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    write_atomic(run / "state.json", "{}\n")
    (run / ".state.json.999999.tmp").write_text('{"half": ')  # killed mid-write
    (run / ".run.json.999998.tmp").write_text("")
    # A FIFO under this process's own temp name: written through, it would block.
    os.mkfifo(run / f".state.json.{os.getpid()}.tmp")
    write_atomic(run / "state.json", '{"state": "working"}\n')
    assert (run / "state.json").read_text() == '{"state": "working"}\n'
    removed = remove_left_temps(run)
    assert sorted(p.name for p in removed) == [".run.json.999998.tmp", ".state.json.999999.tmp"]
    assert sorted(p.name for p in run.iterdir()) == ["state.json"]
