"""The lean judge: what ptysup adds to a Claude Code (or `codex exec`) supervisor's
command line.

Measured with Claude Code 2.1.197 against the fake model: a bare `claude -p` sends ~79 KB
per call, 64.5 KB of it the definitions of 24 tools a judge never uses; with only the
read-only tools ~13.5 KB, and with ptysup's instructions as the system prompt ~8.4 KB.
The instructions and the task also sit at a block boundary there (the system prompt),
where the prompt cache can serve them from one decision to the next.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ptysup.agents.private import private_dir
from ptysup.agents.qwen import launcher
from ptysup.agents.qwen.settings import NO_RELAUNCH as QWEN_NO_RELAUNCH
from ptysup.config import DEFAULT_SUPERVISOR_TOOLS
from ptysup.procutil import is_claude, is_codex, is_gemini, is_opencode, is_qwen
from ptysup.supervisor import geminijudge

_SYSTEM_FLAGS = ("--system-prompt", "--system-prompt-file", "--append-system-prompt")
# Any of these in the user's command says what the judge may do: ptysup adds no tools then.
_PERMISSION_FLAGS = (
    "--tools",
    "--allowedTools",
    "--allowed-tools",
    "--disallowedTools",
    "--disallowed-tools",
    "--permission-mode",
    "--dangerously-skip-permissions",
)


@dataclass(frozen=True)
class JudgeOptions:
    """What the run asks of a Claude Code supervisor."""

    tools: str = DEFAULT_SUPERVISOR_TOOLS  # read-only; --verify runs the real checks
    model: str | None = None  # None: Claude Code's default model
    # The judge's private directory (`judge_dir`), where a `gemini -p` judge's policy and
    # home are; None: none was made.
    private: Path | None = None


def _has(argv: Sequence[str], *flags: str) -> bool:
    return any(a == f or a.startswith(f + "=") for a in argv for f in flags)


def lean_argv(argv: Sequence[str], options: JudgeOptions) -> list[str]:
    """`argv` with the judge's tools, model and no saved session added; whatever the user
    already put in the command wins. Other supervisor commands are left as they are."""
    out = list(argv)
    if is_codex(out) and out[1:2] in (["exec"], ["e"]):
        return _lean_codex_exec(out, options)
    if is_gemini(out):
        return _lean_gemini(out, options)
    if is_qwen(out):
        return _lean_qwen(out, options)
    if is_opencode_run(out):
        return _lean_opencode_run(out, options)
    if not is_claude(out):
        return out
    if not _has(out, *_PERMISSION_FLAGS):
        out += ["--tools", options.tools]
        if options.tools:
            # In -p mode a tool that asks permission is denied: the tools given are allowed.
            out += ["--allowedTools", options.tools]
    if options.model and not _has(out, "--model"):
        out += ["--model", options.model]
    if not _has(out, "--no-session-persistence"):
        out.append("--no-session-persistence")  # a judge's session is never resumed
    return out


def _lean_codex_exec(out: list[str], options: JudgeOptions) -> list[str]:
    """`codex exec` as a judge (Codex CLI 0.169): the prompt on stdin, the last message on
    stdout. It may run in any folder (no git repo needed), keeps no session file (a judge
    is never resumed) and reads without writing (a read-only sandbox)."""
    if not _has(out, "--skip-git-repo-check"):
        out.append("--skip-git-repo-check")
    if not _has(out, "--ephemeral"):
        out.append("--ephemeral")
    if not _has(out, "-s", "--sandbox", "--dangerously-bypass-approvals-and-sandbox"):
        out += ["--sandbox", "read-only"]
    if options.model and not _has(out, "-m", "--model"):
        out += ["--model", options.model]
    return out


def _with_prompt(out: list[str]) -> list[str]:
    """`-p` with its value: the README's `gemini -p` has none, and Gemini CLI 0.61 refuses
    that ("Not enough arguments following: p", exit 1). The prompt comes on stdin, which
    it reads before an empty `-p ""`."""
    for i, arg in enumerate(out):
        if arg in ("-p", "--prompt") and (i + 1 == len(out) or out[i + 1].startswith("-")):
            return [*out[: i + 1], "", *out[i + 1 :]]
    return out


def _chose_tools(out: Sequence[str], *own: str) -> bool:
    """Whether the person's command says what the judge may do: an approval mode other
    than plan, YOLO, or OWN flags of the agent's (then ptysup adds no restriction)."""
    for i, arg in enumerate(out):
        mode = arg.split("=", 1)[1] if arg.startswith("--approval-mode=") else None
        if arg == "--approval-mode" and i + 1 < len(out):
            mode = out[i + 1]
        if mode is not None and mode != "plan":
            return True
    return _has(out, "-y", "--yolo", *own)


