"""Which agent a run's command starts: one row per agent, so adding an agent is its folder
under agents/ and a row here. The last row, any other CLI agent, takes every command."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ptysup.agents.aider import testkit as aider_kit
from ptysup.agents.aider.profile import OWN_FILES as AIDER_FILES
from ptysup.agents.aider.profile import AiderProfile
from ptysup.agents.checks import Check
from ptysup.agents.claude import doctor as claude_doctor
from ptysup.agents.claude import judge as claude_judge
from ptysup.agents.claude import testkit as claude_kit
from ptysup.agents.claude.profile import ClaudeProfile
from ptysup.agents.claude.profile import conversation_saved as claude_saved
from ptysup.agents.codex import judge as codex_judge
from ptysup.agents.codex import testkit as codex_kit
from ptysup.agents.codex.profile import CodexProfile
from ptysup.agents.codex.profile import conversation_saved as codex_saved
from ptysup.agents.gemini import home as gemini_home
from ptysup.agents.gemini import judge as gemini_judge
from ptysup.agents.gemini import settings as gemini_settings
from ptysup.agents.gemini import testkit as gemini_kit
from ptysup.agents.gemini.profile import GeminiProfile
from ptysup.agents.gemini.profile import conversation_saved as gemini_saved
from ptysup.agents.gemini.transcript import unanswered as gemini_unanswered
from ptysup.agents.generic.profile import GenericProfile
from ptysup.agents.oneshot import OneShot, runs
from ptysup.agents.opencode import judge as opencode_judge
from ptysup.agents.opencode import testkit as opencode_kit
from ptysup.agents.opencode.profile import OpencodeProfile
from ptysup.agents.opencode.profile import conversation_saved as opencode_saved
from ptysup.agents.opencode.profile import refuses as opencode_refuses
from ptysup.agents.profile import AgentProfile, Unanswered
from ptysup.agents.qwen import judge as qwen_judge
from ptysup.agents.qwen import testkit as qwen_kit
from ptysup.agents.qwen.profile import QwenProfile
from ptysup.agents.qwen.profile import conversation_saved as qwen_saved
from ptysup.agents.qwen.transcript import unanswered as qwen_unanswered
from ptysup.agents.release import OfflineHome, Release


@dataclass(frozen=True)
class Agent:
    """One kind of agent: how its command is known, and how its profile is made."""

    name: str
    resumes: bool  # a later part reopens the earlier conversation by its session id
    profile: Callable[[str | None, bool], AgentProfile]  # (session id, reopen) → the profile
    # The run's --agent-cmd is this agent; None: its program is named as the agent.
    command: Callable[[Sequence[str]], bool] | None = None
    # The release the end-to-end tests run (its pin, and the compatibility lane's: `ptysup
    # doctor` says when the installed one is neither), and its private, offline home for
    # the tests and the demo; None: not tested against a real binary.
    release: Release | None = None
    home: OfflineHome | None = None
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
    # What `ptysup doctor` checks for it here (environment, folder): the first-run screens
    # that would block it, say; None: nothing.
    doctor: Callable[[Mapping[str, str], Path], Iterator[Check]] | None = None
    # Its one-shot mode as ptysup's supervisor (`claude -p`, `codex exec`…), if it has one.
    judge: OneShot | None = None

    @property
    def tested(self) -> tuple[str, ...]:
        """The releases the end-to-end tests pass with: the pin, then the previous one."""
        return self.release.tested if self.release else ()

    def matches(self, argv: Sequence[str]) -> bool:
        """Whether the run's --agent-cmd `argv` starts this agent."""
        return self.command(argv) if self.command else runs(argv, self.name)


def gemini_hooks(env: Mapping[str, str]) -> tuple[bool, str]:
    """Where Gemini CLI reads ptysup's settings (its hooks) from here."""
    return gemini_home.reach(env, gemini_settings.FILE_NAME)


def _generic(session_id: str | None, reopen: bool) -> AgentProfile:
    return GenericProfile()  # no conversation to reopen: each part starts afresh


GENERIC = "generic"  # any other CLI agent: the last row, which takes every command
AGENTS: tuple[Agent, ...] = (
    Agent(
        "claude",
        True,
        ClaudeProfile,
        release=claude_kit.RELEASE,
        home=claude_kit.HOME,
        saved=claude_saved,
        doctor=claude_doctor.checks,
        judge=claude_judge.JUDGE,
    ),
    Agent(
        "codex",
        True,
        CodexProfile,
        release=codex_kit.RELEASE,
        home=codex_kit.HOME,
        saved=codex_saved,
        judge=codex_judge.JUDGE,
    ),
    Agent(
        "gemini",
        True,
        GeminiProfile,
        release=gemini_kit.RELEASE,
        home=gemini_kit.HOME,
        saved=gemini_saved,
        hooks=gemini_hooks,
        unanswered=gemini_unanswered,
        judge=gemini_judge.JUDGE,
    ),
    Agent(
        "qwen",
        True,
        QwenProfile,
        release=qwen_kit.RELEASE,
        home=qwen_kit.HOME,
        saved=qwen_saved,
        unanswered=qwen_unanswered,
        judge=qwen_judge.JUDGE,
    ),
    Agent(
        "opencode",
        True,
        OpencodeProfile,
        release=opencode_kit.RELEASE,
        home=opencode_kit.HOME,
        saved=opencode_saved,
        refuses=opencode_refuses,
        judge=opencode_judge.JUDGE,
    ),
    # aider has no conversation id: a resumed part restores its chat history file.
    Agent(
        "aider",
        True,
        AiderProfile,
        release=aider_kit.RELEASE,
        home=aider_kit.HOME,
        own_files=AIDER_FILES,
        reopens="restored its chat history (.aider.chat.history.md)",
    ),
    Agent(GENERIC, False, _generic, command=lambda argv: True),
)
# The agents' one-shot modes as supervisors, in the order `--second-opinion auto` prefers
# them (the registry's).
JUDGES: tuple[OneShot, ...] = tuple(agent.judge for agent in AGENTS if agent.judge)


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
