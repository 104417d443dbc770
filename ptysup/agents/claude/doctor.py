"""What `ptysup doctor` checks for Claude Code: its own config for this folder (onboarding,
folder trust, API-key approval or login), the screens that block a first run in CI (see
agents/firstrun.py). It only reads."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ptysup.agents import firstrun
from ptysup.agents.checks import Check


def claude_json_path(env: Mapping[str, str]) -> Path:
    """Where Claude Code keeps onboarding, trust and key approvals: $CLAUDE_CONFIG_DIR or ~."""
    base = env.get("CLAUDE_CONFIG_DIR")
    return (
        Path(base) / ".claude.json"
        if base
        else Path(env.get("HOME", "~")).expanduser() / ".claude.json"
    )


def checks(env: Mapping[str, str], cwd: Path) -> Iterator[Check]:
    """The screens that would block Claude Code's first start here (agents/firstrun.py)."""
    path = claude_json_path(env)
    data: dict[str, Any] = {}
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
        data = loaded if isinstance(loaded, dict) else {}
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as exc:
        yield Check(
            "Claude Code config", False, f"cannot read {path}: {exc}", firstrun.ONBOARDING.fix
        )
        return
    yield Check(
        "onboarding",
        bool(data.get("hasCompletedOnboarding")),
        f"done ({path})"
        if data.get("hasCompletedOnboarding")
        else f"not done ({path}): Claude Code would show its {firstrun.ONBOARDING.name}",
        firstrun.ONBOARDING.fix,
    )
    trusted = _trusted_folder(data, cwd)
    yield Check(
        "folder trust",
        trusted is not None,
        f"{trusted} is trusted"
        if trusted
        else f"{cwd} is not trusted: Claude Code would show its {firstrun.TRUST.name}",
        firstrun.TRUST.fix,
    )
    yield _credentials(data, env)


def _trusted_folder(data: Mapping[str, Any], cwd: Path) -> Path | None:
    """The folder (this one or a parent: observed, trust covers subfolders) trusted, or None."""
    projects = data.get("projects")
    if not isinstance(projects, dict):
        return None
    for folder in (cwd.resolve(), *cwd.resolve().parents):
        entry = projects.get(str(folder))
        if isinstance(entry, dict) and entry.get("hasTrustDialogAccepted"):
            return folder
    return None


def _credentials(data: Mapping[str, Any], env: Mapping[str, str]) -> Check:
    key = env.get("ANTHROPIC_API_KEY")
    if key:
        responses = data.get("customApiKeyResponses")
        responses = responses if isinstance(responses, dict) else {}
        tail = key[-20:]  # what Claude Code 2.1.197 records
        if tail in (responses.get("approved") or []):
            return Check("API key", True, "ANTHROPIC_API_KEY is set and approved")
        why = "was rejected" if tail in (responses.get("rejected") or []) else "is not approved yet"
        return Check(
            "API key",
            False,
            f"ANTHROPIC_API_KEY {why}: Claude Code would show its {firstrun.API_KEY.name}",
            firstrun.API_KEY.fix,
        )
    if env.get("ANTHROPIC_AUTH_TOKEN"):
        return Check("credentials", True, "ANTHROPIC_AUTH_TOKEN is set")
    base = env.get("CLAUDE_CONFIG_DIR")
    home = Path(env.get("HOME", "~")).expanduser()
    credentials = (Path(base) if base else home / ".claude") / ".credentials.json"
    if data.get("oauthAccount") or credentials.exists():
        return Check("credentials", True, "logged in")
    return Check(
        "credentials",
        False,
        "no ANTHROPIC_API_KEY and no login: every prompt would fail (authentication_failed)",
        firstrun.LOGIN.fix,
    )
