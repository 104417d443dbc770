"""What only Codex CLI does, supervised (pinned, in a private CODEX_HOME) against the fake
model's Responses wire; the supervisor is `claude -p` on the same fake model. What every
agent does (questions, approvals, abort, budget, resume…) is test_conformance.py's.

Each test is one short run: together they stay within a couple of minutes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ptysup.agents.codex.testkit import config_toml
from ptysup.testing.fakemodel import RecordedRequest, RequestKind
from tests.e2e.conftest import UNSAVED, Rig
from tests.helpers import (
    python_m,
    read_events,
    wait_for,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # ptysup's own dependency there
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

pytestmark = pytest.mark.e2e

WRITE_TERM = {"tool": "exec_command", "input": {"cmd": "echo written > term.txt"}}
SIMPLE_AGENT = [{"reply": "Done with that."}]


def _hooks(events: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == "hook" and e["name"] == name]


def _outputs(request: RecordedRequest) -> list[str]:
    """The tool outputs Codex sent back to the model in one request."""
    items = request.body.get("input") or []
    return [str(i.get("output")) for i in items if i.get("type") == "function_call_output"]


def _commands_with(text: str) -> list[str]:
    """Command lines of live processes that hold `text`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, UnicodeDecodeError):
            continue
        if entry.name.isdigit() and int(entry.name) != os.getpid() and text in cmdline:
            found.append(cmdline)
    return found


def test_without_a_terminal_in_ci_codex_completes_and_each_turn_ends_on_its_stop_hook(
    codex_rig: Callable[..., Rig],
) -> None:
    r = codex_rig(
        {
            "agent": [{"steps": [WRITE_TERM, {"text": "Wrote term.txt."}]}],
            "supervisor": [
                {"when": {"file_exists": "term.txt"}, "reply": "[COMPLETE] term.txt is there"},
                {"reply": "[CONTINUE] write term.txt"},
            ],
        }
    )
    # What a CI runner gives: no terminal, CI=true, TERM=dumb (Codex refuses to start its
    # TUI with that TERM); --idle 30 would make every quiet-time turn end take 30 s.
    r.env.update(CI="true", TERM="dumb")
    run = r.run("write term.txt", "--idle", "30")
    assert run.code == 0, run.stdout + run.stderr
    # Codex got a TERM it starts with and stayed interactive: its TUI took the typed task
    # and ran the command (whose shell Codex itself gives TERM=dumb).
    assert (r.project / "term.txt").read_text() == "written\n", run.stdout
    assert [(i["kind"], i["confirmed"]) for i in run.named("inject")] == [("task", True)]
    start = run.named("agent_start")[0]
    assert (start["profile"], start["interactive"]) == ("codex", False)
    # The turn ended on Codex's Stop hook (kind `stop`), a moment after the model's reply
    # (the hook, then at most `settle_max` for the final frame): not after 30 s of quiet.
    (turn,) = run.named("turn_end")
    (stop,) = _hooks(run.events, "Stop")
    assert turn["kind"] == "stop" and turn["detail"] == "Wrote term.txt."
    last_reply = r.model.requests_of(RequestKind.AGENT)[-1].time
    assert last_reply <= stop["ts"] <= turn["ts"] < last_reply + 3  # ~0.3 s measured
    assert run.events[-1]["elapsed_s"] < 30
    # The conversation id Codex picked is kept for a resume; the title request was answered.
    (session,) = _hooks(run.events, "SessionStart")
    record = json.loads(next(r.project.glob(".ptysup/runs/*/run.json")).read_text())
    assert record["session_id"] == session["session_id"] == run.named("session")[0]["session_id"]
    assert r.model.requests_of(RequestKind.TITLE)
    # ptysup's hooks came on the command line: the config file has none of them.
    config = tomllib.loads((Path(r.env["CODEX_HOME"]) / "config.toml").read_text())
    assert "hooks" not in config and config["model_provider"] == "ptysup-fake"
    # Codex's own spend is not known in dollars: the agent's share is $0.
    assert run.events[-1]["agent_cost_usd"] == 0
    # /exit ended Codex, and nothing of it is left: no app-server daemon (the rig also
    # looks for CODEX_HOME in every process's environment).
    assert not [w for w in run.named("warning") if "did not exit" in w["message"]]
    assert not _commands_with(r.env["CODEX_HOME"]) and not _commands_with("--managed-daemon")


