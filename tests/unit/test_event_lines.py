"""The readable lines a run prints without a terminal (CI): what a person acts on is whole."""

from __future__ import annotations

from ptysup.events import CUT, Event, format_line
from tests.helpers import REPO

FIX = (
    "Claude Code is waiting on its folder trust dialog; run `claude` once in this folder "
    "and accept it, or add the folder to projects in the config file ~/.claude.json"
)


def _detail(event: str, **fields: object) -> str:
    return format_line(Event(event, 0.0, dict(fields))).split(f" {event} ", 1)[1].strip()


def test_an_errors_message_and_a_run_ends_reason_are_shown_whole() -> None:
    assert len(FIX) > 160
    assert _detail("error", message=FIX) == f"message={FIX}"
    end = _detail("run_end", outcome="agent_exited", exit_code=4, iterations=0, reason=FIX)
    assert end.endswith(f"reason={FIX}")


def test_other_fields_read_as_a_person_writes_them() -> None:
    detail = _detail(
        "verify", command=["sh", "-c", "make test"], passed=False, retry_in_s=None, exit_code=2
    )
    assert detail == "command=sh -c 'make test' passed=false exit_code=2"
    assert _detail("resize", note="x" * 200).endswith("x" * 79 + "…")


def test_a_resumed_runs_lines_say_what_the_earlier_parts_used() -> None:
    resume = _detail(
        "run_resume",
        task="fix it",
        max_iter=8,
        agent_cmd=["claude"],
        supervisor_cmd=["claude", "-p"],
        run_id="r1",
        log_file="/p/events.jsonl",
        part=3,
        elapsed_before_s=74.7,
        iterations=6,
        cost_usd=0.1209,
    )
    assert resume == (
        "task: fix it | agent: claude | supervisor: claude -p | budget: 8 iterations"
        " | part 3, used before: 6 iterations, 1m14s, $0.1209 | run r1, log /p/events.jsonl"
    )
    costs = {"cost_usd": 0.1525, "agent_cost_usd": 0.0273, "supervisor_cost_usd": 0.0043}
    end = _detail("run_end", outcome="budget", exit_code=3, iterations=8, **costs)
    assert "cost=$0.1525 (agent $0.0273, supervisor $0.0043, earlier parts $0.1209)" in end


def test_one_iteration_reads_as_one() -> None:
    start = _detail("run_start", task="t", max_iter=1, agent_cmd=["a"], supervisor_cmd=["s"])
    assert "budget: 1 iteration |" in start
    resume = _detail("run_resume", task="t", max_iter=2, part=2, iterations=1, cost_usd=0.1)
    assert "used before: 1 iteration," in resume


def test_run_end_shows_the_runs_cost_when_there_was_any() -> None:
    costs = {"cost_usd": 0.0637, "agent_cost_usd": 0.0587, "supervisor_cost_usd": 0.005}
    end = _detail("run_end", outcome="cost", exit_code=3, iterations=1, elapsed_s=2, **costs)
    assert "cost=$0.0637 (agent $0.0587, supervisor $0.0050)" in end
    free = _detail("run_end", outcome="complete", exit_code=0, iterations=1, cost_usd=0.0)
    assert "cost" not in free


def test_a_plan_without_a_goal_is_named_as_the_runs_task() -> None:
    start = _detail("run_start", task="", plan="plans/p.yaml", max_iter=3, agent_cmd=["claude"])
    assert start.startswith("task: the plan plans/p.yaml | agent: claude |")


def test_a_decision_keeps_its_words_apart_on_one_line_and_is_cut_as_the_docs_say() -> None:
    said = "Fix\x1b[31m the\ntest:\r\n\tthen\x0brun\x0cit\x85again\u2028now\x1c" + "w" * 200
    detail = _detail("decision", iteration=1, max_iter=5, action="continue", content=said)
    content = detail.split(": ", 1)[1]
    assert content.startswith("Fix the test: then run it again now www")
    assert len(content) == CUT and content.endswith("w…")
    assert f"cut at {CUT} characters" in (REPO / "docs" / "ci.md").read_text()
    quoted = 'word_count("  one   two ") returns 7\n    instead of 2'  # its spaces are data
    detail = _detail("decision", iteration=1, max_iter=5, action="continue", content=quoted)
    assert detail.endswith(': word_count("  one   two ") returns 7 instead of 2')


def test_an_instruction_and_a_question_read_the_same_way() -> None:
    typed = _detail("inject", kind="instruction", text="one\ttwo\x0bthree " + "x" * 200)
    assert (
        typed.startswith("instruction: one two three x")
        and len(typed) == len("instruction: ") + CUT
    )
    asked = _detail(
        "question", to="supervisor", questions=[{"question": "A\x0cor B?", "options": []}]
    )
    assert asked == "to supervisor: A or B? []"


def test_a_repeat_says_how_often_and_what_did_not_change() -> None:
    detail = _detail(
        "repeat",
        count=2,
        max_repeats=3,
        what=["instruction", "answer", "files"],
        instruction="Please try again to find config.yaml",
        answer="I cannot find the file",
    )
    assert detail == (
        "2x the same round (of 3 allowed): same instruction, answer, files"
        " | instruction: Please try again to find config.yaml | answer: I cannot find the file"
    )


def test_the_baseline_the_protected_files_and_a_tamper_read_as_words() -> None:
    results = [
        {"command": ["pytest", "-q"], "exit_code": 1, "passed": False},
        {"command": ["ruff", "check"], "exit_code": 0, "passed": True},
    ]
    assert _detail("verify_baseline", results=results, cannot_tell=["step lint"]) == (
        "before any change: `pytest -q` exited 1; `ruff check` passed"
        " | cannot tell done from not done: step lint"
    )
    assert _detail("verify_baseline", skipped=True) == "skipped (--no-verify-baseline)"
    assert _detail("protect", count=2, files=["tests/a.py", "tests/b.py"], pathspecs=["x/"]) == (
        "2 file(s) protected: tests/a.py, tests/b.py | --protect x/"
    )
    refused = _detail(
        "tamper",
        verdict="refused",
        files=["tests/test_calc.py"],
        command=["pytest", "-q"],
        exit_code=1,
    )
    assert refused == (
        "refused: protected files changed: tests/test_calc.py | with the originals "
        "`pytest -q` exited 1"
    )
    # A damaged log's values are read as text, and nothing in them acts on a terminal.
    assert _detail("tamper", verdict=["x"], files="a\x1b[2Jb") == (
        "['x']: protected files changed: ab"
    )


def test_a_second_opinion_reads_as_both_opinions_and_what_the_run_did() -> None:
    line = _detail(
        "second_opinion",
        iteration=3,
        command="codex exec",
        action="continue",
        content="also handle\nnegative numbers",
        judge_action="complete",
        verdict="continue",
    )
    assert line == (
        "#3 codex exec: continue: also handle negative numbers | the judge said complete"
        " | the run: continue"
    )
    auto = _detail("second_opinion_auto", command=["codex", "exec"], agent="claude", judge=None)
    assert auto == "codex exec (another vendor than the agent's claude and the judge's ?)"
    start = _detail(
        "run_start",
        task="t",
        max_iter=1,
        agent_cmd=["a"],
        supervisor_cmd=["s"],
        second_opinion=["gemini", "-p", ""],
    )
    assert "| supervisor: s | second opinion: gemini -p '' | budget: 1 iteration" in start
