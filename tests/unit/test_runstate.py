"""A run's state: the tracker's transitions, what it writes when, and what readers derive."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from ptysup.events import Event, EventLog
from ptysup.store import runstate
from ptysup.store.listing import describe
from ptysup.store.rundir import RunDir, write_atomic
from ptysup.views import runs, runswatch, table


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _tracker(
    tmp_path: Path, redact: Any = lambda t: t
) -> tuple[runstate.StateTracker, list[dict[str, Any]], EventLog, Clock]:
    writes: list[dict[str, Any]] = []
    clock = Clock()
    t = runstate.StateTracker(
        tmp_path / "state.json",
        "r1",
        4242,
        clock=clock,
        redact=redact,
        write=lambda _path, text: writes.append(json.loads(text)),
    )
    log = EventLog([t], clock=clock)
    return t, writes, log, clock


def test_the_loop_events_move_the_state_and_each_change_is_written_once(tmp_path: Path) -> None:
    _, writes, log, clock = _tracker(tmp_path)
    log.emit("run_start", run_id="r1", max_iter=5)
    log.emit("agent_start", pid=1)  # not a change: nothing written
    log.emit("agent_ready", elapsed_s=1.0)
    log.emit("inject", kind="task", text="do it")
    clock.now = 1010.0
    log.emit("turn_end", kind="stop", detail="")
    log.emit("decision", iteration=1, max_iter=5, action="continue", total_cost_usd=0.25)
    log.emit("inject", kind="instruction", text="go on")
    log.emit("turn_end", kind="api_error", detail="rate_limit")
    clock.now = 1020.0
    log.emit("wait", reason="rate_limit", seconds=60)
    log.emit("inject", kind="continue", text="continue")
    log.emit("run_end", outcome="complete", exit_code=0, iterations=1, cost_usd=0.5)
    assert [(w["state"], w["detail"]) for w in writes] == [
        ("working", "starting the agent"),
        ("working", ""),
        ("working", "typed: task"),
        ("deciding", "turn end: stop"),
        ("deciding", "decided: continue"),
        ("working", "typed: instruction"),
        ("api_wait", "turn end: api_error"),
        ("api_wait", "waiting 60s: rate_limit"),
        ("working", "typed: continue"),
        ("done", ""),
    ]
    deciding = writes[3]
    assert (deciding["since"], deciding["pid"], deciding["max_iter"]) == (1010.0, 4242, 5)
    assert (writes[4]["iteration"], writes[4]["cost_usd"]) == (1, 0.25)
    assert writes[7]["until"] == 1080.0 and writes[8]["until"] is None
    assert writes[7]["since"] == 1010.0  # the same state since the api_error turn end
    end = writes[-1]
    assert (end["outcome"], end["exit_code"], end["cost_usd"]) == ("complete", 0, 0.5)


def test_a_paused_run_shows_it_and_waits_on_the_person_once_its_turn_ends(
    tmp_path: Path,
) -> None:
    t, writes, log, _ = _tracker(tmp_path)
    log.emit("run_start", run_id="r1", max_iter=5)
    log.emit("person_command", command="pause")  # while the agent works
    log.emit("turn_end", kind="stop", detail="")  # no decision follows: the person's turn
    t.hook("UserPromptSubmit", {"prompt": "try this"})  # the person typed to the agent
    t.hook("Stop", {})  # their turn ended (no turn_end while paused: the turn is theirs)
    log.emit("person_command", command="resume")  # the ended turn is decided now
    log.emit("decision", iteration=1, max_iter=5, action="continue")
    log.emit("inject", kind="instruction", text="go on")
    log.emit("turn_end", kind="stop", detail="")
    log.emit("person_command", command="pause")  # while deciding: the decision is dropped
    log.emit("decision_cancelled", iteration=2, reason="overtaken by the person")
    assert [(w["state"], w["detail"]) for w in writes] == [
        ("working", "starting the agent"),
        ("working", runstate.PAUSED),
        ("needs_input", runstate.PAUSED_IDLE),
        ("working", runstate.PAUSED),
        ("needs_input", runstate.PAUSED_IDLE),
        ("deciding", "supervision resumed"),
        ("deciding", "decided: continue"),
        ("working", "typed: instruction"),
        ("deciding", "turn end: stop"),
        ("needs_input", runstate.PAUSED_IDLE),
    ]


def test_a_pause_after_the_decision_leaves_the_run_acting_on_it(tmp_path: Path) -> None:
    # The supervisor said complete and ptysup is ending the agent: nothing waits on the
    # person, though they pressed pause just then.
    _, writes, log, _ = _tracker(tmp_path)
    log.emit("run_start", run_id="r1", max_iter=5)
    log.emit("turn_end", kind="quiet", detail="")
    log.emit("decision", iteration=1, max_iter=5, action="complete")
    log.emit("person_command", command="pause")
    log.emit("run_end", outcome="complete", exit_code=0)
    states = [w["state"] for w in writes]
    assert runstate.NEEDS_INPUT not in states and states[-1] == "done"


def test_every_outcome_but_complete_is_failed() -> None:
    assert runstate.state_for_outcome("complete") == "done"
    for outcome in ("abort", "budget", "signal", "agent_exited", "error", "escalated"):
        assert runstate.state_for_outcome(outcome) == "failed"


@pytest.mark.parametrize(("then", "state"), [("cleared", "deciding"), ("submitted", "working")])
def test_the_persons_text_in_the_box_at_a_turn_end_needs_input_not_deciding(
    tmp_path: Path, then: str, state: str
) -> None:
    t, writes, log, _ = _tracker(tmp_path)
    log.emit("run_start", run_id="r1", max_iter=5)
    log.emit("inject", kind="task", text="do it")
    log.emit("turn_end", kind="stop")
    log.emit("person_input", state="typing")  # ptysup waits: no supervisor is deciding
    assert (t.state, writes[-1]["detail"]) == ("needs_input", runstate.YOUR_TEXT)
    log.emit("person_input", state=then)
    assert (t.state, writes[-1]["detail"]) == (state, f"your text {then}")


def test_a_permission_request_needs_input_until_the_agent_goes_on(tmp_path: Path) -> None:
    t, writes, log, _ = _tracker(tmp_path)
    log.emit("run_start", run_id="r1", max_iter=5)
    log.emit("inject", kind="task", text="do it")
    t.hook("PreToolUse", {"tool_name": "Write"})  # not a change
    t.hook("PermissionRequest", {"tool_name": "Write", "tool_input": {"file_path": "/w/a.txt"}})
    assert (t.state, writes[-1]["detail"]) == ("needs_input", "permission for Write(/w/a.txt)")
    t.screen(True)  # the dialog that request opened: still the same wait, named so
    t.screen(True)
    assert writes[-1]["detail"] == "permission for Write(/w/a.txt)"
    n = len(writes)
    t.hook("PostToolUse", {"tool_name": "Write"})
    assert t.state == "working" and len(writes) == n + 1
    t.screen(False)  # the dialog went away with it: nothing new
    assert len(writes) == n + 1


def test_a_dialog_on_screen_needs_input_and_its_closing_clears_it(tmp_path: Path) -> None:
    t, writes, log, _ = _tracker(tmp_path)
    log.emit("inject", kind="task", text="do it")
    t.screen(True)
    assert t.state == "needs_input"
    t.hook("PermissionRequest", {"tool_name": "Bash"})  # the hook came after the screen
    assert writes[-1]["detail"] == "permission for Bash"
    t.screen(False)
    assert [w["state"] for w in writes] == ["working", "needs_input", "needs_input", "working"]


def test_while_ptysup_has_the_turn_an_idle_agent_does_not_need_input(tmp_path: Path) -> None:
    t, writes, log, _ = _tracker(tmp_path)
    log.emit("turn_end", kind="stop", detail="")
    t.hook("Notification", {"notification_type": "idle_prompt", "message": "Claude is waiting"})
    t.screen(True)
    assert t.state == "deciding" and [w["state"] for w in writes] == ["deciding"]
    log.emit("inject", kind="instruction", text="next")
    t.hook("Notification", {"notification_type": "permission_prompt", "message": "Allow Bash?"})
    assert (t.state, writes[-1]["detail"]) == ("needs_input", "Allow Bash?")
    t.hook("PermissionRequest", {"tool_name": "Bash", "tool_input": {"command": "ls"}})
    t.hook("Notification", {"notification_type": "permission_prompt", "message": "Allow?"})
    assert writes[-1]["detail"] == "permission for Bash(ls)"  # a reminder names less


def test_the_picker_of_a_question_left_to_a_person_names_the_question(tmp_path: Path) -> None:
    t, writes, _, _ = _tracker(tmp_path)
    ask = {"questions": [{"question": "Which storage?"}, {"question": "Which name?"}]}
    t.hook("PermissionRequest", {"tool_name": "AskUserQuestion", "tool_input": ask})
    assert writes[-1]["detail"] == "question for a person: Which storage? / Which name?"


def test_questions_and_escalations_for_a_person_need_input(tmp_path: Path) -> None:
    t, writes, log, _ = _tracker(tmp_path)
    q = [{"question": "Which storage?", "header": "Storage"}]
    log.emit("question", questions=q, to="supervisor")
    assert (t.state, writes[-1]["detail"]) == ("deciding", "the agent asks: Which storage?")
    log.emit("answer", by="supervisor", answers={})
    log.emit("question", questions=q, to="person")
    assert (t.state, writes[-1]["detail"]) == (
        "needs_input",
        "question for a person: Which storage?",
    )
    log.emit("answer", by="person", answers={})
    assert t.state == "working"
    log.emit("turn_end", kind="stop", detail="")
    log.emit("escalation", iteration=1, reason="only you know", at="turn_end", waiting=True)
    assert (t.state, writes[-1]["detail"]) == ("needs_input", "escalated: only you know")
    t.hook("UserPromptSubmit", {"prompt": "here you go"})
    assert t.state == "working"


def test_the_detail_is_redacted_and_kept_short(tmp_path: Path) -> None:
    t, writes, _, _ = _tracker(tmp_path, redact=lambda s: s.replace("sk-secret", "[REDACTED]"))
    t.hook("PermissionRequest", {"tool_name": "Bash", "tool_input": {"command": "x sk-secret"}})
    assert writes[-1]["detail"] == "permission for Bash(x [REDACTED])"
    t.hook("PostToolUse", {})
    t.hook("PermissionRequest", {"tool_name": "Bash", "tool_input": {"command": "y" * 500}})
    assert len(writes[-1]["detail"]) == runstate.DETAIL_MAX


def test_a_failed_write_is_kept_and_the_run_goes_on(tmp_path: Path) -> None:
    def full_disk(_path: Path, _text: str) -> None:
        raise OSError(28, "No space left on device")

    told: list[OSError] = []
    t = runstate.StateTracker(tmp_path / "state.json", "r1", 1, write=full_disk, warn=told.append)
    t.write(Event("turn_end", 0.0, {"kind": "stop"}))
    t.write(Event("decision", 0.0, {"iteration": 1, "action": "continue"}))
    t.spent(0.5)
    assert t.state == "deciding" and len(t.errors) == 3
    # Said once, naming the file, not the temp file write_atomic uses.
    assert [(e.filename, e.strerror) for e in told] == [
        (str(tmp_path / "state.json"), "No space left on device")
    ]


# -- readers ---------------------------------------------------------------------------
def _run(tmp_path: Path, *events: dict[str, Any], state: str | None = None) -> RunDir:
    run = RunDir(tmp_path / "20261123-120000-abcdef")
    run.path.mkdir(parents=True)
    start = {"event": "run_start", "ts": 1.0, "task": "t", "max_iter": 5}
    lines = [json.dumps(e) for e in (start, *events)]
    (run.path / "events.jsonl").write_text("\n".join(lines) + "\n")
    if state is not None:
        (run.path / runstate.STATE_FILE).write_text(state)
    return run


def _saved(state: str, pid: int | None = None, detail: str = "") -> str:
    pid = os.getpid() if pid is None else pid
    return json.dumps({"state": state, "pid": pid, "since": 5.0, "detail": detail})


def test_a_freed_lock_without_run_end_is_crashed_whatever_the_file_says(tmp_path: Path) -> None:
    run = _run(tmp_path, {"event": "turn_end", "ts": 2.0}, state=_saved("needs_input"))
    with run.lock():
        row = describe(run)
        assert (row["state"], row["pid"], row["detail"]) == ("needs_input", os.getpid(), "")
    row = describe(run)  # the lock is free now, and no run_end
    assert (row["state"], row["pid"], row["since"]) == ("crashed", None, None)


def test_a_live_run_shows_its_state_file(tmp_path: Path) -> None:
    run = _run(tmp_path, state=_saved("needs_input", detail="permission for Write(a)"))
    with run.lock():
        row = describe(run)
    assert (row["state"], row["since"], row["detail"]) == (
        "needs_input",
        5.0,
        "permission for Write(a)",
    )


def test_a_torn_or_missing_state_file_of_a_live_run_reads_as_working(tmp_path: Path) -> None:
    run = _run(tmp_path, state='{"state": "needs_in')
    with run.lock():
        assert describe(run)["state"] == "working"
        (run.path / runstate.STATE_FILE).unlink()
        assert describe(run)["state"] == "working"
        (run.path / runstate.STATE_FILE).write_text(json.dumps({"state": "sleeping"}))
        assert describe(run)["state"] == "working"


def test_an_earlier_parts_state_file_is_not_the_resumed_runs_state(tmp_path: Path) -> None:
    run = _run(tmp_path, state=_saved("failed", pid=os.getpid() + 1))
    with run.lock():
        assert describe(run)["state"] == "working"


def test_an_ended_run_is_done_or_failed_by_its_outcome(tmp_path: Path) -> None:
    end = {"event": "run_end", "ts": 3.0, "outcome": "complete", "exit_code": 0}
    assert describe(_run(tmp_path / "a", end))["state"] == "done"
    aborted = {**end, "outcome": "abort", "exit_code": 1}
    row = describe(_run(tmp_path / "b", aborted, state=_saved("failed", detail="gave up")))
    assert (row["state"], row["outcome"], row["detail"]) == ("failed", "abort", "gave up")
    signalled = {**end, "outcome": "signal", "exit_code": 143}
    assert describe(_run(tmp_path / "c", signalled))["state"] == "failed"


def test_read_state_refuses_what_is_not_a_state_file(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    assert runstate.read_state(path) is None
    for text in ("", "[1]", '{"state": 3}', "\x00\x01"):
        path.write_text(text)
        assert runstate.read_state(path) is None
    path.write_text(_saved("api_wait"))
    saved = runstate.read_state(path)
    assert saved is not None and saved["state"] == "api_wait"


def test_the_tracker_writes_a_file_the_reader_reads(tmp_path: Path) -> None:
    t = runstate.StateTracker(tmp_path / "state.json", "r1", 7)
    t.write(Event("turn_end", 0.0, {"kind": "stop"}))
    saved = runstate.read_state(tmp_path / "state.json")
    assert saved is not None and (saved["state"], saved["pid"]) == ("deciding", 7)
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]  # no temp file left


# -- ptysup runs --watch ---------------------------------------------------------------
class Steps:
    """A sleep that runs one action per call (then Ctrl-C), so a watch sees each change."""

    def __init__(self, *actions: Any) -> None:
        self.actions = list(actions)
        self.slept: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.slept.append(seconds)
        if not self.actions:
            raise KeyboardInterrupt
        self.actions.pop(0)()


def test_watch_without_a_terminal_prints_a_line_per_state_change(tmp_path: Path) -> None:
    run = _run(tmp_path, state=_saved("working"))
    described: list[str] = []

    def counted(r: RunDir) -> dict[str, Any]:
        described.append(r.run_id)
        return describe(r)

    def save(state: str, detail: str = "") -> Any:
        return lambda: write_atomic(run.path / runstate.STATE_FILE, _saved(state, detail=detail))

    out = io.StringIO()
    with run.lock():
        steps = Steps(
            lambda: None,
            lambda: None,  # nothing changed: nothing described again
            save("needs_input", "permission for Bash(ls)"),
            save("needs_input", "permission for Bash(ls)"),  # rewritten, same state: no line
            save("working"),
        )
        code = runswatch.watch(tmp_path, 20, out, sleep=steps, describe=counted)
    assert code == 0 and steps.slept and set(steps.slept) == {runswatch.POLL_S}
    lines = [line.split(" ", 1)[1] for line in out.getvalue().splitlines()]
    assert lines == [
        f"{run.run_id} working",
        f"{run.run_id} needs_input  permission for Bash(ls)",
        f"{run.run_id} working",
    ]
    assert len(described) == 4  # the first look and each rewrite, never an idle poll


def test_watch_sees_a_killed_run_crash_though_no_file_changed(tmp_path: Path) -> None:
    run = _run(tmp_path, state=_saved("working"))
    out = io.StringIO()
    with contextlib.ExitStack() as held:
        held.enter_context(run.lock())
        steps = Steps(lambda: None, held.close)  # the lock freed, as by SIGKILL
        runswatch.watch(tmp_path, 20, out, as_json=True, sleep=steps)
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(r["run_id"], r["state"]) for r in rows] == [
        (run.run_id, "working"),
        (run.run_id, "crashed"),
    ]


def test_runs_watch_is_dispatched_and_bad_arguments_still_fail(tmp_path: Path) -> None:
    out = io.StringIO()
    assert runs.main(["--bogus"], out, tmp_path) == 2
    assert "--watch" in runs.USAGE
    for count in (["-n", "1"], ["-n1"], ["--count=1"], ["--count", "1"]):
        assert runs.main([*count, "--json"], out, tmp_path) == 0, count
    assert runs.main(["-n0"], out, tmp_path) == 2


def test_the_table_shows_what_a_waiting_run_waits_on(tmp_path: Path) -> None:
    run = _run(tmp_path, state=_saved("needs_input", detail="permission for Write(a)"))
    out = io.StringIO()
    with run.lock():
        table.render([describe(run)], out)
    row = out.getvalue().splitlines()[1]
    assert " needs_input " in row and row.endswith("[permission for Write(a)] t")


def test_a_live_runs_elapsed_time_runs_to_now_an_ended_ones_to_its_end(tmp_path: Path) -> None:
    live = _run(tmp_path / "a", {"event": "turn_end", "ts": 2.0}, state=_saved("deciding"))
    with live.lock():
        row = describe(live, clock=lambda: 101.0)
    assert (row["elapsed_s"], row["clock_from"]) == (100.0, 1.0)  # run_start was at ts 1.0
    out = io.StringIO()
    table.render([row], out, now=161.0)  # the table ticks on without describing again
    assert " 2m40s " in out.getvalue()
    end = {"event": "run_end", "ts": 3.0, "outcome": "complete", "elapsed_s": 2.0}
    row = describe(_run(tmp_path / "b", end), clock=lambda: 101.0)
    assert (row["elapsed_s"], row["clock_from"]) == (2.0, None)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_watch_in_a_terminal_ticks_a_live_runs_clock_once_a_second(tmp_path: Path) -> None:
    run = _run(tmp_path, state=_saved("working"))
    now = [100.0]

    def later(seconds: float) -> Any:
        return lambda: now.__setitem__(0, now[0] + seconds)

    out = Terminal()
    with run.lock():
        # 0.3 s later: the same second, nothing drawn; then a new second, drawn once.
        steps = Steps(later(0.3), later(0.9), lambda: None)
        runswatch.watch(tmp_path, 20, out, sleep=steps, clock=lambda: now[0])
    drawn = out.getvalue()
    assert drawn.count(" 1m39s ") >= 1 and drawn.count(" 1m40s ") >= 1
    assert " 1m41s " not in drawn


def test_the_table_fits_an_80_column_terminal_keeping_task_iter_and_cost(
    tmp_path: Path,
) -> None:
    # At 80 columns the table dropped TASK, ITER and COST off the edge (`--watch`) or
    # wrapped every row (`runs`): the free text is cut first, then ELAPSED goes.
    end = {
        "event": "run_end",
        "ts": 3.0,
        "outcome": "supervisor_failed",
        "reason": "the supervisor answered nothing three times in a row, then gave up",
        "elapsed_s": 2.0,
    }
    long = _run(tmp_path, end)
    task = "refactor the parser so that every error names its line and column"
    events = long.path / "events.jsonl"
    events.write_text(events.read_text().replace('"task": "t"', f'"task": "{task}"'))
    rows = [describe(long)]
    for width in (80, 100):
        out = io.StringIO()
        table.render(rows, out, width=width)
        lines = out.getvalue().splitlines()
        assert max(map(len, lines)) <= width, lines
        assert lines[0].split()[:2] == ["RUN", "STATE"] and lines[0].endswith("TASK")
        assert {"ITER", "COST"} <= set(lines[0].split()), lines
        assert "refactor the" in lines[1] and "supervisor_" in lines[1]
    out = io.StringIO()
    table.render(rows, out)  # not a terminal: only the task's own cut at 60, for a log
    assert task[:59] in out.getvalue() and "ELAPSED" in out.getvalue()


def test_watch_shows_the_batches_with_their_task_counts(tmp_path: Path) -> None:
    from ptysup.batch import state as batch_state

    _run(tmp_path, state=_saved("working"))
    where = batch_state.folder(tmp_path, tmp_path / "TASKS.yaml")
    where.mkdir(parents=True)
    tasks = (batch_state.TaskState("a"), batch_state.TaskState("b", batch_state.RUNNING))
    saved = batch_state.BatchState(str(tmp_path / "TASKS.yaml"), None, 1, 1.0, None, tasks)

    def save(ended: bool) -> Any:
        done = (batch_state.TaskState("a", batch_state.ENDED, outcome="complete", exit_code=0),)
        state = saved if not ended else dataclasses.replace(saved, ended=2.0, tasks=done)
        return lambda: (where / batch_state.STATE_FILE).write_text(state.to_json())

    save(False)()
    out = Terminal()
    runswatch.watch(tmp_path, 20, out, sleep=Steps(lambda: None))
    drawn = out.getvalue()
    assert "BATCH" in drawn and where.name in drawn, drawn
    lines = io.StringIO()
    runswatch.watch(tmp_path, 20, lines, sleep=Steps(save(True), lambda: None))
    said = [line.split(" ", 1)[1] for line in lines.getvalue().splitlines() if " batch " in line]
    assert said == [
        # The running task of a batch that died is one a rerun goes on with: not failed.
        f"batch {where.name} crashed  0 done, 0 running, 1 queued, 1 interrupted, 0 failed",
        f"batch {where.name} ended  1 done, 0 running, 0 queued, 0 interrupted, 0 failed",
    ]