def test_an_untrusted_git_folder_is_named_with_its_fix_never_answered(
    codex_rig: Callable[..., Rig],
) -> None:
    r = codex_rig({"agent": SIMPLE_AGENT, "supervisor": [{"reply": "[COMPLETE]"}]})
    subprocess.run(["git", "init", "-q", str(r.project)], check=True)
    config = Path(r.env["CODEX_HOME"]) / "config.toml"
    untrusted = config_toml(r.model.url, [r.project.parent / "elsewhere"])
    config.write_text(untrusted)
    run = r.run("do the thing", timeout=90)
    assert run.code == 4, run.stdout + run.stderr
    end = run.events[-1]
    assert end["outcome"] == "agent_exited"
    assert "Codex is waiting on its folder trust dialog;" in str(end["reason"])
    assert 'trust_level = "trusted"' in str(end["reason"])
    assert "Trust this folder?" in "\n".join(run.named("agent_screen")[0]["lines"])
    assert not r.model.requests  # nothing was typed, nothing reached the model
    # ptysup answered nothing: the folder is still untrusted
    assert str(r.project.resolve()) not in tomllib.loads(config.read_text()).get("projects", {})


CLEARED_PLAN = """\
steps:
  - id: first
    do: remember the word kiwi
  - id: second
    do: remember the word mango
    clear: true
"""


