"""The rig every end-to-end test of ptysup uses: a project, the fake model, a private Claude."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ptysup.testing.fakemodel import FakeModel, RequestKind
from ptysup.testing.scenario import Scenario
from tests.conftest import ClaudeEnvFactory, FakeModelFactory
from tests.helpers import Run, kill_all, processes_with, ptysup_argv, run_ptysup

AGENT = "claude --permission-mode acceptEdits"
DEMO = Path(__file__).resolve().parents[2] / "ptysup" / "testing" / "scenarios" / "demo.yaml"


@dataclass
class Rig:
    """One project dir, fake model and private Claude config, ready to run ptysup in."""

    project: Path
    model: FakeModel
    env: dict[str, str]
    log: Path

    def run(self, task: str, *args: str, timeout: float = 120) -> Run:
        return run_ptysup(
            [task, "--agent-cmd", AGENT, *args],
            cwd=self.project,
            env=self.env,
            log_path=self.log,
            timeout=timeout,
        )

    def ptysup(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        """ptysup with exactly these arguments (a subcommand, a plan...), in the project."""
        return subprocess.run(
            ptysup_argv(*args),
            cwd=self.project,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def popen(self, task: str, *args: str) -> subprocess.Popen[str]:
        return self.start(task, "--agent-cmd", AGENT, "--log-file", str(self.log), *args)

    def start(self, *args: str) -> subprocess.Popen[str]:
        """ptysup with exactly these arguments, started in the project, output piped."""
        return subprocess.Popen(
            ptysup_argv(*args),
            cwd=self.project,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def human_texts(self, kind: RequestKind = RequestKind.AGENT) -> list[str]:
        """Distinct user messages the model saw, in order (tool round trips repeat them)."""
        seen: list[str] = []
        for r in self.model.requests_of(kind):
            if not seen or seen[-1] != r.human_text:
                seen.append(r.human_text)
        return seen

    def leftovers(self) -> list[int]:
        return processes_with(str(self.env["CLAUDE_CONFIG_DIR"]))


@pytest.fixture
def rig(
    fake_model: FakeModelFactory, claude_env: ClaudeEnvFactory, project_dir: Path, tmp_path: Path
) -> Iterator[Callable[[Scenario | Path | Mapping[str, Any]], Rig]]:
    made: list[Rig] = []

    def make(scenario: Scenario | Path | Mapping[str, Any]) -> Rig:
        if isinstance(scenario, Path):
            scenario = Scenario.load(scenario)
        elif not isinstance(scenario, Scenario):
            scenario = Scenario.from_dict(scenario)
        scenario.seed(project_dir)
        model = fake_model(scenario)
        env = dict(claude_env(model.url).env)
        r = Rig(project_dir, model, env, tmp_path / "events.jsonl")
        made.append(r)
        return r

    yield make
    for r in made:
        left = r.leftovers()
        kill_all(left)
        assert not left, f"processes outlived ptysup: {left}"
