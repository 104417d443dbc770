"""The conformance suite: each behaviour every supervised agent shares, written once and
run against every agent of the registry (its real pinned binary, in a private home, the
fake model speaking its wire, `claude -p` supervising unless the test says otherwise).

What an agent cannot do is in its row of AGENTS, with the reason: a skip (it has no such
thing) or an xfail (ptysup or the agent does not do it yet), never a silent gap. What is
unique to one agent stays in its own file (test_codex.py, test_gemini.py…)."""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ptysup.agents.registry import AGENTS, GENERIC
from ptysup.testing.fakemodel import RecordedRequest, RequestKind
from tests.conftest import ClaudeEnvFactory, FakeModelFactory
from tests.e2e.conftest import EVERY_AGENT, RESUMED, TWO_PARTS, Rig, agent_rigs
from tests.e2e.test_terminal_left_clean import LISTED, check_mirrored_and_restored
from tests.helpers import (
    DIALOG_AT_ONCE_S,
    DIALOG_STALL_S,
    HOOK_TO_TURN_END_S,
    Run,
    assert_interrupted_then_cleared,
    read_events,
    wait_for,
)

pytestmark = pytest.mark.e2e

# The behaviours, by the name a row's `gaps` uses.
TURN_END = "turn_end"
ONCE_AND_WHOLE = "once_and_whole"
QUESTION = "question"
APPROVAL = "approval"
CLEAR = "clear"
RESUME = "resume"
NOTHING_LEFT = "nothing_left"
TERMINAL = "terminal"
JUDGE = "judge"
NO_PROFILE = "no_profile"

COLOUR = "Which colour should the button be?"
OPTIONS = [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "calm"}]
SHELL_COMMAND = "echo hi > shell.txt"
# What no agent runs unasked (Claude Code's acceptEdits runs SHELL_COMMAND, a write in the
# project): the approval tests' command.
ASKED_COMMAND = f"sh -c '{SHELL_COMMAND}'"


@dataclass(frozen=True)
class Agent:
    """One row of the table: how each shared behaviour is played with this agent."""

    name: str  # the registry's
    # A model turn that writes out.txt ("hello\\n") with one tool call, then says so.
    write: Mapping[str, Any]
    # A tool call that opens the agent's approval dialog for ASKED_COMMAND, and what that
    # dialog says on the screen the supervisor reads.
    shell: Mapping[str, Any]
    dialog_says: str
    # A tool call that asks COLOUR with OPTIONS; None: the agent has no question tool.
    ask: Mapping[str, Any] | None = None
    # A tool call that runs SHELL_COMMAND in the agent's shell with no dialog, when the
    # agent is started as `runs_with` (default: the rig's command); None: the agent runs
    # no command unasked.
    runs: Mapping[str, Any] | None = None
    runs_with: str | None = None
    # Whether the agent announces its dialogs (a PermissionRequest, in ptysup's names).
    announces_dialogs: bool = True
    # Whether the agent tells each conversation's start (SessionStart: "startup", "clear"
    # after a /clear, "resume" when reopened).
    session_hooks: bool = True
    # What it is typed for a new conversation, and whether the run's last one shows as
    # a new conversation before the agent exits.
    clear: str = "/clear"
    clear_starts: bool = True
    # What the agent's own tool result tells its model of a call refused at its dialog
    # (ptysup then types the instruction alone); None: ptysup says it.
    refusal_told: str | None = None
    # What the agent prints as it exits, left whole above ptysup's summary in a terminal.
    farewell: str | None = None
    max_time: str = "6s"
    # Why the supervisor's screen (the turn's last frame) may differ from the pane's a
    # moment later: the agent still draws after its turn ends. None: row for row.
    draws_late: str | None = None
    # Behaviour → why this agent cannot pass it: a pytest mark (skip or xfail).
    gaps: Mapping[str, pytest.MarkDecorator] = field(default_factory=dict)

    def late(self) -> Mapping[str, Any]:
        """WRITE's turn, its tool call coming 14 s late (after any time budget here)."""
        if "steps" not in self.write:
            return {**self.write, "delay": 14}
        first, *rest = self.write["steps"]
        return {"steps": [{**first, "delay": 14}, *rest]}


def _steps(*steps: Mapping[str, Any], then: str = "Done.") -> dict[str, Any]:
    return {"steps": [*steps, {"text": then}]}


