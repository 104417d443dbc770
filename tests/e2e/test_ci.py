"""What a CI job sees, with the real Claude Code and the fake model: fatal supervisor
errors, the log's shape, output files."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ptysup.testing.fakemodel import RequestKind
from tests.e2e.conftest import Rig

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(("status", "words"), [(401, "Failed to authenticate"), (404, "model")])
def test_a_supervisor_that_cannot_authenticate_ends_the_run_at_once(
    rig: Callable[..., Rig], status: int, words: str
) -> None:
    r = rig({"agent": [{"reply": "ok"}], "supervisor": [{"error": status}]})
    run = r.run("t")
    assert run.code == 5, run.stdout + run.stderr
    assert len(run.named("supervisor_error")) == 1  # never retried
    assert r.model.requests_of(RequestKind.SUPERVISOR)
    end = run.events[-1]
    assert end["outcome"] == "supervisor_failed"
    assert "cannot work" in end["reason"] and words in end["reason"]
    assert not run.named("wait")
