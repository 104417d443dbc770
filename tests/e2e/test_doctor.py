"""`ptysup doctor` with the real Claude Code: what it reports is what a run then meets."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ptysup.agents.claude.testkit import RELEASE, claude_json
from ptysup.testing.fakemodel import RequestKind
from tests.e2e.conftest import AGENT, Rig
from tests.helpers import ptysup_argv

pytestmark = pytest.mark.e2e

SIMPLE = {"agent": [{"reply": "ok"}], "supervisor": [{"reply": "[COMPLETE] done"}]}


def _doctor(r: Rig, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ptysup_argv("doctor", "--agent-cmd", AGENT, *args),
        cwd=cwd or r.project,
        env=r.env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _line(out: str, name: str) -> str:
    return next(line for line in out.splitlines() if f" {name}:" in line)


def test_a_prepared_folder_is_ready_and_the_run_then_starts(rig: Callable[..., Rig]) -> None:
    r = rig(SIMPLE)
    done = _doctor(r)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "ready"
    assert _line(done.stdout, "agent version").endswith(
        f"claude {RELEASE.version}, tested with ptysup"
    )
    assert _line(done.stdout, "folder trust").startswith("  ok ")
    assert r.run("t").code == 0


def test_a_subfolder_of_a_trusted_folder_is_trusted(rig: Callable[..., Rig]) -> None:
    r = rig(SIMPLE)
    sub = r.project / "pkg"
    sub.mkdir()
    assert _doctor(r, cwd=sub).returncode == 0


@pytest.mark.parametrize(
    ("prepare", "check", "words"),
    [
        ("untrusted", "folder trust", "hasTrustDialogAccepted"),
        ("fresh", "onboarding", "hasCompletedOnboarding"),
        ("key", "API key", "customApiKeyResponses.approved"),
        ("nokey", "credentials", "ANTHROPIC_API_KEY"),
        ("nowrite", "--log-file writable", "Not a directory"),
    ],
)
def test_each_blocker_is_reported_with_its_fix(
    rig: Callable[..., Rig], prepare: str, check: str, words: str
) -> None:
    r = rig(SIMPLE)
    config = Path(r.env["CLAUDE_CONFIG_DIR"]) / ".claude.json"
    args: list[str] = []
    if prepare == "untrusted":
        config.write_text(json.dumps(claude_json([r.project.parent / "other"])))
    elif prepare == "fresh":
        config.unlink()
    elif prepare == "key":
        data = claude_json([r.project])
        data["customApiKeyResponses"] = {"approved": [], "rejected": []}
        config.write_text(json.dumps(data))
    elif prepare == "nokey":
        del r.env["ANTHROPIC_API_KEY"]
    else:
        args = ["--log-file", "/etc/passwd/events.jsonl"]
    done = _doctor(r, *args)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    bad = _line(done.stdout, check)
    assert bad.startswith("  FIX "), done.stdout
    assert words in lines[lines.index(bad) + 1] or words in bad
    assert sum(line.startswith("  FIX ") for line in lines) == (3 if prepare == "fresh" else 1)
    assert not r.model.requests  # doctor starts nothing


def test_doctor_refuses_bad_options_like_a_run(rig: Callable[..., Rig]) -> None:
    r = rig(SIMPLE)
    done = _doctor(r, "--max-iter", "0")
    assert done.returncode == 2 and done.stderr.startswith("ptysup: ")


@pytest.mark.parametrize(
    ("supervisor", "ok"), [({"reply": "[COMPLETE] ok"}, True), ({"error": 401}, False)]
)
def test_probe_asks_the_supervisor_once(
    rig: Callable[..., Rig], supervisor: dict[str, object], ok: bool
) -> None:
    r = rig({"agent": [{"reply": "ok"}], "supervisor": [supervisor]})
    done = _doctor(r, "--probe")
    assert done.returncode == (0 if ok else 1), done.stdout + done.stderr
    line = _line(done.stdout, "supervisor answers")
    assert line.startswith("  ok " if ok else "  FIX ")
    if not ok:
        assert "Failed to authenticate" in line
    assert len(r.model.requests_of(RequestKind.SUPERVISOR)) >= 1
    assert not r.model.requests_of(RequestKind.AGENT)
