"""GitHub's step summary of a real run holds the task's text, never its control bytes."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from tests.e2e.conftest import Rig

pytestmark = pytest.mark.e2e

CONTROL_BYTES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def test_the_step_summary_keeps_the_tasks_text_and_drops_its_bytes(
    rig: Callable[..., Rig],
) -> None:
    r = rig({"agent": [{"reply": "Done."}], "supervisor": [{"reply": "[COMPLETE] done"}]})
    summary = r.project.parent / "step.md"
    r.env.update(GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(summary))
    run = r.run("say \x1b]0;owned\x07\x1b[31mdone\x1b[0m\x08 now")
    assert run.code == 0, run.stdout
    written = summary.read_text()
    assert "**Task:** say done now" in written, written
    assert not CONTROL_BYTES.findall(written), repr(written)