def _lean_gemini(out: list[str], options: JudgeOptions) -> list[str]:
    """A `gemini -p` judge (Gemini CLI 0.61): read-only (`--approval-mode plan`, and a
    policy that leaves it only the reading tools, whatever the person's policies and
    settings allow: see geminijudge.py), and trusting the folder for this call only, as
    headless Gemini CLI refuses an untrusted folder ("not running in a trusted directory",
    exit 55)."""
    out = _with_prompt(out)
    chose = _chose_tools(out, "--policy", "--admin-policy")
    if not _has(out, "--approval-mode", "-y", "--yolo"):
        out += ["--approval-mode", "plan"]
    if options.private is not None and not chose:
        policy = str(geminijudge.policy_path(options.private))
        out += ["--admin-policy", policy, "--policy", policy]
    if not _has(out, "--skip-trust"):
        out.append("--skip-trust")
    if options.model and not _has(out, "--model", "-m"):
        out += ["--model", options.model]
    return out


# Qwen Code 0.24's tools that only read the project, and the ones that change something,
# run something or reach out: `--core-tools` keeps only the first (Qwen Code adds the
# settings' `tools.core` to it, so a `tools.core` of the person's or the project's could
# bring a tool back), `--exclude-tools` denies the rest whatever `permissions.allow` says.
QWEN_READ_TOOLS = ("read_file", "grep_search", "glob", "list_directory")
QWEN_WRITE_TOOLS = (
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


def _lean_qwen(out: list[str], options: JudgeOptions) -> list[str]:
    """A `qwen -p` judge (Qwen Code 0.24): read-only (`--approval-mode plan`, and only the
    reading tools: plan mode alone ran a `write_file` that the person's
    `permissions.allow` allows), no chat recorded to disk (a judge is never resumed), and
    started without the launcher whose child would outlive a killed ptysup (see
    agents/qwen/launcher.py)."""
    out = _with_prompt(out)
    chose = _chose_tools(out, "--core-tools", "--exclude-tools", "--allowed-mcp-server-names")
    if not _has(out, "--approval-mode", "-y", "--yolo"):
        out += ["--approval-mode", "plan"]
    if not chose:
        out += ["--core-tools", ",".join(QWEN_READ_TOOLS)]
        out += ["--exclude-tools", ",".join(QWEN_WRITE_TOOLS)]
        out += ["--allowed-mcp-server-names", NO_MCP_SERVER]
    if not _has(out, "--chat-recording", "--no-chat-recording"):
        out.append("--chat-recording=false")
    if options.model and not _has(out, "--model", "-m"):
        out += ["--model", options.model]
    return launcher.direct(out)


@contextlib.contextmanager
def judge_dir(
    argv: Sequence[str], env: Mapping[str, str], run_id: str | None = None
) -> Iterator[Path | None]:
    """A private directory for the judge's own files, removed after the block (a killed
    run's is removed by its resume, as its agent's): for `gemini -p`, its policy and its
    home (geminijudge.py). None for a judge that needs none."""
    if not is_gemini(argv):
        yield None
        return
    with private_dir(run_id, env) as private:
        geminijudge.write(private, env)
        yield private


JUDGE_TITLE = "ptysup decision"


def _lean_opencode_run(out: list[str], options: JudgeOptions) -> list[str]:
    """`opencode run` as a judge (opencode 1.18): the prompt on stdin, the answer alone on
    stdout. Read-only: its `plan` agent, which may not edit; titled, so that opencode asks
    its model for no title (a second request per decision, quoting the prompt). opencode
    keeps the call's session in its database (it has no switch against that)."""
    if not _has(out, "--agent"):
        out += ["--agent", "plan"]
    if not _has(out, "--title"):
        out += ["--title", JUDGE_TITLE]
    if options.model and not _has(out, "-m", "--model"):
        out += ["--model", options.model]
    return out


# `opencode run`'s tools for a judge: those of a Claude Code judge (read and search the
# project), every other one denied. opencode 1.18 leaves a denied tool out of the request;
# one it would ask about, `opencode run` refuses ("auto-rejecting") and the call ends
# there, with nothing on stdout: the judge's model never got to answer.
OPENCODE_JUDGE_PERMISSION = '{"*": "deny", "read": "allow", "grep": "allow", "glob": "allow"}'
_OPENCODE_PERMISSION = "OPENCODE_PERMISSION"


def lean_env(
    argv: Sequence[str], env: Mapping[str, str], private: Path | None = None
) -> dict[str, str]:
    """The supervisor's environment: for `gemini` and `qwen`, no relaunch. Gemini CLI 0.61
    (and Qwen Code 0.24, its fork) otherwise starts itself again as a child, which outlives
    a SIGKILLed ptysup (only the first process dies with it) and waits for its model's
    answer; one process also starts faster. A `gemini` judge with a PRIVATE directory
    (`judge_dir`) runs in the home made there, so its sessions stay out of yours."""
    out = dict(env)
    if is_gemini(argv):
        out["GEMINI_CLI_NO_RELAUNCH"] = "true"
        if private is not None:
            out["GEMINI_CLI_HOME"] = str(geminijudge.home_path(private))
    if is_qwen(argv):
        out[QWEN_NO_RELAUNCH] = "true"
    if is_opencode_run(argv) and not _has(argv, "--auto") and _OPENCODE_PERMISSION not in env:
        out[_OPENCODE_PERMISSION] = OPENCODE_JUDGE_PERMISSION
    return out


def is_opencode_run(argv: Sequence[str]) -> bool:
    """Whether `argv` is `opencode run` (opencode's one-shot mode)."""
    return is_opencode(argv) and list(argv[1:2]) == ["run"]


def takes_system_prompt(argv: Sequence[str]) -> bool:
    """Whether ptysup passes its instructions as the system prompt: a Claude Code
    supervisor whose command line does not set a system prompt of its own."""
    return is_claude(argv) and not _has(argv, *_SYSTEM_FLAGS)


def with_system_prompt(argv: Sequence[str], path: str) -> list[str]:
    """`argv` reading its system prompt from the file at `path` (kept out of `ps`)."""
    return [*argv, "--system-prompt-file", path]


# Each vendor's CLI as a judge, in the order `--second-opinion auto` prefers them; the
# program's name is the vendor's (a judge's or an agent's). `gemini -p` and `qwen -p` take
# the prompt as -p's value: an empty one, then the prompt on stdin.
JUDGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("claude", ("claude", "-p")),
    ("codex", ("codex", "exec")),
    ("gemini", ("gemini", "-p", "")),
    ("qwen", ("qwen", "-p", "")),
    ("opencode", ("opencode", "run")),
)
VENDORS = tuple(name for name, _ in JUDGES)


def vendor(argv: Sequence[str]) -> str | None:
    """The vendor of a command (its program is one of VENDORS' CLIs), else None."""
    name = os.path.basename(argv[0]) if argv else ""
    return name if name in VENDORS else None


def other_judge(
    excluded: Collection[str | None], installed: Callable[[str], bool]
) -> tuple[str, ...] | None:
    """The first judge command of a vendor not in `excluded` whose program is installed."""
    return next(
        (argv for name, argv in JUDGES if name not in excluded and installed(argv[0])), None
    )
