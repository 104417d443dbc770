"""The agents' registry: a run's --agent-cmd finds its agent's row, the generic one last."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ptysup.agents import registry
from ptysup.agents.claude.profile import ClaudeProfile
from ptysup.agents.generic.profile import GenericProfile
from ptysup.agents.qwen.profile import QwenProfile


@pytest.mark.parametrize(
    ("agent_cmd", "name"),
    [
        (("claude", "--permission-mode", "acceptEdits"), "claude"),
        (("/opt/tools/bin/claude",), "claude"),
        (("qwen", "--approval-mode", "auto-edit"), "qwen"),
        (("/home/me/.npm/bin/qwen",), "qwen"),
        (("qwen-wrapper",), "generic"),
        (("aider", "--yes"), "aider"),
        (("/home/me/.venv/bin/aider",), "aider"),
        (("goose", "session"), "generic"),
        (("claude-wrapper",), "generic"),
        ((), "generic"),
    ],
)
def test_an_agent_command_finds_its_row(agent_cmd: tuple[str, ...], name: str) -> None:
    assert registry.find(agent_cmd).name == name


def test_claude_codes_row_reopens_the_earlier_conversation_by_its_session_id() -> None:
    kind = registry.find(("claude",))
    profile = kind.profile("0b5d", True)
    assert kind.resumes
    assert isinstance(profile, ClaudeProfile)
    assert profile.argv(["claude"], None) == ["claude", "--resume", "0b5d"]


def test_qwen_codes_row_reopens_the_earlier_conversation_by_its_session_id() -> None:
    kind = registry.find(("qwen",))
    profile = kind.profile("0b5d", True)
    assert kind.resumes and kind.tested == ("0.24.4",)
    assert isinstance(profile, QwenProfile)
    assert profile.argv(["qwen"]) == ["qwen", "--resume", "0b5d"]


def test_the_generic_row_starts_each_part_afresh() -> None:
    kind = registry.find(("goose",))
    profile = kind.profile(None, True)
    assert not kind.resumes
    assert isinstance(profile, GenericProfile)
    launch = profile.launch(["goose"], {"TERM": "xterm"}, None, Path("/nonexistent"))
    assert (launch.argv, launch.env) == (["goose"], {"TERM": "xterm"})


def test_every_command_finds_a_row_because_the_last_takes_any() -> None:
    assert registry.AGENTS[-1].matches(("anything", "at", "all"))


def test_agent_forces_a_row_by_name_whatever_the_command() -> None:
    assert registry.find(("my-wrapper.sh",), "claude").name == "claude"
    assert registry.find(("claude",), "generic").name == "generic"
    assert registry.find(("claude",)).name == "claude"


def test_every_row_has_its_own_name() -> None:
    assert len(set(registry.NAMES)) == len(registry.AGENTS)
    assert registry.NAMES[-1] == "generic"


def test_an_unknown_agent_name_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ptysup", "--agent", "cursor", "a task"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--agent" in lines[0] and "cursor" in lines[0], done.stderr


def test_claude_codes_saved_conversation_is_found_in_its_config_dir(tmp_path: Path) -> None:
    from ptysup.agents.claude.profile import conversation_saved

    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg"), "HOME": str(tmp_path / "home")}
    assert not conversation_saved("0b5d", env)
    (tmp_path / "cfg" / "projects" / "-work-x").mkdir(parents=True)
    (tmp_path / "cfg" / "projects" / "-work-x" / "0b5d.jsonl").write_text("{}\n")
    assert conversation_saved("0b5d", env)
    assert not conversation_saved("0b5d", {"HOME": str(tmp_path / "home")})  # ~/.claude
    assert registry.find(("claude",)).saved("0b5d", env)
    assert registry.find(("goose",)).saved("anything", {})  # unknown: assumed saved


def test_the_agent_options_help_and_reference_name_every_agent() -> None:
    from ptysup.cli.options import option_params

    (agent,) = [p for p in option_params() if p.name == "agent"]
    page = (Path(__file__).resolve().parents[2] / "docs/reference/options.md").read_text()
    (row,) = [line for line in page.splitlines() if line.startswith("| `--agent NAME`")]
    for name in registry.NAMES:
        assert name in str(agent.help) and f"`{name}`" in row, name


@pytest.mark.parametrize("source", ["--agent-cmd", "PTYSUP_AGENT_CMD"])
def test_an_opencode_command_ptysup_cannot_hear_is_one_line_and_exit_2(
    tmp_path: Path, source: str
) -> None:
    # --pure loads no plugin: the run would wait for a ready signal that never comes.
    args = ["--agent-cmd", "opencode --pure"] if source.startswith("--") else []
    env = {**os.environ, "PTYSUP_AGENT_CMD": "opencode --pure"} if not args else None
    done = subprocess.run(
        [sys.executable, "-m", "ptysup", *args, "a task"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--pure" in lines[0] and "leave it out" in lines[0], done.stderr
    assert not (tmp_path / ".ptysup").exists()  # nothing was started


def test_opencode_without_pure_is_no_refusal() -> None:
    argv = ["opencode", "--model", "x/pure"]
    assert registry.find(argv).name == "opencode" and registry.find(argv).refuses(argv) is None
