"""Shared fixtures: the pinned Claude Code binary, its private environment, the fake model."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from ptysup.testing.fakemodel import FakeModel
from ptysup.testing.kit import AgentEnv, agent_env, offline_home
from ptysup.testing.pins import pin
from ptysup.testing.scenario import Scenario

pytest_plugins = ["pytester"]  # tests/unit/test_tiers.py runs this file's hooks

ClaudeEnvFactory = Callable[..., AgentEnv]
FakeModelFactory = Callable[..., FakeModel]


def pinned(name: str) -> Path:
    """Agent NAME's binary; skips (or fails with PTYSUP_REQUIRE_E2E=1) when it is missing."""
    chosen = pin(name)
    found = chosen.find()
    if found is None or not found.exists():
        install = f"python -m ptysup.testing.kit {name} install"
        label = offline_home(name).label
        message = f"{label} not found: run `{install}` or set {chosen.bin_env}"
        if os.environ.get("PTYSUP_REQUIRE_E2E") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return found


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    """The Claude Code binary; skips (or fails with PTYSUP_REQUIRE_E2E=1) when missing."""
    return pinned("claude")


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    """The Codex CLI binary; skips (or fails with PTYSUP_REQUIRE_E2E=1) when missing."""
    return pinned("codex")


@pytest.fixture(scope="session")
def gemini_bin() -> Path:
    """The Gemini CLI binary; skips (or fails with PTYSUP_REQUIRE_E2E=1) when missing."""
    return pinned("gemini")


@pytest.fixture(scope="session")
def aider_bin() -> Path:
    """The aider binary; skips (or fails with PTYSUP_REQUIRE_E2E=1) when missing."""
    return pinned("aider")


@pytest.fixture(scope="session")
def qwen_bin() -> Path:
    """The Qwen Code binary; skips (or fails with PTYSUP_REQUIRE_E2E=1) when missing."""
    return pinned("qwen")


@pytest.fixture(scope="session")
def opencode_bin() -> Path:
    """The opencode binary; skips (or fails with PTYSUP_REQUIRE_E2E=1) when missing."""
    return pinned("opencode")


@pytest.fixture
def project_dir(tmp_path: Path) -> Path:
    """An empty project directory for the agent to work in."""
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def claude_env(claude_bin: Path, project_dir: Path) -> Iterator[ClaudeEnvFactory]:
    """`claude_env(base_url, project_dirs=[project_dir])` -> AgentEnv, removed at teardown."""
    with ExitStack() as stack:

        def make(base_url: str, project_dirs: Sequence[Path] | None = None) -> AgentEnv:
            dirs = [project_dir] if project_dirs is None else list(project_dirs)
            return stack.enter_context(agent_env("claude", base_url, dirs, claude_bin))

        yield make


@pytest.fixture
def fake_model(project_dir: Path, tmp_path: Path) -> Iterator[FakeModelFactory]:
    """`fake_model(scenario, workdir=project_dir, log_path=tmp/fakemodel.jsonl)` -> a running
    FakeModel; the scenario is a Scenario, a YAML file path, or its dict form."""
    with ExitStack() as stack:

        def make(
            scenario: Scenario | Path | Mapping[str, Any],
            workdir: Path | None = None,
            log_path: Path | None = None,
        ) -> FakeModel:
            if isinstance(scenario, Path):
                scenario = Scenario.load(scenario)
            elif not isinstance(scenario, Scenario):
                scenario = Scenario.from_dict(scenario)
            model = FakeModel(
                scenario,
                workdir=project_dir if workdir is None else workdir,
                log_path=tmp_path / "fakemodel.jsonl" if log_path is None else log_path,
            )
            return stack.enter_context(model)

        yield make


# The tier of a test is its folder (docs/development.md): tests/pty's and
# tests/integration's (real PTYs, processes) are marked `pty`, as tests/e2e's are `e2e`.
TIERS = {"pty": pytest.mark.pty, "integration": pytest.mark.pty}


def pytest_addoption(parser: pytest.Parser) -> None:
    # scripts/test.sh runs the suite, then the tests marked `alone` (they load the machine
    # or measure it) on their own. An option, not a variable: no run under test inherits it.
    parser.addoption(
        "--alone",
        choices=("skip", "only"),
        default=None,
        help="skip: leave out the tests marked alone; only: run nothing else",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mark_tiers(items)
    keep_part(config, items, config.getoption("alone") or "")


def mark_tiers(items: list[pytest.Item]) -> None:
    """Mark each test with its folder's tier."""
    for item in items:
        folder = item.path.parent.name
        if folder in TIERS and item.path.parent.parent.name == "tests":
            item.add_marker(TIERS[folder])


def keep_part(config: pytest.Config, items: list[pytest.Item], wanted: str) -> None:
    """Keep the tests marked `alone` (WANTED "only") or all the others ("skip")."""
    if wanted not in ("skip", "only"):
        return
    only = wanted == "only"
    keep = [item for item in items if (item.get_closest_marker("alone") is not None) == only]
    if len(keep) != len(items):
        kept = {id(item) for item in keep}
        config.hook.pytest_deselected(items=[item for item in items if id(item) not in kept])
        items[:] = keep


# A failed test that ran ptysup shows the end of each event log it left (its tmp_path):
# a CI failure from load reads with the run's own account of what happened.
RUN_LOG_LINES = 40
RUN_LOGS_SHOWN = 4
RUN_LOG_TAIL = 64 * 1024  # bytes read from a log's end: a fault test leaves one of 600 MiB


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    tmp = getattr(item, "funcargs", {}).get("tmp_path")
    if report.failed and call.when == "call" and isinstance(tmp, Path):
        for log, lines in run_logs(tmp)[-RUN_LOGS_SHOWN:]:
            shown = "\n".join(line[:400] for line in lines[-RUN_LOG_LINES:])
            report.sections.append((f"run log {log.relative_to(tmp)}", shown))
    return report


def run_logs(tmp: Path, tail: int = RUN_LOG_TAIL) -> list[tuple[Path, list[str]]]:
    """Each event log under TMP that can be read, oldest first, with the lines of its last
    TAIL bytes (the first of them whole)."""
    found = []
    try:
        logs = list(tmp.rglob("events*.jsonl"))
    except OSError:  # a folder another user's test made unreadable
        return []
    for log in logs:
        try:
            if not log.is_file() or log.is_symlink():  # a FIFO a fault test made: no read
                continue
            found.append((log.stat().st_mtime, log, _tail(log, tail)))
        except OSError:
            continue
    return [(log, lines) for _, log, lines in sorted(found)]


def _tail(log: Path, size: int) -> list[str]:
    with log.open("rb") as f:
        start = max(0, f.seek(0, os.SEEK_END) - size)
        f.seek(start)
        lines = f.read().decode(errors="replace").splitlines()
    return lines[1:] if start else lines  # a line cut by the start is left out
