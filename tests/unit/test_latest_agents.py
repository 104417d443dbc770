"""scripts/test-lane.sh's parts: npm's newest release of each pinned agent (or the previous
pin), installed once into its own folder, and every pin known to the registry as tested."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ptysup.agents import registry
from ptysup.testing import lanes as latest
from ptysup.testing.pins import PINS, Pin, pin

PIN = Pin("claude", "@scope/agent", "1.0.0", "agent", "PTYSUP_AGENT_BIN", "agent")


def _npm(tmp_path: Path) -> str:
    """An npm that says 2.0.0 is newest and 'installs' a launcher, counting its installs."""
    npm = tmp_path / "npm"
    npm.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = view ]; then echo 2.0.0; exit 0; fi\n'
        'while [ "$1" != --prefix ]; do shift; done\n'
        'mkdir -p "$2/node_modules/.bin" && touch "$2/node_modules/.bin/agent"\n'
        f"echo x >> {tmp_path}/installs\n"
    )
    npm.chmod(0o755)
    return str(npm)


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
def test_the_newest_release_is_npms_and_is_installed_once_beside_the_pinned(
    tmp_path: Path,
) -> None:
    npm = _npm(tmp_path)
    assert latest.newest(PIN, npm) == "2.0.0"
    binary = latest.install(PIN, "2.0.0", npm, tmp_path / "latest")
    assert binary == tmp_path / "latest" / "agent-2.0.0" / "node_modules" / ".bin" / "agent"
    assert binary.exists()
    latest.install(PIN, "2.0.0", npm, tmp_path / "latest")
    assert (tmp_path / "installs").read_text().count("x") == 1


def test_every_pinned_agent_is_a_registry_row_that_calls_its_pin_tested() -> None:
    for each in PINS:
        assert each.version in registry.find((each.bin_name,), each.name).tested
        assert each.bin_env.startswith("PTYSUP_") and each.bin_env.endswith("_BIN")
        if each.previous:  # the compatibility lane's release is tested too
            assert registry.find((), each.name).tested == (each.version, each.previous)


def test_the_previous_lane_runs_the_former_pin_and_the_pin_where_none_moved() -> None:
    moved = Pin(
        "claude", "@scope/agent", "2.0.0", "agent", "PTYSUP_AGENT_BIN", "agent", previous="1.0.0"
    )
    assert latest.release(moved, "previous", "npm") == "1.0.0"
    assert latest.release(PIN, "previous", "npm") == "1.0.0"  # no previous: the pin itself


def test_a_lane_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert latest.main([]) == 2
    assert latest.main(["newest"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == ["ptysup: usage: scripts/test-lane.sh previous|latest [PYTEST ARGS]"] * 2


def test_a_pypi_pins_newest_release_is_pips(monkeypatch: pytest.MonkeyPatch) -> None:
    said = "aider-chat (0.87.0)\nAvailable versions: 0.87.0, 0.86.2\n"

    def pip(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        assert argv[1:] == ["-m", "pip", "index", "versions", "aider-chat"]
        return subprocess.CompletedProcess(argv, 0, said, "")

    monkeypatch.setattr(subprocess, "run", pip)
    assert latest.newest(pin("aider"), "npm") == "0.87.0"
