from __future__ import annotations

import io
import json
import re
from pathlib import Path

from ptysup.events import CUT, Event, EventLog
from ptysup.exitcodes import Outcome, RunResult
from ptysup.run.app import summary_line
from ptysup.run.report import (
    GithubSink,
    RunSummary,
    append_step_summary,
    markdown,
    steps_line,
    write_json,
)


def _events() -> list[tuple[str, dict[str, object]]]:
    return [
        ("run_start", {"run_id": "r1", "task": "fix | the bug", "max_iter": 5}),
        (
            "decision",
            {
                "iteration": 1,
                "max_iter": 5,
                "action": "continue",
                "content": "run tests\n100% please",
            },
        ),
        ("warning", {"message": "no marker"}),
        ("decision", {"iteration": 2, "max_iter": 5, "action": "complete", "content": "done"}),
        (
            "run_end",
            {
                "outcome": "complete",
                "exit_code": 0,
                "iterations": 2,
                "elapsed_s": 61.0,
                "cost_usd": 0.0123,
                "agent_cost_usd": 0.01,
                "supervisor_cost_usd": 0.0023,
                "reason": "done",
            },
        ),
    ]


def test_github_workflow_commands_are_escaped() -> None:
    out = io.StringIO()
    sink = GithubSink(out)
    for name, fields in _events():
        sink.write(Event(name, 0.0, dict(fields)))
    lines = out.getvalue().splitlines()
    assert lines[0] == ("::notice title=ptysup decision 1/5: continue::run tests%0A100%25 please")
    assert lines[1] == "::warning title=ptysup warning::no marker"
    assert lines[-1].startswith("::notice title=ptysup complete::exit 0 after 2 iteration(s)")


def test_summary_json_and_markdown(tmp_path: Path) -> None:
    summary = RunSummary()
    log = EventLog([summary])
    for name, fields in _events():
        log.emit(name, **fields)
    data = summary.to_dict()
    assert (data["outcome"], data["iterations"], data["cost_usd"]) == ("complete", 2, 0.0123)
    assert [d["action"] for d in data["decisions"]] == ["continue", "complete"]
    write_json(tmp_path / "s.json", data)
    assert json.loads((tmp_path / "s.json").read_text())["task"] == "fix | the bug"
    assert (tmp_path / "s.json").stat().st_mode & 0o777 == 0o600  # it holds the task too
    md = markdown(data)
    assert "### ptysup: complete ✅" in md
    assert "fix \\| the bug" in md and "| 2 | complete | done |" in md
    assert (data["agent_cost_usd"], data["supervisor_cost_usd"]) == (0.01, 0.0023)
    assert "| 0 | 2/5 | 61s | $0.0123 | $0.0100 | $0.0023 |" in md
    target = tmp_path / "step.md"
    append_step_summary(data, {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(target)})
    append_step_summary(data, {"GITHUB_STEP_SUMMARY": str(target)})  # not in Actions: no-op
    assert target.read_text().count("### ptysup") == 1


def test_an_escalation_is_an_error_annotation_and_its_reason_is_in_every_summary() -> None:
    out = io.StringIO()
    log = EventLog([GithubSink(out), summary := RunSummary()])
    log.emit("escalation", iteration=2, reason="needs the 100% sure\nanswer")
    log.emit("run_end", outcome="escalated", exit_code=7, iterations=2, reason="needs it")
    assert out.getvalue().splitlines()[0] == (
        "::error title=ptysup escalated to a person::needs the 100%25 sure%0Aanswer"
    )
    data = summary.to_dict()
    assert data["escalation"] == "needs the 100% sure\nanswer"
    assert "**Waiting for a person:** needs the 100% sure answer" in markdown(data)
    line = summary_line(RunResult(Outcome.ESCALATED, 2, "needs it"), Path("e.jsonl"))
    assert line == (
        "ptysup: escalated after 2 iteration(s) (exit 7), cost $0.0000 (agent $0.0000, "
        "supervisor $0.0000): needs it; events: e.jsonl"
    )


def test_the_summary_lists_a_plans_steps() -> None:
    summary = RunSummary()
    log = EventLog([summary])
    log.emit("run_start", run_id="r1", task="g", max_iter=9)
    log.emit("step_start", id="tests", index=1, of=2, do="write tests")
    log.emit("step_end", id="tests", outcome="complete", iterations=2)
    log.emit("step_start", id="impl", index=2, of=2, do="make | them pass")
    log.emit("step_end", id="impl", outcome="budget", iterations=4)
    log.emit("run_end", outcome="budget", exit_code=3, iterations=6, elapsed_s=1.0, cost_usd=0)
    data = summary.to_dict()
    assert data["steps"] == [
        {"id": "tests", "do": "write tests", "outcome": "complete", "iterations": 2},
        {"id": "impl", "do": "make | them pass", "outcome": "budget", "iterations": 4},
    ]
    md = markdown(data)
    assert "| tests | complete | 2 |" in md and "| impl | budget | 4 |" in md
    assert steps_line(data) == "steps: tests ✓, impl ✗ budget"
    assert steps_line(RunSummary().to_dict()) == ""
    assert "steps" not in RunSummary().to_dict()


def test_the_summary_line_names_the_steps() -> None:
    line = summary_line(RunResult(Outcome.BUDGET, 6), Path("e.jsonl"), "steps: a ✓, b ✗ budget")
    assert line == (
        "ptysup: budget after 6 iteration(s) (exit 3), cost $0.0000 (agent $0.0000, "
        "supervisor $0.0000); steps: a ✓, b ✗ budget; events: e.jsonl"
    )


