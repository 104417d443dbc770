"""Any text in an event (a hook's payload, a model's message, a non-UTF-8 task) is logged.

JSON allows lone surrogates ("\\ud83d", e.g. an emoji cut in half by a UTF-16 program),
and a command line that is not UTF-8 reaches Python as surrogate escapes; neither may
crash the run when it is written to the event log.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings

from ptysup.events import EventLog, JsonlSink
from tests.helpers import ptysup_argv
from tests.property.strategies import any_text


@given(any_text())
@settings(
    max_examples=200, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@example("\ud83d half an emoji")
def test_any_text_in_an_event_is_one_valid_json_line(tmp_path: Path, text: str) -> None:
    path = tmp_path / "events.jsonl"
    path.unlink(missing_ok=True)
    log = EventLog([JsonlSink(path)])
    log.emit("turn_end", kind="stop", detail=text)
    log.close()
    # JSON Lines are split at "\n" only: str.splitlines() also splits at U+0085 and
    # U+2028, which JSON keeps raw inside strings.
    lines = path.read_text(encoding="utf-8").split("\n")[:-1]
    assert len(lines) == 1
    assert json.loads(lines[0])["detail"] == text


def test_a_task_that_is_not_utf8_is_a_one_line_usage_error(tmp_path: Path) -> None:
    proc = subprocess.run(
        [*map(str.encode, ptysup_argv()), b"caf\xe9 task", b"--agent-cmd", b"true"],
        cwd=tmp_path,
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith(b"ptysup: ") and proc.stderr.count(b"\n") == 1
