"""What `ptysup resume` makes of a stored run: overrides, refusals, the conversation."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

import pytest

from ptysup.agents.claude.profile import ClaudeProfile, settings_json
from ptysup.cli.resume import Refused, prepare
from ptysup.config import RunConfig
from ptysup.store.listing import describe
from ptysup.store.rundir import RunDir, RunRecord, config_to_json

STORED = RunConfig(task="the task", max_iter=5, verify=(("pytest",),), max_cost=1.0)


def _stored(tmp_path: Path, *events: Mapping[str, object]) -> RunDir:
    run = RunDir(tmp_path / ".ptysup" / "runs" / "20261123-000000-abcdef")
    log = run.default_events
    run.write_record(
        RunRecord(run.run_id, config_to_json(STORED), "sid-1", str(log), None, str(tmp_path), 0.0)
    )
    log.write_text("".join(json.dumps({"ts": 1.0, **e}) + "\n" for e in events))
    return run


START: Mapping[str, object] = {"event": "run_start", "task": "the task", "max_iter": 5}
TYPED: Mapping[str, object] = {"event": "inject", "kind": "task", "text": "the task"}


def _given(tmp_path: Path, **kw: object) -> RunConfig:
    return RunConfig(task="", cwd=tmp_path, **kw)  # type: ignore[arg-type]


def _claude(tmp_path: Path, *lines: Mapping[str, object]) -> dict[str, str]:
    """A Claude Code config dir whose transcript of sid-1 holds LINES; its environment."""
    folder = tmp_path / "claude" / "projects" / "-work-project"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sid-1.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
    return {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "HOME": str(tmp_path / "home")}


# What Claude Code 2.1.197 wrote when killed at the model's first request, and its prompt.
METADATA = ({"type": "ai-title", "aiTitle": "x"}, {"type": "mode"}, {"type": "permission-mode"})
PROMPT = {"type": "user", "message": {"role": "user", "content": "the task"}}


def test_command_line_options_override_the_stored_ones(tmp_path: Path) -> None:
    _stored(tmp_path, START, TYPED, {"event": "decision", "iteration": 5, "total_cost_usd": 0.5})
    given = _given(tmp_path, max_iter=8, verify=(("ruff",),))
    config, part = prepare("last", given, frozenset({"max_iter"}), "yes", _claude(tmp_path, PROMPT))
    assert (config.max_iter, config.verify, config.max_cost) == (8, (("pytest",),), 1.0)
    assert (part.session_id, part.reopen, part.say) == ("sid-1", True, "yes")
    assert part.resumed is not None and part.resumed.iterations == 5


def test_a_spent_budget_a_fixed_option_and_a_complete_run_are_refused(tmp_path: Path) -> None:
    _stored(tmp_path, START, TYPED, {"event": "decision", "iteration": 5, "total_cost_usd": 0.5})
    log = tmp_path / ".ptysup" / "runs" / "20261123-000000-abcdef" / "events.jsonl"
    # Killed in its budget's stop (no run_end): the resume ends it so, never refused.
    _, part = prepare("last", _given(tmp_path), frozenset(), None, {})
    assert part.resumed is not None and part.resumed.outcome is None
    with log.open("a") as f:
        f.write(json.dumps({"ts": 2, "event": "run_end", "outcome": "budget"}) + "\n")
    with pytest.raises(Refused, match=r"used its 5 iterations: raise the budget, e.g. --max-iter"):
        prepare("last", _given(tmp_path), frozenset(), None, {})
    with pytest.raises(Refused, match="keeps its log-file"):
        prepare("last", _given(tmp_path), frozenset({"log_file"}), None, {})
    with pytest.raises(Refused, match=r"keeps its task \(--task-file\)"):
        prepare("last", _given(tmp_path), frozenset({"task_file"}), None, {})
    with pytest.raises(Refused, match=r"used \$0.5000 of its cost budget \(\$0.5000\)"):
        prepare(
            "last", _given(tmp_path, max_cost=0.5), frozenset({"max_iter", "max_cost"}), None, {}
        )
    with log.open("a") as f:
        f.write(json.dumps({"ts": 3, "event": "run_end", "outcome": "complete"}) + "\n")
    with pytest.raises(Refused, match="is already complete"):
        prepare("last", _given(tmp_path, max_iter=9), frozenset({"max_iter"}), None, {})


def test_a_budget_given_below_what_the_run_used_is_refused_with_both_numbers(
    tmp_path: Path,
) -> None:
    # The person asked for less than the run already used: the refusal names what it used.
    _stored(tmp_path, START, TYPED, {"event": "decision", "iteration": 5, "total_cost_usd": 0.5})
    with pytest.raises(Refused) as refused:
        prepare("last", _given(tmp_path, max_iter=3), frozenset({"max_iter"}), None, {})
    assert str(refused.value) == (
        "run 20261123-000000-abcdef used 5 iterations, more than --max-iter 3: "
        "raise the budget, e.g. --max-iter 15"
    )
    with pytest.raises(Refused) as refused:
        prepare(
            "last",
            _given(tmp_path, max_iter=9, max_cost=0.25),
            frozenset({"max_iter", "max_cost"}),
            None,
            {},
        )
    assert "used $0.5000 of its cost budget ($0.2500): raise it with --max-cost" in str(
        refused.value
    )


def test_a_run_killed_before_anything_was_typed_starts_a_new_conversation(
    tmp_path: Path,
) -> None:
    _stored(tmp_path, START, {"event": "agent_start"})
    _, part = prepare("last", _given(tmp_path), frozenset(), None, {})
    assert not part.reopen and part.session_id != "sid-1"
    with pytest.raises(Refused, match="never reached the agent: --say has nothing to answer"):
        prepare("last", _given(tmp_path), frozenset(), "an answer", {})


def test_a_conversation_the_agent_began_but_never_saved_a_message_of_starts_anew(
    tmp_path: Path,
) -> None:
    # Claude Code killed at the model's first request: its transcript held metadata only,
    # and `--resume sid-1` would end it at once ("No conversation found"), on every resume.
    _stored(tmp_path, START, TYPED)
    env = _claude(tmp_path, *METADATA)
    _, part = prepare("last", _given(tmp_path), frozenset(), None, env)
    assert not part.reopen and part.unsaved == "sid-1"
    assert part.session_id != "sid-1"  # Claude Code refuses an id whose file it keeps
    with pytest.raises(Refused, match="agent never saved its conversation: --say has nothing"):
        prepare("last", _given(tmp_path), frozenset(), "an answer", env)
    # Once its prompt is in the transcript, the conversation is reopened.
    env = _claude(tmp_path, *METADATA, PROMPT)
    _, part = prepare("last", _given(tmp_path), frozenset(), None, env)
    assert (part.reopen, part.unsaved, part.session_id) == (True, None, "sid-1")


def test_runs_describes_a_crashed_run_from_its_files(tmp_path: Path) -> None:
    run = _stored(tmp_path, START, TYPED, {"event": "decision", "iteration": 2, "max_iter": 5})
    row = describe(run)
    assert (row["state"], row["pid"], row["iterations"], row["task"]) == (
        "crashed",
        None,
        2,
        "the task",
    )


def test_claude_gets_ptysups_session_id_then_resumes_it_with_its_settings_again() -> None:
    hooks = ["--settings", settings_json("hook-cmd")]
    assert ClaudeProfile("s1").argv(["claude"], "hook-cmd") == [
        "claude",
        *hooks,
        "--session-id",
        "s1",
    ]
    assert ClaudeProfile("s1", resume=True).argv(["claude", "-p"], "hook-cmd") == [
        "claude", "-p", *hooks, "--resume", "s1"
    ]  # fmt: skip
    # A command line that picks its own conversation keeps it.
    assert ClaudeProfile("s1").argv(["claude", "--continue"], None) == ["claude", "--continue"]


def test_a_batch_task_resumes_in_its_worktree_with_its_run_directory_where_it_was(
    tmp_path: Path,
) -> None:
    from ptysup.run import app

    run = _stored(tmp_path, START, TYPED)
    worktree = tmp_path / ".ptysup" / "worktrees" / "cache"
    record = run.read_record()
    assert record is not None
    run.write_record(RunRecord(**{**record.__dict__, "cwd": str(worktree)}))
    config, part = prepare("last", _given(tmp_path), frozenset(), None, {})
    assert config.cwd == worktree  # the agent goes on where it worked
    assert app.log_path(config, part.run_id) == run.default_events.resolve()  # same log


def test_a_run_killed_in_a_quiet_spell_is_charged_the_time_it_lived(tmp_path: Path) -> None:
    # Its last event at 1.0, then ten quiet minutes (a long tool call) the heartbeat marked.
    run = _stored(tmp_path, START, TYPED, {"event": "decision", "iteration": 2, "max_iter": 5})
    (run.path / "alive").touch()
    os.utime(run.path / "alive", (601.0, 601.0))
    _, part = prepare("last", _given(tmp_path), frozenset(), None, {})
    assert part.resumed is not None and part.resumed.elapsed_s == 600.0
    assert describe(run)["elapsed_s"] == 600.0
    with pytest.raises(Refused, match=r"used 600s of its time budget \(300s\)"):
        prepare("last", _given(tmp_path, max_time=300.0), frozenset({"max_time"}), None, {})
