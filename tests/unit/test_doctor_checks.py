"""ptysup doctor's checks of the output paths, named as the person gave them."""

from __future__ import annotations

from pathlib import Path

from ptysup.cli.doctor import run_checks
from ptysup.config import RunConfig


def _names(config: RunConfig, cwd: Path) -> list[str]:
    return [c.name for c in run_checks(config, {"PATH": ""}, cwd) if "writable" in c.name]


def test_the_default_event_log_is_not_called_an_option_nobody_gave(tmp_path: Path) -> None:
    assert _names(RunConfig(task="t"), tmp_path) == ["event log writable"]
    given = RunConfig(task="t", log_file=tmp_path / "e.jsonl")
    assert _names(given, tmp_path) == ["--log-file writable"]
