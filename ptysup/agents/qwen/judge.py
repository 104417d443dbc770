"""`qwen -p` as ptysup's supervisor (Qwen Code 0.24)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ptysup.agents.oneshot import JudgeOptions, OneShot, chose_tools, has, runs, with_prompt
from ptysup.agents.qwen import launcher
from ptysup.agents.qwen.settings import NO_RELAUNCH

# Qwen Code 0.24's tools that only read the project, and the ones that change something,
# run something or reach out: `--core-tools` keeps only the first (Qwen Code adds the
# settings' `tools.core` to it, so a `tools.core` of the person's or the project's could
# bring a tool back), `--exclude-tools` denies the rest whatever `permissions.allow` says.
READ_TOOLS = ("read_file", "grep_search", "glob", "list_directory")
WRITE_TOOLS = (
    "edit",
    "write_file",
    "notebook_edit",
    "run_shell_command",
    "exec",
    "monitor",
    "save_memory",
    "agent",
    "skill",
    "tool_call",
    "workflow",
    "cron_create",
    "create_sub_session",
    "team_create",
    "send_message",
    "enter_worktree",
    "artifact",
    "image_gen",
    "web_fetch",
    "web_search",
)
# `--allowed-mcp-server-names` with a name no server has: no MCP server starts for a call.
NO_MCP_SERVER = "ptysup-judge-no-mcp"


def is_qwen(argv: Sequence[str]) -> bool:
    """Whether a command is Qwen Code (its executable is named qwen), agent or judge."""
    return runs(argv, "qwen")


def lean(out: list[str], options: JudgeOptions) -> list[str]:
    """A `qwen -p` judge: read-only (`--approval-mode plan`, and only the reading tools:
    plan mode alone ran a `write_file` that the person's `permissions.allow` allows), no
    chat recorded to disk (a judge is never resumed), and started without the launcher
    whose child would outlive a killed ptysup (see launcher.py)."""
    out = with_prompt(out)
    chose = chose_tools(out, "--core-tools", "--exclude-tools", "--allowed-mcp-server-names")
    if not has(out, "--approval-mode", "-y", "--yolo"):
        out += ["--approval-mode", "plan"]
    if not chose:
        out += ["--core-tools", ",".join(READ_TOOLS)]
        out += ["--exclude-tools", ",".join(WRITE_TOOLS)]
        out += ["--allowed-mcp-server-names", NO_MCP_SERVER]
    if not has(out, "--chat-recording", "--no-chat-recording"):
        out.append("--chat-recording=false")
    if options.model and not has(out, "--model", "-m"):
        out += ["--model", options.model]
    return launcher.direct(out)


def judge_env(argv: Sequence[str], env: Mapping[str, str], private: Path | None) -> dict[str, str]:
    """No relaunch: Qwen Code 0.24 (a fork of Gemini CLI) otherwise starts itself again as
    a child, which outlives a SIGKILLed ptysup and waits for its model's answer."""
    return {**env, NO_RELAUNCH: "true"}


# `qwen -p` takes the prompt as -p's value: an empty one, then the prompt on stdin.
JUDGE = OneShot(("qwen", "-p", ""), is_qwen, lean, env=judge_env)
