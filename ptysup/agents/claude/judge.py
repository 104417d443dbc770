"""`claude -p` as ptysup's supervisor: the lean judge.

Measured with Claude Code 2.1.197 against the fake model: a bare `claude -p` sends ~79 KB
per call, 64.5 KB of it the definitions of 24 tools a judge never uses; with only the
read-only tools ~13.5 KB, and with ptysup's instructions as the system prompt ~8.4 KB.
The instructions and the task also sit at a block boundary there (the system prompt),
where the prompt cache can serve them from one decision to the next.
"""

from __future__ import annotations

from collections.abc import Sequence

from ptysup.agents.oneshot import JudgeOptions, OneShot, has, runs

SYSTEM_FLAGS = ("--system-prompt", "--system-prompt-file", "--append-system-prompt")
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


def is_claude(argv: Sequence[str]) -> bool:
    """Whether a command is Claude Code (its executable is named claude), agent or judge."""
    return runs(argv, "claude")


def lean(out: list[str], options: JudgeOptions) -> list[str]:
    """`claude -p` with the judge's tools, model and no saved session."""
    if not has(out, *_PERMISSION_FLAGS):
        out += ["--tools", options.tools]
        if options.tools:
            # In -p mode a tool that asks permission is denied: the tools given are allowed.
            out += ["--allowedTools", options.tools]
    if options.model and not has(out, "--model"):
        out += ["--model", options.model]
    if not has(out, "--no-session-persistence"):
        out.append("--no-session-persistence")  # a judge's session is never resumed
    return out


def takes_system_prompt(argv: Sequence[str]) -> bool:
    """ptysup's instructions go in as the system prompt unless the command sets its own."""
    return not has(argv, *SYSTEM_FLAGS)


def wants_json(argv: Sequence[str]) -> bool:
    """Claude Code reports cost and errors in JSON; ask for it unless a format is given."""
    return not any(a.startswith("--output-format") for a in argv)


JUDGE = OneShot(
    ("claude", "-p"),
    is_claude,
    lean,
    takes_system_prompt=takes_system_prompt,
    wants_json=wants_json,
)
