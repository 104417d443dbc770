"""What ptysup adds to a supervisor's command line (each agent's one-shot mode, as its folder
says), and what it leaves alone."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ptysup.agents.gemini import judge as geminijudge
from ptysup.agents.opencode.judge import JUDGE_PERMISSION as OPENCODE_JUDGE_PERMISSION
from ptysup.agents.qwen.judge import NO_MCP_SERVER
from ptysup.agents.qwen.judge import WRITE_TOOLS as QWEN_WRITE_TOOLS
from ptysup.config import DEFAULT_SUPERVISOR_TOOLS
from ptysup.supervisor.judge import (
    JudgeOptions,
    judge_dir,
    lean_argv,
    lean_env,
    takes_system_prompt,
    with_system_prompt,
)

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]


def test_a_claude_judge_gets_read_only_tools_and_no_saved_session() -> None:
    assert lean_argv(["claude", "-p"], JudgeOptions()) == [
        "claude",
        "-p",
        "--tools",
        "Read,Grep,Glob",
        "--allowedTools",
        "Read,Grep,Glob",
        "--no-session-persistence",
    ]
    assert DEFAULT_SUPERVISOR_TOOLS == "Read,Grep,Glob"


def test_the_model_and_more_tools_are_added_when_asked() -> None:
    argv = lean_argv(["/opt/bin/claude", "-p"], JudgeOptions("Read,Bash", "sonnet"))
    assert argv[2:] == [
        "--tools",
        "Read,Bash",
        "--allowedTools",
        "Read,Bash",
        "--model",
        "sonnet",
        "--no-session-persistence",
    ]


@pytest.mark.parametrize(
    "user",
    [
        ["--tools", "Bash"],
        ["--tools=Bash"],
        ["--allowedTools", "Bash(git *)"],
        ["--allowed-tools", "Edit"],
        ["--disallowedTools", "Bash"],
        ["--permission-mode", "bypassPermissions"],
        ["--dangerously-skip-permissions"],
    ],
)
def test_a_command_that_says_what_the_judge_may_do_gets_no_tools_added(user: list[str]) -> None:
    argv = lean_argv(["claude", "-p", *user], JudgeOptions(model="haiku"))
    assert argv[: 2 + len(user)] == ["claude", "-p", *user]
    rest = argv[2 + len(user) :]
    assert rest == ["--model", "haiku", "--no-session-persistence"]


@pytest.mark.parametrize("user", [["--model", "opus"], ["--no-session-persistence"]])
def test_what_the_user_put_in_the_command_wins(user: list[str]) -> None:
    argv = lean_argv(["claude", "-p", *user], JudgeOptions(model="haiku"))
    assert sum(a == user[0] for a in argv) == 1
    assert argv[: 2 + len(user)] == ["claude", "-p", *user]


def test_a_codex_exec_judge_runs_anywhere_read_only_and_keeps_no_session() -> None:
    assert lean_argv(["codex", "exec"], JudgeOptions()) == [
        "codex",
        "exec",
        "--skip-git-repo-check",
        "--ephemeral",
        "--sandbox",
        "read-only",
    ]
    # What the user put in the command wins; the model is passed on when asked.
    mine = ["/opt/codex", "e", "-s", "workspace-write", "--ephemeral", "-m", "o3"]
    assert lean_argv(mine, JudgeOptions(model="x")) == [*mine, "--skip-git-repo-check"]
    assert lean_argv(["codex", "exec"], JudgeOptions(model="o4"))[-2:] == ["--model", "o4"]
    # Codex's TUI as a judge, or another subcommand: left alone (not a one-shot judge).
    assert lean_argv(["codex", "review"], JudgeOptions()) == ["codex", "review"]
    assert not takes_system_prompt(["codex", "exec"])  # the instructions go on stdin


def test_a_gemini_judge_is_read_only_and_trusts_the_folder_for_the_call_only() -> None:
    judge = Path("/run/judge")
    assert lean_argv(["gemini", "-p", "."], JudgeOptions(model="gemini-3.8-flash")) == [
        "gemini",
        "-p",
        ".",
        "--approval-mode",
        "plan",
        "--skip-trust",
        "--model",
        "gemini-3.8-flash",
    ]
    # Its policy, as the admin tier and in place of the person's own.
    policy = str(judge / "gemini-judge-policy.toml")
    assert lean_argv(["gemini", "-p", ""], JudgeOptions(private=judge)) == [
        "gemini",
        "-p",
        "",
        "--approval-mode",
        "plan",
        "--admin-policy",
        policy,
        "--policy",
        policy,
        "--skip-trust",
    ]
    # The person's own choices win, and the instructions stay in the prompt.
    mine = ["/opt/gemini", "-p", ".", "--yolo", "-m", "pro", "--skip-trust"]
    assert lean_argv(mine, JudgeOptions(model="x", private=judge)) == mine
    theirs = ["gemini", "-p", "", "--approval-mode=auto_edit", "--skip-trust"]
    assert lean_argv(theirs, JudgeOptions(private=judge)) == theirs
    plan = lean_argv(["gemini", "-p", "", "--approval-mode", "plan"], JudgeOptions(private=judge))
    assert "--admin-policy" in plan  # plan mode alone is not read-only
    assert not takes_system_prompt(["gemini", "-p", "."])


@pytest.mark.parametrize(
    ("given", "made"),
    [
        (["gemini", "-p"], ["gemini", "-p", ""]),
        (["gemini", "--prompt", "-m", "x"], ["gemini", "--prompt", "", "-m", "x"]),
        (["gemini", "-p", "hi"], ["gemini", "-p", "hi"]),
        (["qwen", "-p"], ["qwen", "-p", ""]),
    ],
)
def test_the_readme_s_bare_dash_p_gets_its_empty_value(given: list[str], made: list[str]) -> None:
    # Gemini CLI 0.61 refuses `-p` with no value: "Not enough arguments following: p".
    assert lean_argv(given, JudgeOptions())[: len(made)] == made


def test_a_gemini_judge_runs_as_one_process_and_others_keep_their_environment() -> None:
    env = {"PATH": "/bin"}
    assert lean_env(["/opt/gemini", "-p", ""], env) == {
        "PATH": "/bin",
        "GEMINI_CLI_NO_RELAUNCH": "true",
    }
    assert lean_env(["gemini", "-p", ""], env, Path("/run/judge")) == {
        "PATH": "/bin",
        "GEMINI_CLI_NO_RELAUNCH": "true",
        "GEMINI_CLI_HOME": "/run/judge/gemini-home",
    }
    assert lean_env(["claude", "-p"], env) == env
    assert env == {"PATH": "/bin"}


def test_a_gemini_judge_s_home_links_the_person_s_folder_but_what_a_call_writes(
    tmp_path: Path,
) -> None:
    person = tmp_path / "person"
    mine = person / ".gemini"
    for name in ("settings.json", "oauth_creds.json", "projects.json"):
        (mine / name).parent.mkdir(parents=True, exist_ok=True)
        (mine / name).write_text("{}")
    for folder in ("tmp", "history", "policies", "extensions"):
        (mine / folder).mkdir()
    env = {"HOME": str(person), "XDG_STATE_HOME": str(tmp_path)}
    with judge_dir(["gemini", "-p"], env) as judge:
        assert judge is not None and judge.parent == tmp_path / "ptysup" / "agents"
        home = judge / "gemini-home" / ".gemini"
        linked = {p.name: p.readlink() for p in home.iterdir()}
        names = ("extensions", "oauth_creds.json", "settings.json")
        assert linked == {name: mine / name for name in names}
        policy = (judge / "gemini-judge-policy.toml").read_text()
        assert 'toolName = "*"\ndecision = "deny"' in policy
        assert tomllib.loads(policy)["rule"][0]["toolName"] == list(geminijudge.READ_TOOLS)
    assert not judge.exists()
    with judge_dir(["claude", "-p"], {}) as none:
        assert none is None


def test_a_qwen_judge_is_read_only_keeps_no_chat_and_runs_as_one_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")  # no npm launcher found: the argv as it is
    assert lean_argv(["qwen", "-p", ""], JudgeOptions(model="qwen3-coder")) == [
        "qwen",
        "-p",
        "",
        "--approval-mode",
        "plan",
        "--core-tools",
        "read_file,grep_search,glob,list_directory",
        "--exclude-tools",
        ",".join(QWEN_WRITE_TOOLS),
        "--allowed-mcp-server-names",
        NO_MCP_SERVER,
        "--chat-recording=false",
        "--model",
        "qwen3-coder",
    ]
    mine = ["/opt/qwen", "-p", "", "--yolo", "-m", "plus", "--chat-recording"]
    assert lean_argv(mine, JudgeOptions(model="x")) == mine
    assert not takes_system_prompt(["qwen", "-p", ""])
    assert lean_env(["/opt/qwen", "-p", ""], {"PATH": "/bin"}) == {
        "PATH": "/bin",
        "QWEN_CODE_NO_RELAUNCH": "true",
    }


def test_an_opencode_run_judge_uses_the_read_only_plan_agent() -> None:
    assert lean_argv(["opencode", "run"], JudgeOptions(model="fake/m")) == [
        "opencode",
        "run",
        "--agent",
        "plan",
        "--title",
        "ptysup decision",
        "--model",
        "fake/m",
    ]
    mine = ["/opt/opencode", "run", "--agent", "build", "-m", "p/q", "--title", "t"]
    assert lean_argv(mine, JudgeOptions(model="x")) == mine
    assert lean_argv(["opencode"], JudgeOptions()) == ["opencode"]  # the TUI is no judge
    assert not takes_system_prompt(["opencode", "run"])


def test_an_opencode_run_judge_may_only_read_unless_the_person_said_otherwise() -> None:
    env = {"PATH": "/bin"}
    judge = lean_env(["/opt/opencode", "run"], env)
    assert judge == {"PATH": "/bin", "OPENCODE_PERMISSION": OPENCODE_JUDGE_PERMISSION}
    # Every tool but reading and searching denied (none left to ask about), the order
    # kept: opencode applies the last rule that matches.
    rules = json.loads(OPENCODE_JUDGE_PERMISSION)
    assert list(rules.items()) == [
        ("*", "deny"),
        ("read", "allow"),
        ("grep", "allow"),
        ("glob", "allow"),
    ]
    theirs = {"PATH": "/bin", "OPENCODE_PERMISSION": '{"bash": "allow"}'}
    assert lean_env(["opencode", "run"], theirs) == theirs
    assert lean_env(["opencode", "run", "--auto"], env) == env
    assert lean_env(["opencode"], env) == env  # the agent's TUI keeps the person's rules


def test_other_supervisor_commands_are_left_as_they_are() -> None:
    assert lean_argv(["my-judge", "--fast"], JudgeOptions(model="x")) == ["my-judge", "--fast"]
    assert not takes_system_prompt(["my-judge"])


@pytest.mark.parametrize(
    ("argv", "takes"),
    [
        (["claude", "-p"], True),
        (["claude", "-p", "--system-prompt", "be strict"], False),
        (["claude", "-p", "--append-system-prompt=be strict"], False),
        (["claude", "-p", "--system-prompt-file", "/x"], False),
    ],
)
def test_the_system_prompt_is_ptysup_s_unless_the_user_set_one(
    argv: list[str], takes: bool
) -> None:
    assert takes_system_prompt(argv) is takes


def test_the_system_prompt_comes_from_a_file() -> None:
    assert with_system_prompt(["claude", "-p"], "/run/s.md") == [
        "claude",
        "-p",
        "--system-prompt-file",
        "/run/s.md",
    ]
