"""Verification, time and cost budgets, API-error waits, recordings, CI output, config files:
each against the real Claude Code and the fake model."""

from __future__ import annotations

import io
import json
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from ptysup.testing.fakemodel import RequestKind
from ptysup.views.replay import main as replay_main
from tests.e2e.conftest import DEMO, Rig
from tests.helpers import alive, ptysup_argv, read_events, wait_for

pytestmark = pytest.mark.e2e

SIMPLE_AGENT = [{"reply": "Done with that."}]


def test_complete_is_verified_and_a_failure_goes_back_to_the_agent(
    rig: Callable[..., Rig],
) -> None:
    # A supervisor that claims completion too early: only --verify keeps the run honest.
    demo = yaml.safe_load(DEMO.read_text())
    demo["supervisor"] = [{"reply": "[COMPLETE] looks done to me"}]
    r = rig(demo)
    run = r.run("implement feature X", "--verify", "python3 -m unittest -q")
    assert run.code == 0, run.stdout
    verifies = run.named("verify")
    assert [v["passed"] for v in verifies] == [False, True]
    assert verifies[0]["exit_code"] != 0 and "FAILED" in verifies[0]["output_tail"]
    texts = r.human_texts()
    assert texts[1].startswith("Verification failed: `python3 -m unittest -q` exited")
    sup = r.model.requests_of(RequestKind.SUPERVISOR)
    assert "Last verification" in sup[1].human_text
    assert [i["kind"] for i in run.named("inject")] == ["task", "verify"]
    assert "text.split()" in (r.project / "textstats.py").read_text()


def test_cost_budget_sums_the_supervisors_reported_cost(rig: Callable[..., Rig]) -> None:
    r = rig({"agent": SIMPLE_AGENT, "supervisor": [{"reply": "[CONTINUE] more"}]})
    run = r.run("t", "--max-cost", "0.03")  # a turn costs ~0.012, a decision ~0.005
    assert run.code == 3
    decisions = run.named("decision")
    assert decisions and all(d["cost_usd"] > 0 for d in decisions)
    end = run.events[-1]
    assert end["outcome"] == "cost" and end["cost_usd"] >= 0.03
    assert end["supervisor_cost_usd"] == pytest.approx(sum(d["cost_usd"] for d in decisions))
    assert end["cost_usd"] == pytest.approx(end["agent_cost_usd"] + end["supervisor_cost_usd"])


def test_a_signal_keeps_the_cost_spent_so_far_in_run_end(rig: Callable[..., Rig]) -> None:
    r = rig(
        {
            "agent": [{"times": 1, "reply": "first"}, {"delay": 120, "reply": "slow"}],
            "supervisor": [{"reply": "[CONTINUE] more"}],
        }
    )
    proc = r.popen("t")
    try:
        wait_for(
            lambda: len(r.model.requests_of(RequestKind.AGENT)) >= 2, 60, "the second agent turn"
        )
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    events = read_events(r.log)
    decisions = [e for e in events if e["event"] == "decision"]
    assert len(decisions) == 1 and decisions[0]["cost_usd"] > 0
    end = events[-1]
    assert (end["event"], end["outcome"]) == ("run_end", "signal")
    assert end["supervisor_cost_usd"] == pytest.approx(decisions[0]["cost_usd"])
    assert end["agent_cost_usd"] > 0
    assert end["cost_usd"] == pytest.approx(end["agent_cost_usd"] + end["supervisor_cost_usd"])


@pytest.mark.parametrize("where", ["deciding", "verifying", "before the agent"])
def test_a_signal_while_the_supervisor_decides_or_a_verify_runs_ends_the_run_at_once(
    rig: Callable[..., Rig], tmp_path: Path, where: str
) -> None:
    # Neither the supervisor nor the verify command gets to finish: the signal is the
    # outcome, the agent's spend is kept, and the log shows no retry and no traceback.
    # Before the agent: the checks' baseline, cut short, ends the run before it starts.
    started = tmp_path / "verify.pid"
    supervisor = [{"delay": 3600, "reply": "[COMPLETE] too late"}]
    if where != "deciding":
        supervisor = [{"reply": "[COMPLETE] done"}]
    r = rig({"agent": SIMPLE_AGENT, "supervisor": supervisor})
    check = f"sh -c 'echo $$ > {started}; exec sleep 600'"
    baseline = () if where == "before the agent" else ("--no-verify-baseline",)
    proc = r.popen("t", "--verify", check, *baseline)
    try:
        if where == "deciding":
            wait_for(lambda: r.model.requests_of(RequestKind.SUPERVISOR), 60, "the decision")
        else:
            wait_for(lambda: started.exists() and started.read_text(), 60, "the verify command")
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, stderr
    assert "Traceback" not in stderr and "Exception" not in stderr, stderr
    events = read_events(r.log)
    assert not [e for e in events if e["event"] == "supervisor_error"]
    cut = [e for e in events if e["event"] == "verify" or e.get("results")]
    assert not cut  # a check cut short says nothing
    end = events[-1]
    assert (end["event"], end["outcome"], end["exit_code"]) == ("run_end", "signal", 143)
    if where != "deciding":
        assert not alive(int(started.read_text()))
    if where == "before the agent":
        assert [e["event"] for e in events] == ["run_start", "run_end"]  # no agent started
        assert not r.model.requests
    else:
        assert end["agent_cost_usd"] > 0


