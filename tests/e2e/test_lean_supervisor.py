"""The lean, warm judge and the run's whole cost, with the real Claude Code as agent and
supervisor against the fake model (which sees every request)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from ptysup.supervisor.prompt import SUPERVISOR_MARKER
from ptysup.terminal.record import output_bytes, wait_complete
from ptysup.testing.fakemodel import RequestKind
from tests.e2e.conftest import DEMO, Rig
from tests.helpers import Tmux, ptysup_argv, read_events, terminal_script, wait_for

pytestmark = pytest.mark.e2e

SIMPLE_AGENT = [{"reply": "Done with that."}]


def _system_text(body: Mapping[str, Any]) -> str:
    blocks = body.get("system")
    assert isinstance(blocks, list)
    return "\n".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict))


def test_the_judge_is_lean_read_only_and_warm(rig: Callable[..., Rig]) -> None:
    r = rig(DEMO)
    run = r.run("implement feature X", "--max-iter", "50")
    assert run.code == 0, run.stdout + run.stderr
    sup = r.model.requests_of(RequestKind.SUPERVISOR)
    assert len(sup) == 2
    for request in sup:
        # Only the read-only tools, ptysup's instructions and the task as the system
        # prompt, and a small request (a bare `claude -p` sends ~80 KB).
        assert sorted(t["name"] for t in request.body["tools"]) == ["Glob", "Grep", "Read"]
        system = _system_text(request.body)
        assert SUPERVISOR_MARKER in system and "## Task\nimplement feature X" in system
        assert "## Task" not in request.human_text and "Iteration" in request.human_text
        assert request.size < 20_000
    decisions = run.named("decision")
    assert [d["warm"] for d in decisions] == [True, True]
    assert all(d["tokens"]["input"] > 0 and d["tokens"]["output"] > 0 for d in decisions)


def test_the_spare_outlasts_a_long_turn(rig: Callable[..., Rig]) -> None:
    # Claude Code gives up on a stdin that sends nothing for 3 s (and exits 1): the spare
    # gets the prompt's first line as it starts, and is still there after a 6 s turn.
    agent = [{"delay": 6, "reply": "Slow work done."}]
    r = rig({"agent": agent, "supervisor": [{"reply": "[COMPLETE] ok"}]})
    run = r.run("t")
    assert run.code == 0, run.stdout + run.stderr
    assert [d["warm"] for d in run.named("decision")] == [True]
    assert not run.named("supervisor_error")
    [request] = r.model.requests_of(RequestKind.SUPERVISOR)
    assert request.human_text.startswith(SUPERVISOR_MARKER)
    assert request.human_text.count(SUPERVISOR_MARKER) == 1


def test_without_a_warm_spare_each_decision_boots_its_supervisor(rig: Callable[..., Rig]) -> None:
    r = rig({"agent": SIMPLE_AGENT, "supervisor": [{"reply": "[COMPLETE] ok"}]})
    run = r.run("t", "--no-warm-supervisor")
    assert run.code == 0
    assert [d["warm"] for d in run.named("decision")] == [False]


BASH_JUDGE = [
    {
        "steps": [
            {"tool": "Bash", "input": {"command": "touch judge-ran.txt", "description": "x"}},
            {"text": "[COMPLETE] looked"},
        ]
    }
]


def test_the_default_judge_cannot_run_commands(rig: Callable[..., Rig]) -> None:
    r = rig({"agent": SIMPLE_AGENT, "supervisor": BASH_JUDGE})
    run = r.run("t")
    assert run.code == 0
    assert not (r.project / "judge-ran.txt").exists()
    result = json.dumps(r.model.requests_of(RequestKind.SUPERVISOR)[-1].body["messages"][-1])
    assert "No such tool available: Bash" in result


def test_more_tools_for_the_judge_when_asked(rig: Callable[..., Rig]) -> None:
    r = rig({"agent": SIMPLE_AGENT, "supervisor": BASH_JUDGE})
    run = r.run("t", "--supervisor-tools", "Read,Grep,Glob,Bash", "--supervisor-model", "haiku")
    assert run.code == 0
    assert (r.project / "judge-ran.txt").exists()
    request = r.model.requests_of(RequestKind.SUPERVISOR)[0]
    assert "haiku" in str(request.body["model"])
    assert "Bash" in {t["name"] for t in request.body["tools"]}


def test_a_supervisor_command_of_the_user_s_own_wins(rig: Callable[..., Rig]) -> None:
    r = rig({"agent": SIMPLE_AGENT, "supervisor": [{"reply": "[COMPLETE] ok"}]})
    run = r.run("t", "--supervisor-cmd", "claude -p --tools Read --system-prompt 'Be strict.'")
    assert run.code == 0
    request = r.model.requests_of(RequestKind.SUPERVISOR)[0]
    assert [t["name"] for t in request.body["tools"]] == ["Read"]
    assert "Be strict." in _system_text(request.body)
    assert "## Task\nt" in request.human_text  # no system prompt of ptysup's: all in the prompt


def test_the_cost_budget_counts_what_the_agent_spends(rig: Callable[..., Rig]) -> None:
    # One turn of the agent costs ~0.012 with the fake model's usage, a decision ~0.005.
    r = rig({"agent": SIMPLE_AGENT, "supervisor": [{"reply": "[CONTINUE] more"}]})
    run = r.run("t", "--max-cost", "0.008")
    assert run.code == 3
    end = run.events[-1]
    assert end["outcome"] == "cost"
    # The turn's spend is reported ~0.4 s after its Stop hook; ptysup waits for it at the
    # turn end, so the budget is seen gone before any decision is paid for.
    assert not run.named("decision") and end["supervisor_cost_usd"] == 0
    assert end["supervisor_cost_usd"] < 0.008 <= end["agent_cost_usd"]
    assert end["cost_usd"] == pytest.approx(end["agent_cost_usd"] + end["supervisor_cost_usd"])
    assert run.named("inject")[-1]["text"] == "/clear"
    assert "agent $" in end["reason"]


def test_a_cost_budget_sees_each_turns_spend_before_deciding(rig: Callable[..., Rig]) -> None:
    # The demo costs ~$0.028 after its first turn and decision, ~$0.064 after its second
    # turn: a $0.05 cap ends it at that turn end, before the second decision is paid for.
    r = rig(DEMO)
    run = r.run("implement feature X", "--max-iter", "50", "--max-cost", "0.05")
    assert run.code == 3, run.stdout + run.stderr
    (decision,) = run.named("decision")
    assert decision["action"] == "continue"
    assert decision["agent_cost_usd"] > 0  # the first turn's spend, not a stale $0
    end = run.events[-1]
    assert (end["event"], end["outcome"], end["iterations"]) == ("run_end", "cost", 1)
    assert end["agent_cost_usd"] > decision["agent_cost_usd"]
    assert end["supervisor_cost_usd"] == decision["supervisor_cost_usd"]
    assert end["cost_usd"] >= 0.05 > decision["total_cost_usd"]
    assert len(r.model.requests_of(RequestKind.SUPERVISOR)) == 1


LINE = b"0123456789abcdefghijklmnopqrstuvwxyz" * 3
FLOOD = (
    "import sys\n"
    f"for i in range(200_000): sys.stdout.buffer.write(b'%06d ' % i + {LINE!r} + b'\\n')\n"
)


def test_in_a_terminal_ptysup_exits_without_waiting_and_the_recording_completes(
    tmp_path: Path,
) -> None:
    # ~23 MB printed at once, then the agent exits: the writer spools the flood and
    # completes the file after ptysup has gone.
    flood = tmp_path / "flood.py"
    flood.write_text(FLOOD)
    log = tmp_path / "events.jsonl"
    done = tmp_path / "done"
    argv = ptysup_argv(
        "print",
        *("--agent-cmd", f"{sys.executable} {flood}", "--supervisor-cmd", f"{sys.executable} -V"),
        *("--log-file", str(log), "--idle", "30"),
    )
    tmux = Tmux("ptysup-flood")
    tmux.start(terminal_script(tmp_path / "run.sh", tmp_path, {}, argv, done))
    try:
        wait_for(done.exists, 120, "ptysup to finish")
    finally:
        tmux.kill()
    assert done.read_text().startswith("exit=4")  # the agent exited on its own
    cast = Path(read_events(log)[0]["record"])  # next to --log-file, named by the run id
    assert wait_complete(cast, 60)
    expected = b"".join(b"%06d " % i + LINE + b"\r\n" for i in range(200_000))  # PTY: onlcr
    assert expected in output_bytes(cast)
    assert read_events(log)[-1]["event"] == "run_end"
