"""What the real Claude Code prints after an emoji's selector or joiner, or a zero-width
space, reaches the supervisor: the screen model keeps the rest of the line."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ptysup.testing.fakemodel import RequestKind
from tests.e2e.conftest import Rig

pytestmark = pytest.mark.e2e

LINES = (
    "\u26a0\ufe0f careful: the migration drops a column",  # ⚠️: U+26A0 then U+FE0F
    "\U0001f468\u200d\U0001f469\u200d\U0001f467 the family test passes too",  # 👨‍👩‍👧
    "a zero\u200bwidth space, then the end of the sentence",
)
ENDS = ("the migration drops a column", "the family test passes too", "end of the sentence")


def test_text_after_zero_width_characters_reaches_the_supervisor(
    rig: Callable[..., Rig],
) -> None:
    reply = "Status:\n\n" + "\n\n".join(LINES)
    r = rig({"agent": [{"reply": reply}], "supervisor": [{"reply": "[COMPLETE] fine"}]})
    run = r.run("report the status")
    assert run.code == 0, run.stdout
    [request] = r.model.requests_of(RequestKind.SUPERVISOR)
    screen = request.human_text.split("The agent's screen now:\n", 1)[1]
    for end in ENDS:
        assert end in screen, screen
