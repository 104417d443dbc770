"""The rigs end what a run left behind as ptysup ends its agent: SIGTERM, a grace, then
SIGKILL (tests.helpers.kill_all), so a leftover agent still restores what it holds."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from ptysup.terminal.pty_ import TERM_GRACE_S
from tests.helpers import alive, kill_all, wait_for

# A child that says it is ready, then, on SIGTERM, writes where it was asked and ends
# (or, told to, ignores SIGTERM).
CHILD = """\
import signal, sys, time
def ended(*_):
    open(sys.argv[1], "w").write("terminated")
    sys.exit(0)
signal.signal(signal.SIGTERM, signal.SIG_IGN if sys.argv[2] == "ignore" else ended)
open(sys.argv[1] + ".ready", "w").close()
while True:
    time.sleep(60)
"""


def _started(tmp_path: Path, name: str, on_term: str) -> tuple[subprocess.Popen[bytes], Path]:
    said = tmp_path / name
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(said), on_term])
    wait_for(Path(f"{said}.ready").exists, 10, "the child to be ready")
    return child, said


def test_a_leftover_gets_sigterm_first_and_ends_on_it(tmp_path: Path) -> None:
    child, said = _started(tmp_path, "polite", "end")
    try:
        began = time.monotonic()
        kill_all([child.pid])
        assert child.wait(5) == 0  # it ended itself, on SIGTERM
        assert said.read_text() == "terminated"
        assert time.monotonic() - began < TERM_GRACE_S  # no grace waited out
    finally:
        child.kill()


def test_a_leftover_that_ignores_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    stubborn, _ = _started(tmp_path, "stubborn", "ignore")
    polite, said = _started(tmp_path, "polite", "end")
    try:
        began = time.monotonic()
        kill_all([stubborn.pid, polite.pid], grace=0.5)
        assert not alive(stubborn.pid) and not alive(polite.pid)
        assert 0.5 <= time.monotonic() - began < 0.5 + 2
        assert stubborn.wait(5) == -9 and said.read_text() == "terminated"
    finally:
        stubborn.kill()
        polite.kill()
