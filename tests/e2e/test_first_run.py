"""First runs on a fresh machine, with the real Claude Code: ptysup names what blocks the
start and how to fix it, shows the agent's screen, and never answers a dialog itself."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ptysup.agents.claude.testkit import SETTINGS, claude_json
from tests.e2e.conftest import Rig

pytestmark = pytest.mark.e2e

SIMPLE = {"agent": [{"reply": "ok"}], "supervisor": [{"reply": "[COMPLETE] done"}]}


def _rewrite_config(r: Rig, data: dict[str, object] | None) -> Path:
    """Replace the rig's .claude.json (None: remove it, as on a fresh machine)."""
    config_dir = Path(r.env["CLAUDE_CONFIG_DIR"])
    path = config_dir / ".claude.json"
    if data is None:
        path.unlink()
    else:
        path.write_text(json.dumps(data), encoding="utf-8")
    (config_dir / "settings.json").write_text(json.dumps(SETTINGS), encoding="utf-8")
    return path


def _start_failed_fast(
    r: Rig, *args: str, code: int = 4
) -> tuple[list[str], list[dict[str, Any]], float]:
    start = time.monotonic()
    run = r.run("do the thing", *args, timeout=90)
    took = time.monotonic() - start
    assert run.code == code, run.stdout + run.stderr
    if code == 4:
        assert not r.model.requests, "nothing may reach the model before the agent is ready"
    return run.stdout.splitlines(), run.events, took


def test_an_untrusted_folder_is_named_with_its_fix_and_the_screen(
    rig: Callable[..., Rig],
) -> None:
    r = rig(SIMPLE)
    trusted_elsewhere = claude_json([r.project.parent / "elsewhere"])
    config = _rewrite_config(r, trusted_elsewhere)
    lines, events, took = _start_failed_fast(r)
    assert took < 30
    end = events[-1]
    assert end["event"] == "run_end" and end["outcome"] == "agent_exited"
    reason = str(end["reason"])
    assert "folder trust dialog" in reason and "hasTrustDialogAccepted" in reason
    # the reason first, then the agent's screen (the dialog), then run_end
    names = [e["event"] for e in events]
    assert names[-3:] == ["error", "agent_screen", "run_end"]
    screen = "\n".join(events[-2]["lines"])
    assert "Yes, I trust this folder" in screen
    assert any("folder trust dialog" in line for line in lines)
    assert any(line.startswith("  | ") and "1. Yes, I trust this folder" in line for line in lines)
    # ptysup answered nothing: the folder is still untrusted
    projects = json.loads(config.read_text())["projects"]
    assert not projects.get(str(r.project.resolve()), {}).get("hasTrustDialogAccepted")


def test_an_unapproved_api_key_is_named(rig: Callable[..., Rig]) -> None:
    r = rig(SIMPLE)
    data = claude_json([r.project])
    data["customApiKeyResponses"] = {"approved": [], "rejected": []}
    _rewrite_config(r, data)
    _, events, took = _start_failed_fast(r)
    assert took < 30
    assert "API-key approval dialog" in str(events[-1]["reason"])


def test_a_fresh_config_dir_names_the_onboarding(rig: Callable[..., Rig]) -> None:
    # Observed offline with 2.1.197: onboarding's connection check fails and Claude Code
    # exits 1 ("Unable to connect to Anthropic services").
    r = rig(SIMPLE)
    _rewrite_config(r, None)
    lines, events, took = _start_failed_fast(r)
    assert took < 30
    reason = str(events[-1]["reason"])
    assert "first-run onboarding" in reason and "hasCompletedOnboarding" in reason
    assert any(e["event"] == "agent_screen" for e in events)
    assert any("Unable to connect to Anthropic services" in line for line in lines)


def test_no_api_key_and_no_login_ends_at_once_and_is_not_waited_out(
    rig: Callable[..., Rig],
) -> None:
    # The TUI gets ready without a key; the first prompt fails with authentication_failed.
    r = rig(SIMPLE)
    del r.env["ANTHROPIC_API_KEY"]
    lines, events, took = _start_failed_fast(r, code=6)
    assert took < 30
    assert "authentication_failed" in str(events[-1]["reason"])
    assert not [e for e in events if e["event"] == "wait"]
    assert [e for e in events if e["event"] == "agent_screen"]  # the screen is in the log
    assert any(line.startswith("  | ") for line in lines)


def test_start_timeout_bounds_a_start_that_never_gets_ready(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    # A "claude" that never draws an input box: only the start timeout ends the wait.
    r = rig(SIMPLE)
    fake = tmp_path / "bin" / "claude"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho starting up\nexec sleep 600\n")
    fake.chmod(0o755)
    run = r.run("t", "--agent-cmd", str(fake), "--start-timeout", "3", timeout=60)
    assert run.code == 4
    assert "agent not ready after 3s" in str(run.events[-1]["reason"])
    assert "  | starting up" in run.stdout
