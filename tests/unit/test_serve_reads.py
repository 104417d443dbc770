"""serve's background reads: an answer never waits long for a read, a read that never
ends is not started again, and a result is reused while its files are unchanged."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from ptysup.serve.reads import Job, Late, Reads
from tests.helpers import wait_for


def _never(exc: Exception) -> Any:
    raise AssertionError(f"no read here fails: {exc}")


def test_a_read_that_never_ends_is_late_and_never_started_again(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opened for reading, it waits for a writer: forever, here
    started: list[int] = []

    def stuck() -> str:
        started.append(1)
        return fifo.read_text()

    reads: Reads[str] = Reads(wait_s=0.2)
    threads = threading.active_count()
    for _ in range(3):
        (result,) = reads.results([Job("run", None, stuck, _never)])
        assert isinstance(result, Late) and result.last is None
    assert started == [1] and threading.active_count() == threads + 1  # one stuck thread
    (other,) = reads.results([Job("other", None, lambda: "fine", _never)])
    assert other == "fine"  # the other runs are read as ever
    with fifo.open("w") as f:  # a writer comes: the stuck read ends, its result is kept
        f.write("at last")
    wait_for(lambda: threading.active_count() == threads, 30, "the stuck read to end")
    again = tmp_path / "again"
    os.mkfifo(again)
    (result,) = reads.results([Job("run", None, again.read_text, _never)])
    assert (
        isinstance(result, Late) and result.last == "at last"
    )  # the last result, while it is reread
    with again.open("w"):
        pass  # let the second read end too


def test_a_result_is_reused_while_its_version_holds(tmp_path: Path) -> None:
    reads: Reads[int] = Reads(wait_s=30)
    count = [0]

    def read() -> int:
        count[0] += 1
        return count[0]

    assert reads.results([Job("a", "v1", read, _never)]) == [1]
    assert reads.results([Job("a", "v1", read, _never)]) == [1]  # not read again
    assert reads.results([Job("a", "v2", read, _never)]) == [2]  # the files changed
    assert reads.results([Job("a", None, read, _never)]) == [3]  # never reused
    assert reads.results([Job("b", None, lambda: 1 // 0, lambda exc: -1)]) == [-1]
