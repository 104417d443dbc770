"""The wind-down's point over each budget (ptysup.run.winddown), and --wind-down's values."""

from __future__ import annotations

import io
from typing import Any

import pytest

from ptysup.events import Event, format_line
from ptysup.run.report import GITHUB_PRINTS, GithubSink
from ptysup.run.winddown import (
    COST,
    ITERATIONS,
    LIFTED_NOTE,
    TIME,
    Limits,
    Usage,
    WindDown,
    agent_message,
    last_stretch,
    supervisor_note,
)
from ptysup.store.rundir import progress
from ptysup.values import wind_down_fraction
from ptysup.views.replay import render


def _first(max_iter: int, fraction: float = 0.85) -> int | None:
    """The first decision whose instruction carries the wind-down (one that types one)."""
    for i in range(1, max_iter):
        if last_stretch(fraction, Usage(i, 0.0, 0.0), Limits(max_iter)) is not None:
            return i
    return None


@pytest.mark.parametrize(
    ("max_iter", "first", "turns_left"),
    [
        (50, 42, 8),
        (20, 16, 4),
        (10, 8, 2),
        (7, 5, 2),
        (6, 5, 1),
        (3, 2, 1),
        (2, 1, 1),
        (1, None, 0),
    ],
)
def test_the_iteration_budget_winds_down_at_its_share_of_the_agents_turns(
    max_iter: int, first: int | None, turns_left: int
) -> None:
    assert _first(max_iter) == first
    if first is not None:
        stretch = last_stretch(0.85, Usage(first, 0.0, 0.0), Limits(max_iter))
        assert stretch is not None and stretch.budget == ITERATIONS
        assert stretch.turns_left == turns_left


def test_a_smaller_fraction_winds_down_sooner() -> None:
    assert _first(50, 0.5) == 24
    assert _first(50, 0.99) == 49  # the last instruction the budget allows


@pytest.mark.parametrize(
    ("elapsed", "due"), [(0.0, False), (509.9, False), (510.0, True), (599.0, True)]
)
def test_the_time_budget_winds_down_at_its_share_of_the_time(elapsed: float, due: bool) -> None:
    stretch = last_stretch(0.85, Usage(1, elapsed, 0.0), Limits(50, max_time_s=600.0))
    assert (stretch is not None) is due
    if stretch is not None:
        assert stretch.budget == TIME and stretch.time_left_s == pytest.approx(600.0 - elapsed)


@pytest.mark.parametrize(("cost", "due"), [(1.69, False), (1.70, True), (2.5, True)])
def test_the_cost_budget_winds_down_at_its_share_of_the_spend(cost: float, due: bool) -> None:
    stretch = last_stretch(0.85, Usage(1, 0.0, cost), Limits(50, max_cost_usd=2.0))
    assert (stretch is not None) is due
    if stretch is not None:
        assert stretch.budget == COST and stretch.cost_left_usd == pytest.approx(max(2 - cost, 0))


def test_the_budget_most_used_is_the_one_named_and_every_budget_says_what_is_left() -> None:
    stretch = last_stretch(0.85, Usage(43, 590.0, 1.0), Limits(50, 600.0, 2.0))
    assert stretch is not None and stretch.budget == TIME
    assert stretch.left() == "7 turns (this one included), about 10s and $1.00"
    assert "7 turns (this one included), about 10s and $1.00 left" in agent_message(stretch)


def test_off_never_winds_down() -> None:
    assert last_stretch(None, Usage(49, 599.0, 1.99), Limits(50, 600.0, 2.0)) is None
    wind = WindDown(None, told=True)  # a resume with --wind-down off says nothing either
    assert wind.read(Usage(1, 0.0, 0.0), Limits(50)).notes == ()


def test_the_point_moves_with_the_limits_as_they_are_read() -> None:
    used = Usage(9, 0.0, 0.0)
    assert last_stretch(0.85, used, Limits(10)) is not None
    assert last_stretch(0.85, used, Limits(100)) is None


def test_the_agent_is_told_once_and_a_budget_raised_past_the_point_arms_it_again() -> None:
    wind = WindDown(0.85)
    used = Usage(9, 0.0, 0.0)
    reading = wind.read(used, Limits(10))
    assert reading.stretch is not None and "ptysup adds to the next instruction" in reading.notes[0]
    assert wind.due(used, Limits(10)) is not None
    wind.told = True
    assert wind.due(used, Limits(10)) is None  # once
    assert "has been told to wind down" in wind.read(used, Limits(10)).notes[0]
    raised = wind.read(used, Limits(100))
    assert raised.lifted and raised.notes == (LIFTED_NOTE,)
    assert wind.read(used, Limits(100)) == type(raised)(None, ())  # said once
    assert wind.due(Usage(84, 0.0, 0.0), Limits(100)) is not None  # the new point


