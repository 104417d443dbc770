"""The supervisor's memory of the run and the checks' delta, learnt from the run's events."""

from __future__ import annotations

from ptysup.events import Event, EventLog
from ptysup.run.checks import CheckLedger
from ptysup.run.memory import MAX_DECISIONS, RunMemory

CHECK = ["python3", "-m", "unittest"]


def _log(*sinks: object) -> EventLog:
    return EventLog(sinks)  # type: ignore[arg-type]


def _decision(log: EventLog, i: int, action: str, content: str) -> None:
    log.emit("decision", iteration=i, action=action, content=content, max_iter=50)


def _verify(log: EventLog, i: int, passed: bool, command: list[str] = CHECK) -> None:
    log.emit("verify", iteration=i, command=command, exit_code=0 if passed else 1, passed=passed)


def test_each_decision_is_recalled_with_what_came_of_it() -> None:
    memory = RunMemory()
    log = _log(memory)
    assert memory.render() == []
    log.emit("person_prompt", text="use the stdlib only")
    _decision(log, 1, "continue", "Run the tests and fix calc.py")
    log.emit("repeat", count=2, what=["instruction"], max_repeats=3)
    log.emit("person_prompt", text=None)
    _decision(log, 2, "complete", "All tests pass")
    _verify(log, 2, False)
    _decision(log, 3, "complete", "Fixed")
    _verify(log, 3, True)
    log.emit("tamper", iteration=3, files=["tests/test_calc.py"], verdict="refused")
    log.emit("escalation", iteration=3, reason="tampering: …", at="tamper")
    assert memory.render() == [
        "The run so far (each decision, then what came of it):",
        '- before the first decision: the person said: "use the stdlib only"',
        '- #1 CONTINUE "Run the tests and fix calc.py" → the same round again (2x in a row); '
        "the person sent the agent a message",
        '- #2 COMPLETE "All tests pass" → check `python3 -m unittest` exited 1 (ptysup typed '
        "the failure back to the agent)",
        '- #3 COMPLETE "Fixed" → check `python3 -m unittest` passed; [COMPLETE] refused: '
        "protected files changed (tests/test_calc.py), the originals fail; escalated to a "
        "person: tampering: …",
    ]


def test_the_last_decisions_are_kept_at_least_five_and_the_older_ones_counted() -> None:
    assert MAX_DECISIONS >= 5
    memory = RunMemory()
    log = _log(memory)
    for i in range(1, 21):
        _decision(log, i, "continue", f"instruction number {i}")
    lines = memory.render()
    assert lines[1] == f"({20 - MAX_DECISIONS} earlier decision(s) not shown)"
    recalled = [ln for ln in lines if ln.startswith("- #")]
    assert len(recalled) == MAX_DECISIONS
    assert recalled[-1] == '- #20 CONTINUE "instruction number 20"'


def test_long_texts_are_cut_and_the_section_stays_within_its_bytes() -> None:
    memory = RunMemory(max_decisions=8, max_bytes=2_000)
    log = _log(memory)
    for i in range(1, 9):
        _decision(log, i, "continue", "x" * 5_000)
        for _ in range(20):
            log.emit("person_prompt", text="y" * 1_000)
    lines = memory.render()
    assert sum(len(ln.encode()) + 1 for ln in lines) <= 2_000 + 200  # the header lines
    recalled = [ln for ln in lines if ln.startswith("- #")]
    assert recalled and all(len(ln) < 1_200 for ln in recalled)
    assert "15 thing(s) before" in recalled[-1]  # 20 messages, the last 5 shown
    assert "not shown" in lines[1]


def test_a_resumed_run_remembers_its_earlier_parts() -> None:
    memory = RunMemory()
    memory.replay(
        [
            {"event": "run_start", "task": "t"},
            {"event": "decision", "iteration": 1, "action": "continue", "content": "first"},
            {"event": "decision", "iteration": "two", "action": None},  # damaged: still read
        ]
    )
    assert memory.render()[1:] == ['- #1 CONTINUE "first"', "- #2 ?"]


def test_the_checks_delta_says_what_went_from_failing_to_passing_or_back() -> None:
    ledger = CheckLedger()
    log = _log(ledger)
    assert ledger.render() == []
    other = ["ruff", "check", "."]
    log.emit(
        "verify_baseline",
        results=[
            {"command": CHECK, "exit_code": 1, "passed": False},
            {"command": other, "exit_code": 0, "passed": True},
        ],
        all_passed=False,
        cannot_tell=[],
    )
    assert ledger.render() == [
        "Checks (run by ptysup after a [COMPLETE]; done only when they all pass):",
        "- `python3 -m unittest`: before any change exited 1; not run since",
        "- `ruff check .`: before any change passed; not run since",
    ]
    _verify(log, 2, True)
    _verify(log, 2, False, other)
    assert ledger.delta() == [
        "`python3 -m unittest` went from failing to passing (since before any change)",
        "`ruff check .` went from passing to FAILING (since before any change)",
    ]
    _verify(log, 4, True)
    _verify(log, 4, False, other)
    assert ledger.delta() == []  # the same as at the run before
    _verify(log, 6, False)
    assert ledger.delta() == [
        "`python3 -m unittest` went from passing to FAILING (since decision #4)"
    ]
    assert (
        "- `python3 -m unittest`: before any change exited 1; at its last run (decision #6) "
        "exited 1" in ledger.render()
    )


def test_checks_that_pass_before_any_change_are_said_and_a_skipped_baseline_too() -> None:
    ledger = CheckLedger()
    log = _log(ledger)
    log.emit(
        "verify_baseline",
        results=[{"command": CHECK, "exit_code": 0, "passed": True}],
        all_passed=True,
        cannot_tell=["--verify"],
    )
    assert "already passed (--verify): a pass cannot tell done from not done" in ledger.render()[-1]
    skipped = CheckLedger()
    skipped.write(Event("verify_baseline", 0, {"skipped": True, "results": []}))
    skipped.write(Event("verify", 0, {"iteration": 1, "command": CHECK, "exit_code": None}))
    assert skipped.render()[1] == (
        "- `python3 -m unittest`: before any change not run (--no-verify-baseline); "
        "at its last run (decision #1) did not finish"
    )


def test_a_second_opinion_that_went_on_is_recalled_under_the_judges_complete() -> None:
    memory = RunMemory()
    log = _log(memory)
    _decision(log, 1, "complete", "the tests pass")
    _verify(log, 1, True)
    log.emit(
        "second_opinion",
        iteration=1,
        command="codex exec",
        action="continue",
        content="Also handle\nnegative numbers",
        judge_action="complete",
        verdict="continue",
    )
    assert memory.render()[1] == (
        '- #1 COMPLETE "the tests pass" → check `python3 -m unittest` passed; the second '
        'opinion (codex exec) said: "[CONTINUE] Also handle negative numbers"'
    )
