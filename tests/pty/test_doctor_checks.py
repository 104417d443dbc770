"""ptysup doctor's checks of the output paths, named as the person gave them."""

from __future__ import annotations

from pathlib import Path

import pytest

from ptysup.cli.doctor import run_checks
from ptysup.config import RunConfig


def _names(config: RunConfig, cwd: Path) -> list[str]:
    return [c.name for c in run_checks(config, {"PATH": ""}, cwd) if "writable" in c.name]


def test_the_default_event_log_is_not_called_an_option_nobody_gave(tmp_path: Path) -> None:
    assert _names(RunConfig(task="t"), tmp_path) == ["event log writable"]
    given = RunConfig(task="t", log_file=tmp_path / "e.jsonl")
    assert _names(given, tmp_path) == ["--log-file writable"]


def _claude_printing(tmp_path: Path, version: str) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    claude = bindir / "claude"
    claude.write_text(f"#!/bin/sh\necho '{version} (Claude Code)'\n")
    claude.chmod(0o755)
    return bindir


def _agent_version(tmp_path: Path, version: str) -> str:
    from ptysup.agents import registry

    assert version in registry.find(("claude",)).tested or version == "9.9.9"
    env = {"PATH": str(_claude_printing(tmp_path, version))}
    found = [c for c in run_checks(RunConfig(task="t"), env, tmp_path) if c.name == "agent version"]
    assert len(found) == 1 and found[0].ok
    return found[0].detail


def test_doctor_says_the_installed_agent_is_a_release_the_tests_ran_against(
    tmp_path: Path,
) -> None:
    from ptysup.testing.pins import pin

    version = pin("claude").version
    assert _agent_version(tmp_path, version) == f"claude {version}, tested with ptysup"


def test_doctor_says_when_the_installed_agent_is_not_one_ptysup_was_tested_with(
    tmp_path: Path,
) -> None:
    from ptysup.testing.pins import pin

    claude = pin("claude")
    detail = _agent_version(tmp_path, "9.9.9")
    lane = f", {claude.previous} in its compatibility lane" if claude.previous else ""
    assert detail == (
        f"claude 9.9.9 is not a release ptysup was tested with ({claude.version} pinned"
        f"{lane}); scripts/test-lane.sh latest runs the tests against the newest"
    )


def test_doctor_says_the_compatibility_lanes_release_is_tested_and_names_the_pin(
    tmp_path: Path,
) -> None:
    from ptysup.testing.pins import pin

    claude = pin("claude")
    if claude.previous is None:  # the pin has not moved: no compatibility lane to name
        pytest.skip("Claude Code's pin has no previous release (docs/agents.md)")
    assert _agent_version(tmp_path, claude.previous) == (
        f"claude {claude.previous}, tested with ptysup (its compatibility lane; "
        f"the tests' pin is {claude.version})"
    )


def test_every_pinned_agent_is_a_release_its_row_calls_tested() -> None:
    from ptysup.agents import registry
    from ptysup.testing.pins import PINS

    for pin in PINS:
        assert pin.version in registry.find((), pin.name).tested


def test_doctor_looks_for_the_second_opinion_and_says_which_auto_would_pick(
    tmp_path: Path,
) -> None:
    bindir = _claude_printing(tmp_path, "9.9.9")
    env = {"PATH": str(bindir)}

    def second(config: RunConfig) -> list[tuple[bool, str]]:
        checks = run_checks(config, env, tmp_path)
        return [(c.ok, c.detail) for c in checks if c.name == "second opinion"]

    assert second(RunConfig(task="t")) == []
    (found,) = second(RunConfig(task="t", second_opinion=("codex", "exec")))
    assert found == (False, "codex not found on PATH")
    (found,) = second(RunConfig(task="t", second_opinion=("auto",)))
    assert not found[0] and "no supervisor CLI of another vendor" in found[1]
    codex = bindir / "codex"
    codex.write_text("#!/bin/sh\necho 'codex-cli 0.169.0'\n")
    codex.chmod(0o755)
    (found,) = second(RunConfig(task="t", second_opinion=("auto",)))
    # A known agent's CLI as a judge: its release is shown, as the agent's is.
    assert found == (True, f"{codex} (codex-cli 0.169.0)")
