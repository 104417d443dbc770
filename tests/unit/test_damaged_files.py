"""A run's own files read back when they are damaged: what is readable is used, what is
not is skipped and counted (event lines, recording lines), or refused in one line (run.json,
a recording without a header)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ptysup.config import ConfigError, RunConfig
from ptysup.logread import parse
from ptysup.serve.api import RunsIndex
from ptysup.serve.routes import Response, Router
from ptysup.store.rundir import (
    RunDir,
    RunNotFound,
    RunRecord,
    config_from_json,
    config_to_json,
    progress,
    read_log,
)
from ptysup.store.runstate import read_state
from ptysup.terminal.castread import CastError, load_cast

START = {"event": "run_start", "ts": 1.0, "run_id": "r1", "task": "t", "max_iter": 5}
DECISION = {"event": "decision", "ts": 2.0, "iteration": 1, "action": "continue"}
END = {"event": "run_end", "ts": 3.0, "outcome": "budget", "iterations": 1, "elapsed_s": 2.0}


def _lines(*items: object) -> str:
    return "".join((item if isinstance(item, str) else json.dumps(item)) + "\n" for item in items)


@pytest.mark.parametrize(
    "bad",
    [
        '{"event": "decision", "ts": 2.5, "iteration": "two", "action": "continue"}',
        '{"event": "decision", "ts": "later", "iteration": 2}',
        '{"event": "run_end", "ts": 2.5, "elapsed_s": "long", "outcome": "complete"}',
        '{"event": "run_start", "ts": 2.5, "task": ["a", "list"]}',
        '{"event": "decision", "ts": NaN, "iteration": 2}',
        '{"event": "step_start", "ts": 2.5, "index": true}',
        '{"event": "verify", "ts": 2.5, "command": "make", "passed": true}',
        '{"event": 7, "ts": 2.5}',
        '["event", "decision"]',
        "not json {",
        '{"event": "decision", "iteration": 1' + "9" * 5000 + "}",
    ],
)
def test_a_bad_line_is_skipped_counted_and_the_rest_still_adds_up(bad: str) -> None:
    read = parse(_lines(START, DECISION, bad, END))
    assert read.events == [START, DECISION, END]
    assert read.skipped == 1
    done = progress(read.events, unreadable=read.skipped)
    assert (done.iterations, done.outcome, done.elapsed_s) == (1, "budget", 2.0)
    assert done.unreadable == 1


def test_a_line_still_being_written_is_not_damage() -> None:
    cut = _lines(START, DECISION) + json.dumps(END)[:20]  # kill -9 mid-line, or not yet done
    assert parse(cut) == parse(_lines(START, DECISION))
    assert parse(cut).skipped == 0
    whole = _lines(START, DECISION) + json.dumps(END)  # its newline is on the way
    assert parse(whole).events == [START, DECISION, END]
    assert parse(_lines(START) + "\n\n").skipped == 0  # blank lines are nothing at all


def test_an_unreadable_log_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(RunNotFound, match=r"cannot read .*events\.jsonl"):
        read_log(tmp_path / "events.jsonl")


def _record(tmp_path: Path, **changes: object) -> RunDir:
    run = RunDir(tmp_path / "20260101-000000-abcdef")
    record = RunRecord(
        run.run_id, config_to_json(RunConfig(task="t")), "sid", "e.jsonl", None, "/", 0.0
    )
    data = {**json.loads(record.to_json()), **changes}
    run.path.mkdir()
    run.record_file.write_text(json.dumps(data))
    return run


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"config": None}, "config is null, not an object"),
        ({"config": [1]}, "config is"),
        ({"log_file": 3}, "log_file is 3, not a string"),
        ({"started": "now"}, 'started is "now", not a number'),
        ({"session_id": True}, "session_id is true"),
    ],
)
def test_a_wrong_typed_run_json_is_refused_in_one_line(
    tmp_path: Path, changes: dict[str, object], says: str
) -> None:
    run = _record(tmp_path, **changes)
    with pytest.raises(RunNotFound) as caught:
        run.read_record()
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_run_json_that_is_not_json_or_not_an_object_is_refused(tmp_path: Path) -> None:
    run = _record(tmp_path)
    for text, says in (("{cut", "not JSON"), ("[1, 2]", "not a JSON object"), ("", "not JSON")):
        run.record_file.write_text(text)
        with pytest.raises(RunNotFound, match=says):
            run.read_record()


def test_a_field_a_newer_version_added_to_run_json_is_ignored(tmp_path: Path) -> None:
    record = _record(tmp_path, shiny_new_field={"x": 1}).read_record()
    assert record is not None and record.session_id == "sid"


@pytest.mark.parametrize(
    ("config", "says"),
    [
        ({"task": "t", "max_iter": "ten"}, 'max_iter is "ten"'),
        ({"task": "t", "max_iter": True}, "max_iter is true"),
        ({"task": "t", "idle": None}, "idle is null"),
        ({"task": "t", "verify": "pytest"}, 'verify is "pytest"'),
        ({"task": "t", "verify": [["pytest", 3]]}, "verify is"),
        ({"task": "t", "log_file": 5}, "log_file is 5"),
        ({"task": 1}, "task is 1"),
        ({"max_iter": 3}, "task is missing"),
    ],
)
def test_a_wrong_typed_stored_option_is_a_config_error(
    config: dict[str, object], says: str
) -> None:
    with pytest.raises(ConfigError, match=f"run.json's config: {says}"):
        config_from_json(config)


def test_stored_options_of_the_right_types_still_load() -> None:
    stored = RunConfig(task="t", max_iter=7, idle=2, verify=(("pytest", "-q"),), max_cost=None)
    assert config_from_json(config_to_json(stored)) == stored


def test_a_state_file_with_a_wrong_typed_field_reads_as_none(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    good = {"state": "working", "since": 1.0, "pid": 5, "detail": "x", "until": None}
    path.write_text(json.dumps(good))
    assert read_state(path) == good
    for name, value in (("since", "now"), ("pid", "5"), ("detail", 3), ("until", [1])):
        path.write_text(json.dumps({**good, name: value}))
        assert read_state(path) is None, name


def _cast(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "events.cast"
    path.write_text(text)
    return path


HEADER = {"version": 2, "width": 80, "height": 24}


def test_a_recording_cut_by_a_full_disk_reads_up_to_the_cut(tmp_path: Path) -> None:
    text = _lines(HEADER, [0.1, "o", "hello"], [0.2, "r", "100x30"]) + '[0.3, "o", "wor'
    cast = load_cast(_cast(tmp_path, text))
    assert cast.events == [(0.1, "o", "hello"), (0.2, "r", "100x30")]
    assert cast.skipped == 0


def test_garbled_recording_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    bad: list[object] = [
        "\x00\x00\x00",
        [0.2, "r", "wide"],
        [0.2, "r", "99999x99999"],
        ["soon", "o", "x"],
    ]
    bad += [[0.2, "o", 5], [1, 2], {}, [float("inf"), "o", "x"]]
    text = _lines(HEADER, [0.1, "o", "a"], *bad, [0.3, "o", "b"])
    cast = load_cast(_cast(tmp_path, text))
    assert cast.events == [(0.1, "o", "a"), (0.3, "o", "b")]
    assert cast.skipped == len(bad)


@pytest.mark.parametrize(
    "first",
    [
        "garbage",
        "",
        '{"version": 2}',
        '{"width": "80", "height": 24}',
        '{"width": 0, "height": 24}',
        '{"width": 80, "height": 99999999}',
        "[0.1, 'o', 'x']",
        "\udcff\udcfe",
    ],
)
def test_a_recording_without_a_usable_header_is_no_recording(tmp_path: Path, first: str) -> None:
    path = tmp_path / "events.cast"
    path.write_bytes(first.encode("utf-8", "surrogateescape") + b'\n[0.1, "o", "x"]\n')
    with pytest.raises(CastError, match="is not an asciicast v2 recording"):
        load_cast(path)


def test_a_runs_directory_that_cannot_be_read_while_serving_is_a_503(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.write_text("a file where the runs were")  # as unreadable as it gets for root
    router = Router(RunsIndex(runs), {}, lambda seconds: True, lambda: 0.0)
    answer = router.get("/api/runs")
    assert isinstance(answer, Response) and answer.status == 503
    assert answer.body.decode().startswith(f"cannot read {runs}: ")