def _questions(**fields: Any) -> list[dict[str, Any]]:
    return [{"question": COLOUR, "header": "Colour", "options": OPTIONS, **fields}]


WROTE = "I wrote out.txt."
AIDER_SHELL = f"Then run:\n\n```bash\n{ASKED_COMMAND}\n```\n"

# Gemini CLI's tools, which Qwen Code (its fork) keeps.
WRITE_FILE = _steps(
    {"tool": "write_file", "input": {"file_path": "{workdir}/out.txt", "content": "hello\n"}},
    then=WROTE,
)
RUN_SHELL = _steps({"tool": "run_shell_command", "input": {"command": ASKED_COMMAND}})

# Every agent of the registry, in its order.
AGENTS_TABLE = (
    Agent(
        "claude",
        write=_steps(
            {"tool": "Write", "input": {"file_path": "{workdir}/out.txt", "content": "hello\n"}},
            then=WROTE,
        ),
        shell=_steps({"tool": "Bash", "input": {"command": ASKED_COMMAND}}),
        dialog_says="Do you want to proceed?",
        ask={"tool": "AskUserQuestion", "input": {"questions": _questions(multiSelect=False)}},
        runs={"tool": "Bash", "input": {"command": SHELL_COMMAND}},
        runs_with="claude --permission-mode acceptEdits --allowedTools Bash",
        # Its start takes seconds on a loaded machine: the budget must end in the turn.
        max_time="10s",
        draws_late="Claude Code draws its effort badge, and in tmux a focus-events notice, "
        "in its footer seconds after the turn's last frame",
    ),
    Agent(
        "codex",
        write=_steps(
            {"tool": "exec_command", "input": {"cmd": "echo hello > out.txt"}}, then=WROTE
        ),
        shell=_steps(
            {
                "tool": "exec_command",
                "input": {
                    "cmd": ASKED_COMMAND,
                    "sandbox_permissions": "require_escalated",
                    "justification": "May I write shell.txt?",
                },
            }
        ),
        dialog_says="Would you like to run the following command?",
        ask={
            "tool": "request_user_input",
            "input": {"questions": [{"id": "colour", **_questions()[0]}]},
        },
        runs={"tool": "exec_command", "input": {"cmd": SHELL_COMMAND}},
        # Codex starts the new conversation at the next prompt, which never comes.
        clear_starts=False,
        refusal_told="aborted by user",
    ),
    Agent(
        "gemini",
        write=WRITE_FILE,
        shell=RUN_SHELL,
        dialog_says="Allow execution of",
        ask={"tool": "ask_user", "input": {"questions": _questions(type="choice")}},
        runs={"tool": "run_shell_command", "input": {"command": SHELL_COMMAND}},
        runs_with="gemini --approval-mode yolo",
        max_time="10s",  # its start takes seconds on a loaded machine
    ),
    Agent(
        "qwen",
        write=WRITE_FILE,
        shell=RUN_SHELL,
        dialog_says="Allow execution of",
        ask={"tool": "ask_user_question", "input": {"questions": _questions(multiSelect=False)}},
        runs={"tool": "run_shell_command", "input": {"command": SHELL_COMMAND}},
        runs_with="qwen --approval-mode yolo",
    ),
    Agent(
        "opencode",
        # The rig's opencode asks before every edit as before every shell command (its
        # permission config; unasked it runs them): a write is a dialog there, not a tool
        # round trip, so its turn here is one reply (its edits: test_opencode.py).
        write={"reply": WROTE},
        shell=_steps({"tool": "bash", "input": {"command": ASKED_COMMAND, "description": "w"}}),
        dialog_says="Permission required",
        ask={"tool": "question", "input": {"questions": _questions(multiple=False)}},
        session_hooks=False,
        clear="/new",
        refusal_told="The user rejected permission",
        farewell="opencode -s ses_",
        max_time="8s",
        gaps={
            NO_PROFILE: pytest.mark.skip(
                reason="the rig's opencode asks before every shell command (its permission "
                "config): it runs none unasked"
            )
        },
    ),
    Agent(
        "aider",
        # aider offers its model no tools: its edits are text, applied after a confirmation
        # (test_aider.py); the turn here is one reply.
        write={"reply": WROTE},
        shell={"reply": AIDER_SHELL},
        dialog_says="Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:",
        announces_dialogs=False,
        session_hooks=False,
        max_time="8s",  # it takes ~3 s to start
        gaps={
            QUESTION: pytest.mark.skip(
                reason="aider has no question tool: what it asks are confirmations (APPROVAL)"
            ),
            JUDGE: pytest.mark.skip(reason="aider has no one-shot mode to supervise with"),
            NO_PROFILE: pytest.mark.skip(
                reason="aider runs a shell command only after a person's yes, never given"
            ),
        },
    ),
)
BY_NAME = {a.name: a for a in AGENTS_TABLE}


