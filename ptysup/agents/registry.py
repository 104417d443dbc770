"""Which agent a run's command starts: one row per agent, so adding an agent is its folder
under agents/ and a row here. The last row, any other CLI agent, takes every command."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ptysup.agents.aider.profile import OWN_FILES as AIDER_FILES
from ptysup.agents.aider.profile import AiderProfile
from ptysup.agents.claude.profile import ClaudeProfile, conversation_saved
from ptysup.agents.codex.profile import CodexProfile, is_codex
from ptysup.agents.gemini.profile import GeminiProfile
from ptysup.agents.generic.profile import GenericProfile
from ptysup.agents.opencode.profile import OpencodeProfile
from ptysup.agents.opencode.profile import conversation_saved as opencode_saved
from ptysup.agents.opencode.profile import refuses as opencode_refuses
from ptysup.agents.profile import AgentProfile
from ptysup.agents.qwen.profile import QwenProfile
from ptysup.procutil import is_aider, is_claude, is_gemini, is_opencode, is_qwen


@dataclass(frozen=True)
class Agent:
    """One kind of agent: how its command is known, and how its profile is made."""

    name: str
    matches: Callable[[Sequence[str]], bool]  # the run's --agent-cmd is this agent
    resumes: bool  # a later part reopens the earlier conversation by its session id
    profile: Callable[[str | None, bool], AgentProfile]  # (session id, reopen) → the profile
    # The releases the end-to-end tests pass with (the pinned one in CI; `ptysup doctor`
    # says when the installed one is not among them).
    tested: tuple[str, ...] = ()
    # Whether the agent saved conversation (id, environment) so it can be reopened: one
    # killed before it saved it starts afresh under the same id. Unknown: assumed saved.
    saved: Callable[[str, Mapping[str, str]], bool] = lambda session_id, env: True
    # Why the agent's command line cannot be supervised (a usage error), or None.
    refuses: Callable[[Sequence[str]], str | None] = lambda argv: None
    # What the agent writes into the project for itself (its history, its caches), as git
    # glob pathspecs from the repository's top: never part of the work ptysup commits.
    own_files: tuple[str, ...] = ()


def _generic(session_id: str | None, reopen: bool) -> AgentProfile:
    return GenericProfile()  # no conversation to reopen: each part starts afresh


AGENTS: tuple[Agent, ...] = (
    Agent("claude", is_claude, True, ClaudeProfile, ("2.1.197",), conversation_saved),
    Agent("codex", is_codex, True, CodexProfile, tested=("0.169.0",)),
    Agent("gemini", is_gemini, True, GeminiProfile, tested=("0.61.0",)),
    Agent("qwen", is_qwen, True, QwenProfile, tested=("0.24.4",)),
    Agent(
        "opencode",
        is_opencode,
        True,
        OpencodeProfile,
        tested=("1.18.33",),
        saved=opencode_saved,
        refuses=opencode_refuses,
    ),
    # aider has no conversation id: a resumed part restores its chat history file.
    Agent("aider", is_aider, True, AiderProfile, tested=("0.86.2",), own_files=AIDER_FILES),
    Agent("generic", lambda argv: True, False, _generic),
)


NAMES: tuple[str, ...] = tuple(agent.name for agent in AGENTS)


def find(agent_cmd: Sequence[str], name: str | None = None) -> Agent:
    """The agent called `name` (--agent, for a wrapper script), else the first agent whose
    command `agent_cmd` is (the generic one at the latest). KeyError for an unknown name:
    the command line checks names against NAMES first."""
    if name is not None:
        return next(agent for agent in AGENTS if agent.name == name)
    return next(agent for agent in AGENTS if agent.matches(agent_cmd))


def own_files() -> tuple[str, ...]:
    """Every agent's own files in a project (see Agent.own_files)."""
    return tuple(pattern for agent in AGENTS for pattern in agent.own_files)