def test_the_time_budget_ends_a_verify_command_that_outlasts_it(rig: Callable[..., Rig]) -> None:
    r = rig({"agent": SIMPLE_AGENT, "supervisor": [{"reply": "[COMPLETE] done"}]})
    run = r.run("t", "--max-time", "8s", "--verify", "sleep 600", "--no-verify-baseline")
    assert run.code == 3, run.stdout
    end = run.events[-1]
    assert end["outcome"] == "time" and end["elapsed_s"] < 60
    assert not run.named("verify")
    assert run.named("inject")[-1]["text"] == "/clear"


def test_api_error_turn_is_waited_out_without_an_iteration(rig: Callable[..., Rig]) -> None:
    r = rig(
        {
            "agent": [{"times": 1, "error": 529}, {"reply": "Recovered and done."}],
            "supervisor": [{"reply": "[COMPLETE] fine"}],
        }
    )
    run = r.run("t", "--wait-base", "1")
    assert run.code == 0, run.stdout
    kinds = [t["kind"] for t in run.named("turn_end")]
    assert kinds == ["api_error", "stop"]
    assert len(run.named("wait")) == 1
    assert [i["text"] for i in run.named("inject")] == ["t", "continue"]
    assert len(run.named("decision")) == 1 and run.events[-1]["iterations"] == 1
    # The failed prompt stayed in Claude Code's conversation; 'continue' joined it.
    assert "continue" in r.human_texts()[-1]


def test_no_wait_makes_an_api_error_exit_6(rig: Callable[..., Rig]) -> None:
    r = rig({"agent": [{"error": 529}], "supervisor": [{"reply": "[COMPLETE]"}]})
    run = r.run("t", "--no-wait")
    assert run.code == 6
    assert run.events[-1]["outcome"] == "api_error"
    # Claude Code wraps the message; it is read whole, the lines it wrapped onto included.
    assert "try again in a moment." in run.events[-1]["reason"], run.events[-1]["reason"]
    assert not r.model.requests_of(RequestKind.SUPERVISOR)


def test_recording_and_replay_show_the_screen_of_each_decision(rig: Callable[..., Rig]) -> None:
    r = rig(DEMO)
    run = r.run("implement feature X")
    assert run.code == 0
    start = run.events[0]
    cast = r.log.with_name(f"events.{start['run_id']}.cast")  # --log-file: named after the run
    assert start["record"] == str(cast)
    header = json.loads(cast.read_text().splitlines()[0])
    assert (header["version"], header["width"], header["height"]) == (2, 120, 40)
    out = io.StringIO()
    assert replay_main([str(r.log)], out) == 0
    text = out.getvalue()
    first = text.split("── decision 2/50")[0]
    assert "decision 1/50: continue" in first
    assert "Write(textstats.py)" in first  # the agent's TUI as the supervisor saw it
    assert "run_end: complete (exit 0)" in text
    cli = subprocess.run(
        ptysup_argv("replay", str(r.log)), capture_output=True, text=True, cwd=r.project
    )
    assert cli.returncode == 0 and "decision 2/50: complete" in cli.stdout


def test_github_actions_output_and_summaries(rig: Callable[..., Rig], tmp_path: Path) -> None:
    r = rig(
        {
            "agent": SIMPLE_AGENT,
            "supervisor": [
                {"times": 1, "reply": "[CONTINUE] more"},
                {"reply": "[COMPLETE] all good"},
            ],
        }
    )
    step = tmp_path / "step-summary.md"
    r.env.update(GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(step))
    run = r.run("t", "--summary-json", str(tmp_path / "summary.json"))
    assert run.code == 0
    assert "::notice title=ptysup decision 1/50: continue::more" in run.stdout
    assert "::notice title=ptysup complete::exit 0" in run.stdout
    assert "### ptysup: complete" in step.read_text()
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert (summary["outcome"], summary["iterations"]) == ("complete", 2)
    assert [d["action"] for d in summary["decisions"]] == ["continue", "complete"]
    assert summary["cost_usd"] > 0 and summary["elapsed_s"] > 0


def test_options_from_the_project_config_file(rig: Callable[..., Rig]) -> None:
    r = rig({"agent": SIMPLE_AGENT, "supervisor": [{"reply": "[CONTINUE] more"}]})
    (r.project / ".ptysup.yaml").write_text(
        "max-iter: 1\n"
        "prompt_template: |\n  CUSTOM PROMPT for {task} at {iteration}/{max_iter}\n"
        "  {agent_output}\n"
    )
    run = r.run("t")
    assert run.code == 3 and len(r.model.requests_of(RequestKind.SUPERVISOR)) == 1
    assert "CUSTOM PROMPT for t at 1/1" in r.model.requests_of(RequestKind.SUPERVISOR)[0].human_text
    r.env["PTYSUP_MAX_ITER"] = "2"  # the environment beats the file
    r.log.unlink()
    run = r.run("t")
    assert run.code == 3 and run.events[-1]["iterations"] == 2