def every_agent(behaviour: str) -> list[Any]:
    """The agents as pytest parameters for BEHAVIOUR, each marked with its gap, if any."""
    return [
        pytest.param(a, id=a.name, marks=[a.gaps[behaviour]] if behaviour in a.gaps else [])
        for a in AGENTS_TABLE
    ]


@pytest.fixture
def rig(
    request: pytest.FixtureRequest,
    fake_model: FakeModelFactory,
    claude_env: ClaudeEnvFactory,
    project_dir: Path,
    tmp_path: Path,
) -> Iterator[Callable[[Mapping[str, Any]], Rig]]:
    """Rigs of the test's agent (its `agent` parameter)."""
    name = request.node.callspec.params["agent"].name
    yield from agent_rigs(request, name, fake_model, claude_env, project_dir, tmp_path)


def test_the_table_has_every_agent_of_the_registry_in_its_order() -> None:
    names = [a.name for a in AGENTS if a.name != GENERIC]
    assert [a.name for a in AGENTS_TABLE] == names == list(EVERY_AGENT)


def _wire(path: str) -> str:
    """A request's path without its model (Gemini's names the model in it)."""
    return re.sub(r"/models/[^/:]+", "/models/*", path)


def _hooks(run: Run, name: str) -> list[dict[str, Any]]:
    return [e for e in run.named("hook") if e["name"] == name]