def test_resume_after_a_clear_reopens_the_conversation_the_run_was_in_last(
    codex_rig: Callable[..., Rig],
) -> None:
    r = codex_rig(
        {
            "agent": [
                {"match": "remember the word kiwi", "reply": "I will remember kiwi."},
                {"match": "remember the word mango", "reply": "I will remember mango."},
                {"match": "say the word", "reply": "The word was mango."},
            ],
            "supervisor": [
                {"match": "has just been resumed", "reply": "[CONTINUE] say the word"},
                {"match": "Current step (first)", "reply": "[COMPLETE] kiwi remembered"},
                {"match": "The word was mango", "reply": "[COMPLETE] it remembered"},
                {"delay": 60, "reply": "[CONTINUE] never read: ptysup is killed first"},
            ],
        }
    )
    (r.project / "plan.yaml").write_text(CLEARED_PLAN)
    # Killed while the supervisor thinks about step 2, which a /clear started afresh.
    proc = r.start("--plan", "plan.yaml", "--agent-cmd", "codex", "--log-file", str(r.log))
    try:
        r.model.wait_for(
            lambda q: q.kind is RequestKind.SUPERVISOR and "Current step (second)" in q.human_text,
            timeout=120,
        )
        proc.kill()
        proc.wait(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    wait_for(lambda: not r.leftovers(), 20, "Codex to exit after losing its terminal")
    starts = _hooks(read_events(r.log), "SessionStart")
    assert [s["source"] for s in starts] == ["startup", "clear"]
    cleared = starts[1]["session_id"]
    assert cleared != starts[0]["session_id"]
    (stored,) = (r.project / ".ptysup" / "runs").glob("*/run.json")
    assert json.loads(stored.read_text())["session_id"] == cleared
    resumed = r.ptysup("resume", "last", "--agent-cmd", "codex", "--max-iter", "5")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    events = read_events(r.log)
    reopened = _hooks(events, "SessionStart")[-1]
    assert (reopened["session_id"], reopened["source"]) == (cleared, "resume")
    # The resumed conversation is step 2's, after the clear: mango, never kiwi.
    (later,) = [q for q in r.model.requests_of(RequestKind.AGENT) if q.human_text == "say the word"]
    said = json.dumps(later.body["input"])
    assert "I will remember mango." in said and "kiwi" not in said
    assert events[-1]["outcome"] == "complete"


def test_codex_exec_is_the_supervisor_for_a_team_without_claude(
    codex_rig: Callable[..., Rig],
) -> None:
    r = codex_rig(
        {
            "agent": SIMPLE_AGENT,
            "supervisor": [{"match": "Done with that.", "reply": "[COMPLETE] it says done"}],
        }
    )
    run = r.run("finish it", "--supervisor-cmd", "codex exec")
    assert run.code == 0, run.stdout + run.stderr
    (decision,) = run.named("decision")
    assert (decision["action"], decision["content"]) == ("complete", "it says done")
    # The judge's prompt reached the model over Codex's wire, on stdin, with the marker.
    (judge,) = r.model.requests_of(RequestKind.SUPERVISOR)
    assert judge.path == "/v1/responses"
    assert "You are the supervisor of an AI coding agent (ptysup)." in judge.human_text
    # A lean judge keeps no session (--ephemeral): the only one is the agent's.
    (agent_session,) = _hooks(run.events, "SessionStart")
    rollouts = list((Path(r.env["CODEX_HOME"]) / "sessions").rglob("rollout-*.jsonl"))
    assert len(rollouts) == 1 and agent_session["session_id"] in rollouts[0].name
    assert not any(q.path == "/v1/messages" for q in r.model.requests)  # no Claude Code


def test_the_demo_runs_with_codex_as_the_agent(
    codex_bin: Path, claude_bin: Path, tmp_path: Path
) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # the sample project goes there
    done = subprocess.run(
        python_m("ptysup.testing.demo", "--agent", "codex", "--no-recording"),
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "demo: model: the bundled fake" in done.stderr and "agent: codex" in done.stderr
    assert "the sample project's tests pass" in done.stderr
    (log,) = tmp_path.glob("ptysup-demo-*/.ptysup/runs/*/events.jsonl")
    events = read_events(log)
    # After the run's start (the checks' baseline, the protected files), the agent.
    (started,) = [e for e in events if e["event"] == "agent_start"]
    assert started["profile"] == "codex"
    assert [d["action"] for d in events if d["event"] == "decision"] == ["continue", "complete"]


def test_an_api_error_codex_shows_ends_the_turn_without_a_stop_hook(
    codex_rig: Callable[..., Rig],
) -> None:
    r = codex_rig(
        {
            "agent": [{"times": 1, "error": 429}, {"reply": "Recovered."}],
            "supervisor": [{"reply": "[COMPLETE] recovered"}],
        }
    )
    run = r.run("call the model", "--max-iter", "3", "--wait-base", "0.5")
    assert run.code == 0, run.stdout + run.stderr
    first, second = run.named("turn_end")
    # Codex 0.169 has no StopFailure hook: its screen tells, once it reads ready again.
    assert first["kind"] == "api_error"
    assert first["detail"] == "exceeded retry limit, last status: 429 Too Many Requests"
    (wait,) = run.named("wait")  # waited out as a rate limit, then typed `continue`
    assert wait["reason"] == first["detail"]
    assert second["kind"] == "stop" and second["detail"] == "Recovered."
    assert len(_hooks(run.events, "Stop")) == 1


def test_the_persons_own_codex_hooks_still_run_beside_ptysups(
    codex_rig: Callable[..., Rig], tmp_path: Path
) -> None:
    # ptysup's hooks are -c options: the person's Stop hook in their config.toml must
    # still run (removes nothing the person configured).
    r = codex_rig({"agent": SIMPLE_AGENT, "supervisor": [{"reply": "[COMPLETE] done"}]})
    mark = tmp_path / "user-stop-hook-ran"
    config = Path(r.env["CODEX_HOME"]) / "config.toml"
    hook = f'[[hooks.Stop]]\nhooks = [{{type = "command", command = "touch {mark}"}}]\n'
    config.write_text(config.read_text() + "\n" + hook)
    run = r.run("say hi")
    assert run.code == 0, run.stdout + run.stderr
    assert [e["kind"] for e in run.named("turn_end")] == ["stop"]  # ptysup's own ran
    assert mark.exists()  # and the person's


def test_a_run_killed_as_its_task_was_typed_starts_afresh_on_resume(
    codex_rig: Callable[..., Rig],
) -> None:
    # Codex 0.169.0 saves nothing until its prompt is sent, and ptysup learns the id it
    # picks only then: `codex resume <id>` ended it at once ("No saved session found
    # with ID …"), exit 4, on every resume. A new conversation starts.
    r = codex_rig(UNSAVED)
    r.unsaved_then_resumed(lambda: any(e["event"] == "inject" for e in read_events(r.log)))
