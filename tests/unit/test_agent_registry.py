"""The agents' registry: a run's --agent-cmd finds its agent's row, the generic one last."""

from __future__ import annotations

import json
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


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
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


def _jsonl(path: Path, *lines: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_claude_codes_conversation_counts_as_saved_once_a_message_is_in_its_transcript(
    tmp_path: Path,
) -> None:
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg"), "HOME": str(tmp_path / "home")}
    saved = registry.find(("claude",)).saved
    assert not saved("0b5d", env)
    # What Claude Code 2.1.197 had written when killed at the model's first request.
    meta = [{"type": "ai-title"}, {"type": "mode"}, {"type": "permission-mode"}]
    path = _jsonl(tmp_path / "cfg" / "projects" / "-work-x" / "0b5d.jsonl", *meta)
    assert not saved("0b5d", env)
    path.write_text(path.read_text() + '{"type": "user", "mess')  # cut by the kill
    assert not saved("0b5d", env)
    _jsonl(path, *meta, {"type": "user", "message": {"content": "the task"}})
    assert saved("0b5d", env)
    assert not saved("0b5d", {"HOME": str(tmp_path / "home")})  # ~/.claude
    assert registry.find(("goose",)).saved("anything", {})  # unknown: assumed saved


def test_codex_gemini_and_qwen_conversations_count_as_saved_once_a_message_is_on_disk(
    tmp_path: Path,
) -> None:
    sid = "1c3838d6-af41-4526-82cd-513db7b2edd4"
    env = {
        "CODEX_HOME": str(tmp_path / "codex"),
        "GEMINI_CLI_HOME": str(tmp_path / "gemini"),
        "QWEN_HOME": str(tmp_path / "qwen"),
    }
    codex, gemini, qwen = (registry.find((name,)).saved for name in ("codex", "gemini", "qwen"))
    assert not any(saved(sid, env) for saved in (codex, gemini, qwen))
    # Codex 0.169.0: a rollout under sessions/<date>/, a message once the prompt was sent.
    rollout = tmp_path / "codex" / "sessions" / "2026" / "11" / "27" / f"rollout-t-{sid}.jsonl"
    _jsonl(rollout, {"type": "session_meta", "payload": {"id": sid}})
    assert not codex(sid, env)
    _jsonl(rollout, {"type": "session_meta"}, {"type": "response_item", "payload": {}})
    assert codex(sid, env) and not codex("other", env)
    # Gemini CLI 0.61.0: a header naming the id and a $set of the session's context first.
    chat = tmp_path / "gemini" / ".gemini" / "tmp" / "project" / "chats"
    head = {"sessionId": sid, "projectHash": "d2"}
    context = {"$set": {"messages": [{"type": "user", "content": "<session_context>"}]}}
    _jsonl(chat / f"session-2026-11-27T16-37-{sid[:8]}.jsonl", head, context)
    assert not gemini(sid, env)
    _jsonl(chat / f"session-2026-11-27T16-37-{sid[:8]}.jsonl", head, context, {"type": "user"})
    assert gemini(sid, env)
    assert not gemini(sid[:8] + "-0000-0000-0000-000000000000", env)  # another's header
    # Qwen Code 0.24.4: projects/<folder>/chats/<id>.jsonl, nothing until the prompt.
    qwen_chat = tmp_path / "qwen" / "projects" / "-work-x" / "chats" / f"{sid}.jsonl"
    _jsonl(qwen_chat, {"type": "system"})
    assert not qwen(sid, env)
    _jsonl(qwen_chat, {"type": "user", "message": {"parts": []}})
    assert qwen(sid, env)


def test_the_agent_options_help_and_reference_name_every_agent() -> None:
    from ptysup.cli.options import option_params

    (agent,) = [p for p in option_params() if p.name == "agent"]
    page = (Path(__file__).resolve().parents[2] / "docs/reference/options.md").read_text()
    (row,) = [line for line in page.splitlines() if line.startswith("| `--agent NAME`")]
    for name in registry.NAMES:
        assert name in str(agent.help) and f"`{name}`" in row, name


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
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
