"""`--agent NAME`: a wrapper script around the real Claude Code is supervised as Claude
Code (hook turn ends, its profile), where its program name alone makes it generic."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.conftest import Rig
from tests.helpers import run_ptysup

pytestmark = pytest.mark.e2e


def _wrapper(tmp_path: Path, claude: str) -> Path:
    script = tmp_path / "my-agent.sh"
    script.write_text(f'#!/bin/sh\nexec {claude} --permission-mode acceptEdits "$@"\n')
    script.chmod(0o755)
    return script


def test_agent_claude_supervises_a_wrapper_script_through_its_hooks(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig({"agent": [{"reply": "Done."}], "supervisor": [{"reply": "[COMPLETE] done"}]})
    claude = shutil.which("claude", path=r.env["PATH"])
    assert claude is not None
    wrapper = _wrapper(tmp_path, claude)
    run = run_ptysup(
        ["a task", "--agent", "claude", "--agent-cmd", str(wrapper), "--idle", "30"],
        cwd=r.project,
        env=r.env,
        log_path=r.log,
        timeout=120,
    )
    assert run.code == 0, run.stdout + run.stderr
    assert run.named("agent_start")[0]["profile"] == "claude"
    # The turn ended on Claude Code's Stop hook, not after 30 s of quiet.
    assert [e["kind"] for e in run.named("turn_end")] == ["stop"]
    assert any(h["name"] == "Stop" for h in run.named("hook"))