def test_the_events_read_as_one_line() -> None:
    stretch = last_stretch(0.85, Usage(42, 0.0, 0.0), Limits(50))
    assert stretch is not None
    event = Event("wind_down", 0.0, {"iteration": 42, "fraction": 0.85, **stretch.fields()})
    line = format_line(event)
    assert "wind_down" in line and "#42 iterations budget past 85%" in line
    assert line.endswith("left: 8 turns (this one included)")
    lifted = format_line(Event("wind_down_lifted", 0.0, {"iteration": 9, "max_iter": 100}))
    assert "#9 budgets raised: out of the last stretch" in lifted


@pytest.mark.parametrize(
    ("text", "fraction"),
    [("0.85", 0.85), (" 0.5 ", 0.5), ("85%", 0.85), ("off", None), ("OFF", None)],
)
def test_wind_down_takes_a_fraction_or_off(text: str, fraction: float | None) -> None:
    assert wind_down_fraction(text) == fraction


@pytest.mark.parametrize(
    "text", ["0", "1", "1.5", "-0.2", "100%", "nan", "inf", "soon", "false", ""]
)
def test_wind_down_refuses_anything_else(text: str) -> None:
    with pytest.raises(ValueError, match="must be"):
        wind_down_fraction(text)


def test_under_github_actions_the_wind_down_is_a_notice() -> None:
    stretch = last_stretch(0.85, Usage(8, 0.0, 0.0), Limits(10))
    assert stretch is not None
    out = io.StringIO()
    GithubSink(out).write(
        Event("wind_down", 0.0, {"iteration": 8, "fraction": 0.85, **stretch.fields()})
    )
    assert out.getvalue() == (  # % is escaped in a workflow command
        "::notice title=ptysup winds down::#8 iterations budget past 85%25: the agent is told to"
        " leave its work clean; left: 2 turns (this one included)\n"
    )
    assert "wind_down" in GITHUB_PRINTS  # shown once: not as a text line too


def test_the_run_start_line_says_the_wind_down() -> None:
    fields = {"task": "t", "agent_cmd": ["claude"], "supervisor_cmd": ["claude", "-p"]}
    on = format_line(Event("run_start", 0.0, {**fields, "max_iter": 9, "wind_down": 0.85}))
    off = format_line(Event("run_start", 0.0, {**fields, "max_iter": 9, "wind_down": None}))
    assert "| budget: 9 iterations, wind down at 85% |" in on
    assert "| budget: 9 iterations |" in off


def test_a_resume_reads_from_the_log_whether_the_agent_was_told() -> None:
    start = {"event": "run_start", "ts": 1.0, "max_iter": 10}
    told = {"event": "wind_down", "ts": 2.0, "iteration": 8}
    lifted = {"event": "wind_down_lifted", "ts": 3.0, "iteration": 9}
    assert not progress([start]).wound_down
    assert progress([start, told]).wound_down
    assert not progress([start, told, lifted]).wound_down
    assert progress([start, told, lifted, {**told, "ts": 4.0}]).wound_down


def test_replay_shows_the_wind_down_after_the_decision_that_brought_it() -> None:
    stretch = last_stretch(0.85, Usage(1, 0.0, 0.0), Limits(2))
    assert stretch is not None
    events: list[dict[str, Any]] = [
        {"event": "run_start", "run_id": "r", "task": "t"},
        {"event": "decision", "iteration": 1, "max_iter": 2, "action": "continue", "content": "go"},
        {"event": "wind_down", "iteration": 1, "fraction": 0.85, **stretch.fields()},
    ]
    out = io.StringIO()
    render(events, {}, out)
    said = out.getvalue()
    assert said.index("the supervisor said: [CONTINUE] go") < said.index(
        "  wind down: #1 iterations budget past 85%: the agent is told to leave its work clean;"
        " left: 1 turn (this one included)\n"
    )


def test_at_the_last_decision_the_supervisor_is_told_no_instruction_is_typed() -> None:
    stretch = last_stretch(0.85, Usage(10, 0.0, 0.0), Limits(10))
    assert stretch is not None and stretch.turns_left == 0
    assert "no turn (this decision is the last: a [CONTINUE] is not typed)" in supervisor_note(
        stretch, told=True
    )


def test_the_supervisor_reads_what_is_left_from_the_next_turn_on() -> None:
    stretch = last_stretch(0.85, Usage(8, 0.0, 0.0), Limits(10))
    assert stretch is not None
    assert "left: 2 turns (the next one included)." in supervisor_note(stretch, told=False)
    assert "2 turns (this one included) left" in agent_message(stretch)
