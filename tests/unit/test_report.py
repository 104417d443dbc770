from __future__ import annotations

import io
import json
from pathlib import Path

from ptysup.events import Event, EventLog
from ptysup.report import GithubSink, RunSummary, append_step_summary, markdown, write_json


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
    md = markdown(data)
    assert "### ptysup: complete ✅" in md
    assert "fix \\| the bug" in md and "| 2 | complete | done |" in md
    assert (data["agent_cost_usd"], data["supervisor_cost_usd"]) == (0.01, 0.0023)
    assert "| 0 | 2/5 | 61s | $0.0123 | $0.0100 | $0.0023 |" in md
    target = tmp_path / "step.md"
    append_step_summary(data, {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(target)})
    append_step_summary(data, {"GITHUB_STEP_SUMMARY": str(target)})  # not in Actions: no-op
    assert target.read_text().count("### ptysup") == 1
