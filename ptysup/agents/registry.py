"""Which agent a run's command starts: one row per agent, so adding an agent is its folder
under agents/ and a row here. The last row, any other CLI agent, takes every command."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ptysup.agents.aider.profile import OWN_FILES as AIDER_FILES
from ptysup.agents.aider.profile import AiderProfile
from ptysup.agents.claude.profile import ClaudeProfile
from ptysup.agents.claude.profile import conversation_saved as claude_saved
from ptysup.agents.codex.profile import CodexProfile, is_codex
from ptysup.agents.codex.profile import conversation_saved as codex_saved
from ptysup.agents.gemini import home as gemini_home
from ptysup.agents.gemini import settings as gemini_settings
from ptysup.agents.gemini.profile import GeminiProfile
from ptysup.agents.gemini.profile import conversation_saved as gemini_saved
from ptysup.agents.gemini.transcript import unanswered as gemini_unanswered
from ptysup.agents.generic.profile import GenericProfile
from ptysup.agents.opencode.profile import OpencodeProfile
from ptysup.agents.opencode.profile import conversation_saved as opencode_saved
from ptysup.agents.opencode.profile import refuses as opencode_refuses
from ptysup.agents.profile import AgentProfile, Unanswered
from ptysup.agents.qwen.profile import QwenProfile
from ptysup.agents.qwen.profile import conversation_saved as qwen_saved
from ptysup.agents.qwen.transcript import unanswered as qwen_unanswered
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
    # Whether the agent saved a message of conversation (id, environment), so it can be
    # reopened: one killed before it did starts afresh (ptysup.agents.saved). Unknown:
    # assumed saved.
    saved: Callable[[str, Mapping[str, str]], bool] = lambda session_id, env: True
    # Why the agent's command line cannot be supervised (a usage error), or None.
    refuses: Callable[[Sequence[str]], str | None] = lambda argv: None
    # What the agent writes into the project for itself (its history, its caches), as git
    # glob pathspecs from the repository's top: never part of the work ptysup commits.
    own_files: tuple[str, ...] = ()
    # How ptysup's hooks reach the agent with this environment, and whether they do (for
    # `ptysup doctor`), where that depends on the machine; None where it does not.
    hooks: Callable[[Mapping[str, str]], tuple[bool, str]] | None = None
    # What a resumed part's agent does with the earlier conversation, as its supervisor is
    # told (with `resumes`).
    reopens: str = "reopened its earlier conversation"
    # Before a conversation (id, environment) is reopened: the prompt a killed part left
    # unanswered at its end, taken out so that the next message arrives alone (Gemini CLI
    # and Qwen Code would join the two into one message), or None.
    unanswered: Callable[[str, Mapping[str, str]], Unanswered | None] = lambda session, env: None


def gemini_hooks(env: Mapping[str, str]) -> tuple[bool, str]:
    """Where Gemini CLI reads ptysup's settings (its hooks) from here."""
    return gemini_home.reach(env, gemini_settings.FILE_NAME)


def _generic(session_id: str | None, reopen: bool) -> AgentProfile:
    return GenericProfile()  # no conversation to reopen: each part starts afresh


AGENTS: tuple[Agent, ...] = (
    Agent("claude", is_claude, True, ClaudeProfile, ("2.1.197",), claude_saved),
    Agent("codex", is_codex, True, CodexProfile, ("0.169.0",), codex_saved),
    Agent(
        "gemini",
        is_gemini,
        True,
        GeminiProfile,
        ("0.61.0",),
        gemini_saved,
        hooks=gemini_hooks,
        unanswered=gemini_unanswered,
    ),
    Agent("qwen", is_qwen, True, QwenProfile, ("0.24.4",), qwen_saved, unanswered=qwen_unanswered),
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
    Agent(
        "aider",
        is_aider,
        True,
        AiderProfile,
        tested=("0.86.2",),
        own_files=AIDER_FILES,
        reopens="restored its chat history (.aider.chat.history.md)",
    ),
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