def tool_results(request: RecordedRequest) -> list[str]:
    """What the agent sent its model back from tool calls, on any wire: Anthropic's
    tool_result, the Responses API's function_call_output, Gemini's functionResponse,
    Chat Completions' tool messages."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            if node.get("type") in ("tool_result", "function_call_output") or (
                node.get("role") == "tool" or "functionResponse" in node
            ):
                found.append(json.dumps(node, ensure_ascii=False))
                return
            node = list(node.values())
        if isinstance(node, list):
            for child in node:
                walk(child)

    walk(request.body)
    return found


@pytest.mark.parametrize("agent", every_agent(TURN_END))
def test_piped_in_ci_a_turn_ends_on_the_agents_own_signal_at_once(
    agent: Agent, rig: Callable[..., Rig]
) -> None:
    r = rig(
        {
            "agent": [agent.write],
            "supervisor": [{"reply": "[COMPLETE] it said it wrote out.txt"}],
        }
    )
    # What a CI runner gives: no terminal, CI variables, TERM=dumb. Quiet time alone
    # would end the turn only after 30 s: the agent's signal ends it.
    r.env.update(CI="true", GITHUB_ACTIONS="true", TERM="dumb")
    run = r.run("write out.txt", "--idle", "30", "--max-iter", "2")
    assert run.code == 0, run.stdout + run.stderr
    start = run.named("agent_start")[0]
    assert (start["profile"], start["interactive"]) == (agent.name, False)
    assert "::group::" in run.stdout  # ptysup itself is in its CI mode; the agent is not
    if "steps" in agent.write:  # a tool round trip is no turn end
        assert (r.project / "out.txt").read_text() == "hello\n"
    (turn,) = run.named("turn_end")
    assert turn["kind"] == "stop" and "dialog" not in turn, turn
    (stop,) = _hooks(run, "Stop")
    # The bound is the product's own: the hook, then at most the settle's limit.
    assert turn["ts"] - stop["ts"] < HOOK_TO_TURN_END_S
    (sup,) = r.model.requests_of(RequestKind.SUPERVISOR)
    assert WROTE in sup.human_text  # the supervisor read the turn's last words
    assert run.events[-1]["outcome"] == "complete"


@pytest.mark.parametrize("agent", every_agent(ONCE_AND_WHOLE))
def test_the_task_and_a_multi_line_instruction_arrive_once_and_whole_then_the_budget_clears(
    agent: Agent, rig: Callable[..., Rig]
) -> None:
    # Lines, a blank one and an indented one: typed as one message, each kept.
    instruction = "Fix two things:\n1. the loop\n\n  2. the test, indented."
    r = rig(
        {
            "agent": [{"reply": "Done with that."}],
            "supervisor": [{"reply": f"[CONTINUE] {instruction}"}],
        }
    )
    run = r.run("start the work", "--max-iter", "2")
    assert run.code == 3, run.stdout + run.stderr
    # Whole (opencode adds a space after a paste it folded).
    assert [t.rstrip() for t in r.human_texts()] == ["start the work", instruction]
    typed = [(i["kind"], i["text"], i["confirmed"]) for i in run.named("inject")]
    assert typed[:2] == [("task", "start the work", True), ("instruction", instruction, True)]
    assert not run.named("person_prompt")  # ptysup's own typing, not the person's
    # Never more supervisor calls than the budget's; then the conversation is cleared.
    assert len(r.model.requests_of(RequestKind.SUPERVISOR)) == 2
    _cleared(agent, run, "budget")


def _cleared(agent: Agent, run: Run, outcome: str) -> None:
    """The run ended with OUTCOME and the conversation was cleared."""
    assert run.events[-1]["outcome"] == outcome
    clear = run.named("inject")[-1]
    assert (clear["text"], clear["confirmed"]) == (agent.clear, True)
    if agent.session_hooks and agent.clear_starts:
        starts = [e.get("source") for e in _hooks(run, "SessionStart")]
        assert starts == ["startup", "clear"], starts


@pytest.mark.parametrize("agent", every_agent(QUESTION))
def test_a_question_is_answered_by_the_supervisor(agent: Agent, rig: Callable[..., Rig]) -> None:
    assert agent.ask is not None
    r = rig(
        {
            "agent": [_steps(agent.ask, then="Painted it blue.")],
            "supervisor": [
                {"regex": r"The agent asks:\nQuestion 1 \[Colour\]", "reply": "[CONTINUE] blue"},
                {"reply": "[COMPLETE] painted"},
            ],
        }
    )
    run = r.run("paint the button", "--max-iter", "3")
    assert run.code == 0, run.stdout + run.stderr
    (question,) = run.named("question")
    assert question["to"] == "supervisor"
    assert question["questions"][0]["options"] == ["Red", "Blue"]
    (answer,) = run.named("answer")
    assert (answer["by"], answer["answers"]) == ("supervisor", {COLOUR: "Blue"})
    # The model read the answer as the tool's result: no picker was left to a person.
    results = [t for q in r.model.requests_of(RequestKind.AGENT) for t in tool_results(q)]
    assert any("Blue" in t for t in results), results
    assert not _hooks(run, "PermissionRequest")  # a question is no approval
    assert [t["kind"] for t in run.named("turn_end")] == ["stop"]
    sup = r.model.requests_of(RequestKind.SUPERVISOR)
    assert f"Question 1 [Colour]: {COLOUR}" in sup[0].human_text


def _dialog_turn_end(agent: Agent, r: Rig, run: Run) -> None:
    """The run's first turn ended at once on the agent's approval dialog, which the
    supervisor saw on the screen; nobody said yes to it."""
    turn = run.named("turn_end")[0]
    assert turn.get("dialog") is True, turn
    if agent.announces_dialogs:
        (asked,) = _hooks(run, "PermissionRequest")
        assert turn["ts"] - asked["ts"] < DIALOG_AT_ONCE_S, (turn, asked)
    sup = r.model.requests_of(RequestKind.SUPERVISOR)[0].human_text
    assert "echo hi" in sup and agent.dialog_says in sup
    assert "A dialog is open on the agent's screen" in sup
    assert not (r.project / "shell.txt").exists()


@pytest.mark.parametrize("agent", every_agent(APPROVAL))
def test_an_approval_dialog_is_escalated_never_approved(
    agent: Agent, rig: Callable[..., Rig]
) -> None:
    r = rig({"agent": [agent.shell], "supervisor": [{"reply": "[ESCALATE] a person must decide"}]})
    run = r.run("write shell.txt", "--turn-timeout", DIALOG_STALL_S)
    assert run.code == 7, run.stdout + run.stderr
    _dialog_turn_end(agent, r, run)
    assert len(run.named("turn_end")) == 1
    (escalation,) = run.named("escalation")
    assert (escalation["at"], escalation["reason"]) == ("turn_end", "a person must decide")
    assert run.events[-1]["outcome"] == "escalated"


@pytest.mark.parametrize("agent", every_agent(APPROVAL))
def test_an_approval_dialog_is_rejected_when_the_supervisor_says_go_on(
    agent: Agent, rig: Callable[..., Rig]
) -> None:
    instead = "Do not run commands; say what you would run."
    r = rig(
        {
            "agent": [{"match": "say what you would run", "reply": "I would echo."}, agent.shell],
            "supervisor": [
                {"times": 1, "reply": f"[CONTINUE] {instead}"},
                {"reply": "[COMPLETE] answered"},
            ],
        }
    )
    run = r.run("write shell.txt", "--turn-timeout", DIALOG_STALL_S)
    assert run.code == 0, run.stdout + run.stderr
    _dialog_turn_end(agent, r, run)
    names = [e["event"] for e in run.events]
    (instruction,) = [e for e in run.named("inject") if e["kind"] == "instruction"]
    assert names.index("decision") < names.index("dialog_dismissed") < run.events.index(instruction)
    # Typed alone, or after a note that the request was refused (for an agent that does
    # not tell its model so itself).
    assert instruction["text"].endswith(instead) and instruction["confirmed"], instruction
    if agent.refusal_told is not None:
        told = [t for q in r.model.requests_of(RequestKind.AGENT) for t in tool_results(q)]
        assert any(agent.refusal_told in t for t in told), told
        assert instruction["text"] == instead
    # It reached the model (beside the refused call's result, for some agents).
    assert any(instead in json.dumps(q.body) for q in r.model.requests_of(RequestKind.AGENT))
    assert not (r.project / "shell.txt").exists()  # dismissed with "no", never "yes"
    assert run.events[-1]["outcome"] == "complete"


@pytest.mark.parametrize("agent", every_agent(CLEAR))
def test_abort_clears_into_a_fresh_conversation(agent: Agent, rig: Callable[..., Rig]) -> None:
    r = rig(
        {
            "agent": [{"reply": "Working on it."}],
            "supervisor": [{"reply": "[ABORT] the agent refuses the task"}],
        }
    )
    run = r.run("do the thing")
    assert run.code == 1, run.stdout + run.stderr
    _cleared(agent, run, "abort")
    assert run.events[-1]["reason"] == "the agent refuses the task"
    # The agent was asked to exit, and did: it needed no signal.
    assert not [w for w in run.named("warning") if "did not exit" in w["message"]]


@pytest.mark.parametrize("agent", every_agent(RESUME))
def test_resume_after_sigkill_reopens_the_same_conversation(
    agent: Agent, rig: Callable[..., Rig]
) -> None:
    r = rig(TWO_PARTS)
    first, resumed = r.killed_then_resumed(
        "do part one", agent.name, "--max-iter", "5", "--agent-cmd", r.agent
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    # The model got part two with part one's turn still in the conversation.
    (two,) = [
        q for q in r.model.requests_of(RequestKind.AGENT) if q.human_text == "now do part two"
    ]
    said = json.dumps(two.body, ensure_ascii=False)
    assert "do part one" in said and "Part one done." in said
    later = read_events(r.log)[len(first) :]
    assert later[-1]["outcome"] == "complete"
    # Its supervisor was told what the agent did with the earlier conversation.
    (row,) = [a for a in AGENTS if a.name == agent.name]
    told = [q.human_text for q in r.model.requests_of(RequestKind.SUPERVISOR)]
    (note,) = [t for t in told if RESUMED in t]
    assert f"the agent was started again and {row.reopens}" in " ".join(note.split()), note
    if agent.session_hooks:  # it says so: the same conversation, reopened
        (before,) = [e["session_id"] for e in first if e.get("name") == "SessionStart"]
        reopened = [
            (e["source"], e["session_id"]) for e in later if e.get("name") == "SessionStart"
        ]
        assert reopened == [("resume", before)], reopened


@pytest.mark.parametrize("agent", every_agent(NOTHING_LEFT))
def test_a_time_budget_interrupts_the_turn_clears_and_leaves_no_process(
    agent: Agent, rig: Callable[..., Rig]
) -> None:
    r = rig({"agent": [agent.late()], "supervisor": [{"reply": "[COMPLETE]"}]})
    run = r.run("write out.txt slowly", "--max-time", agent.max_time)
    assert run.code == 3, run.stdout + run.stderr
    end = run.events[-1]
    assert end["outcome"] == "time"
    # Stopped at the budget, long before the turn's 14 s: the interrupt, the clear and the
    # exit take seconds more on a loaded machine (up to 8 were seen).
    assert end["elapsed_s"] < int(agent.max_time.rstrip("s")) + 12, end
    assert_interrupted_then_cleared(run, agent.clear)
    assert not [t for t in run.named("turn_end") if t["kind"] == "stop"]  # ptysup ended it
    assert not r.model.requests_of(RequestKind.SUPERVISOR)
    # Nothing of the run outlives ptysup by more than a moment (its process group ends).
    wait_for(lambda: not r.leftovers(), 10, "every process of the run to be gone")
    assert not (r.project / "out.txt").exists()  # the tool call never ran


@pytest.mark.parametrize("agent", every_agent(TERMINAL))
def test_in_tmux_the_screen_is_the_supervisors_and_the_terminal_is_restored(
    agent: Agent, rig: Callable[..., Rig], tmp_path: Path
) -> None:
    mirrored = agent.draws_late is None
    check_mirrored_and_restored(
        rig(LISTED), tmp_path, f"ptysup-{agent.name}", farewell=agent.farewell, mirrored=mirrored
    )


@pytest.mark.parametrize("agent", every_agent(JUDGE))
def test_the_agents_one_shot_mode_supervises(agent: Agent, rig: Callable[..., Rig]) -> None:
    (row,) = [a for a in AGENTS if a.name == agent.name]
    assert row.judge is not None
    r = rig(
        {
            "agent": [{"reply": "Done with that."}],
            "supervisor": [{"match": "Done with that.", "reply": "[COMPLETE] it says done"}],
        }
    )
    command = shlex.join(row.judge.command)
    run = r.run("finish it", "--supervisor-cmd", command)
    assert run.code == 0, run.stdout + run.stderr
    (decision,) = run.named("decision")
    assert (decision["action"], decision["content"]) == ("complete", "it says done")
    # The judge's prompt reached the model over the agent's own wire.
    (judge,) = r.model.requests_of(RequestKind.SUPERVISOR)
    assert "You are the supervisor of an AI coding agent (ptysup)." in judge.human_text
    (first,) = r.model.requests_of(RequestKind.AGENT)[:1]
    assert _wire(judge.path) == _wire(first.path)


@pytest.mark.parametrize("agent", every_agent(NO_PROFILE))
def test_the_agents_shell_reads_no_profile_of_the_machine(
    agent: Agent, rig: Callable[..., Rig], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A machine whose profile hangs, as a stale pyenv lock made every `bash -l` wait 60 s.
    machine = tmp_path / "machine-home"
    machine.mkdir()
    mark = tmp_path / "profile-read"
    for name in (".profile", ".bashrc", ".bash_profile"):
        (machine / name).write_text(f"echo {name} >> {mark}; sleep 60\n")
    monkeypatch.setenv("HOME", str(machine))
    assert agent.runs is not None
    r = rig({"agent": [_steps(agent.runs)], "supervisor": [{"reply": "[COMPLETE] ran"}]})
    r.agent = agent.runs_with or r.agent
    run = r.run("run the command", "--turn-timeout", "50")
    assert run.code == 0, run.stdout + run.stderr
    # The task went in as typed, and that turn ran the command (Qwen in YOLO mode once took
    # no task, and ran it only from the text left in its box with the /quit typed at exit).
    (task,) = [i for i in run.named("inject") if i["kind"] == "task"]
    assert task["confirmed"] is True, run.events
    assert "stalled" not in [t["kind"] for t in run.named("turn_end")], run.events
    assert not run.named("person_prompt"), run.events
    assert (r.project / "shell.txt").read_text() == "hi\n"
    assert not mark.exists(), mark.read_text()
    assert Path(r.env["HOME"]) != machine and os.environ["HOME"] == str(machine)