RAW = "\x1b[2J\x1b]0;owned\x07red\x1b[31m!\x00\x08\x7f\x9b2J\x1b[0m"  # escapes and controls
CONTROL_BYTES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def test_the_step_summary_holds_no_control_or_escape_bytes(tmp_path: Path) -> None:
    summary = RunSummary()
    log = EventLog([summary])
    log.emit("run_start", run_id="r1", task=f"fix {RAW} it", max_iter=5)
    log.emit("step_start", id=f"s{RAW}", index=1, of=1, do="go")
    log.emit("step_end", id=f"s{RAW}", outcome=f"budget{RAW}", iterations=1)
    log.emit("decision", iteration=1, max_iter=5, action="continue", content=f"the agent {RAW}")
    log.emit("escalation", iteration=1, reason=f"asks {RAW}")
    log.emit("run_end", outcome="escalated", exit_code=7, iterations=1, reason=f"end {RAW}")
    target = tmp_path / "step.md"
    append_step_summary(
        summary.to_dict(), {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(target)}
    )
    written = target.read_text()
    assert not CONTROL_BYTES.findall(written), written
    assert "**Task:** fix red! it" in written  # the text stays, the bytes go
    for shown in ("| sred! | budgetred! |", "the agent red! |", "asks red!", "end red!"):
        assert shown in written, written


def test_the_summary_line_says_why_on_one_line_cut_and_redacted() -> None:
    reason = "the tests fail\n\x1b[2Jbadly: " + "x" * 200
    line = summary_line(
        RunResult(Outcome.ABORT, 3, reason), Path("e.jsonl"), redact=lambda t: t.replace("x", "y")
    )
    head = "ptysup: abort after 3 iteration(s) (exit 1), cost $0.0000 (agent $0.0000, "
    why = line.removeprefix(head + "supervisor $0.0000): ").removesuffix("; events: e.jsonl")
    assert why.startswith("the tests fail badly: yyy") and why.endswith("…"), line
    assert len(why) == CUT and "\x1b" not in why and "x" not in why
    escalated = summary_line(RunResult(Outcome.ESCALATED, 1, "a" * 300), Path("e.jsonl"))
    assert ": " + "a" * 300 + "; events" in escalated  # what the person must act on: whole


def test_the_summary_line_drops_a_reasons_full_stop_and_keeps_an_ellipsis() -> None:
    said = summary_line(RunResult(Outcome.ABORT, 1, "The tests fail."), Path("e.jsonl"))
    assert said.endswith(": The tests fail; events: e.jsonl"), said
    trailing = summary_line(RunResult(Outcome.ABORT, 1, "wait..."), Path("e.jsonl"))
    assert trailing.endswith(": wait...; events: e.jsonl"), trailing


def test_a_resumed_runs_step_summary_shows_what_the_earlier_parts_spent() -> None:
    summary = RunSummary()
    log = EventLog([summary])
    log.emit("run_start", run_id="r1", task="g", max_iter=9)
    log.emit("run_resume", run_id="r1", task="g", max_iter=9, part=2, cost_usd=0.1209)
    costs = {"cost_usd": 0.1525, "agent_cost_usd": 0.0273, "supervisor_cost_usd": 0.0043}
    log.emit("run_end", outcome="budget", exit_code=3, iterations=9, elapsed_s=21.0, **costs)
    md = markdown(summary.to_dict())
    assert "| cost | agent | supervisor | earlier parts |" in md
    assert "| $0.1525 | $0.0273 | $0.0043 | $0.1209 |" in md
    one_part = {**summary.to_dict(), "cost_usd": 0.0316}
    assert "earlier parts" not in markdown(one_part)


def test_a_tasks_spaces_are_kept_in_group_titles_and_the_step_summary() -> None:
    # `print("a   b")` folded to `print("a b")` is another task: line breaks become one
    # space each, the spaces a person typed stay as many.
    task = 'make print("a   b") work\nthen  stop'
    out = io.StringIO()
    log = EventLog([GithubSink(out), summary := RunSummary()])
    log.emit("run_start", run_id="r1", task=task, max_iter=3)
    log.emit("inject", kind="task", text=task)
    log.emit("run_end", outcome="complete", exit_code=0, iterations=1, reason="ok")
    groups = [x for x in out.getvalue().splitlines() if x.startswith("::group::")]
    assert groups == ['::group::ptysup turn 1 (task): make print("a   b") work then  stop']
    md = markdown(summary.to_dict())
    # Markdown folds runs of spaces: every space after the first is a non-breaking one.
    assert '**Task:** make print("a &nbsp;&nbsp;b") work then &nbsp;stop' in md


def test_a_resumed_runs_summary_line_adds_up_to_its_total() -> None:
    # The cost is every part's; agent and supervisor are this part's: the rest is named.
    result = RunResult(
        Outcome.COMPLETE, 4, "done", cost_usd=0.5, agent_cost_usd=0.2, supervisor_cost_usd=0.1
    )
    line = summary_line(result, Path("e.jsonl"))
    assert "cost $0.5000 (agent $0.2000, supervisor $0.1000, earlier parts $0.2000)" in line
    one_part = RunResult(
        Outcome.COMPLETE, 1, "done", cost_usd=0.3, agent_cost_usd=0.2, supervisor_cost_usd=0.1
    )
    assert "earlier parts" not in summary_line(one_part, Path("e.jsonl"))
    summary = RunSummary()
    EventLog([summary]).emit(
        "run_end",
        outcome="complete",
        exit_code=0,
        iterations=4,
        cost_usd=0.5,
        agent_cost_usd=0.2,
        supervisor_cost_usd=0.1,
    )
    assert summary.to_dict()["earlier_parts_cost_usd"] == 0.2
