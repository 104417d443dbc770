"""Whatever a line of a run's event log holds, the readers neither crash nor lose the other
lines: any JSON value in any field of any event, or any text in place of a line."""

from __future__ import annotations

import io
import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptysup.logread import parse
from ptysup.store.listing import describe
from ptysup.store.rundir import RunDir, progress
from ptysup.views.replay import one_run
from ptysup.views.replay import render as replay_render
from ptysup.views.table import render as runs_render
from tests.property.strategies import any_text

RUN = [
    {"event": "run_start", "ts": 1.0, "run_id": "r", "task": "t", "max_iter": 5, "record": None},
    {"event": "run_resume", "ts": 1.5, "run_id": "r", "elapsed_before_s": 0.5, "part": 2},
    {"event": "step_start", "ts": 2.0, "id": "s", "index": 1, "of": 2, "do": "x"},
    {"event": "verify", "ts": 2.5, "command": ["true"], "passed": True, "exit_code": 0},
    {"event": "decision", "ts": 3.0, "iteration": 1, "max_iter": 5, "action": "continue"}
    | {"content": "go", "duration_s": 1.0, "total_cost_usd": 0.1},
    {"event": "step_end", "ts": 3.5, "id": "s", "outcome": "complete"},
    {"event": "wait", "ts": 3.7, "seconds": 5, "reason": "limit"},
    {"event": "repeat", "ts": 3.8, "count": 2, "max_repeats": 3, "what": ["answer"]}
    | {"instruction": "again", "answer": "same"},
    {"event": "escalation", "ts": 3.9, "iteration": 1, "reason": "spinning", "at": "repeat"},
    {"event": "run_end", "ts": 4.0, "outcome": "budget", "exit_code": 3, "iterations": 1}
    | {"elapsed_s": 3.0, "cost_usd": 0.1},
]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | any_text(20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(any_text(5), inner, max_size=3),
    max_leaves=6,
)


def _read_everything(tmp_path: Path, text: str) -> None:
    """Every reader of the log, as `runs`, `resume` and `replay` use them."""
    read = parse(text)
    progress(read.events, alive=10.0, unreadable=read.skipped)
    replay_render(one_run(read.events), {}, io.StringIO())
    run = RunDir(tmp_path / "20260101-000000-abcdef")
    run.path.mkdir(exist_ok=True)
    run.default_events.write_text(
        text, encoding="utf-8", errors="surrogatepass"
    )  # bytes no UTF-8 has
    out = io.StringIO()
    runs_render([describe(run, clock=lambda: 20.0)], out)
    json.dumps(describe(run), allow_nan=False)  # what `runs --json` and the page get


@given(st.sampled_from(range(len(RUN))), st.data())
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_any_value_in_any_field_breaks_nothing_and_only_its_line_is_skipped(
    tmp_path: Path, index: int, data: st.DataObject
) -> None:
    event = dict(RUN[index])
    field = data.draw(st.sampled_from(sorted(event)))
    event[field] = data.draw(json_values)
    lines = [*RUN[:index], event, *RUN[index + 1 :]]
    text = "".join(json.dumps(e) + "\n" for e in lines)
    read = parse(text)
    assert len(read.events) + read.skipped == len(RUN)
    others = [e for i, e in enumerate(RUN) if i != index]
    assert [e for e in read.events if e in others] == others  # NaN != NaN: not by `event`
    _read_everything(tmp_path, text)


@given(any_text(200))
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_any_text_in_place_of_a_line_breaks_nothing(tmp_path: Path, junk: str) -> None:
    text = "".join(json.dumps(e) + "\n" for e in RUN[:3]) + junk + "\n"
    text += "".join(json.dumps(e) + "\n" for e in RUN[3:])
    read = parse(text)
    assert all(e in read.events for e in RUN)
    _read_everything(tmp_path, text)


@given(st.integers(1, 300_000), st.sampled_from(["[", '{"a":', "[[{}, "]), st.booleans())
@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_a_line_nested_however_deep_breaks_nothing(
    tmp_path: Path, depth: int, opening: str, closed: bool
) -> None:
    # One such line made `runs`, `replay`, `resume` and `attach` crash for every run.
    closing = {"[": "]", '{"a":': "}", "[[{}, ": "]]"}[opening]
    junk = opening * depth + ("0" + closing * depth if closed else "")
    text = "".join(json.dumps(e) + "\n" for e in RUN[:3]) + junk + "\n"
    text += "".join(json.dumps(e) + "\n" for e in RUN[3:])
    read = parse(text)
    assert read.events == RUN and read.skipped == 1
    _read_everything(tmp_path, text)
