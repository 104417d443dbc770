"""`ptysup judge-bench`'s parts: the case format read back as written and refused in one
line when it is not one, the scorer's figures from known outcomes, the command's bad input
(one line, exit 2; a missing supervisor, exit 5), and a case without a project replayed
with the checks' verdict as the run recorded it."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from ptysup.cli.commandline import main as ptysup_main
from ptysup.events import EventLog
from ptysup.exitcodes import ExitCode
from ptysup.judgebench import command
from ptysup.judgebench.cases import CORPUS, KINDS, LABELS, Case, CaseError, File, from_json, load
from ptysup.judgebench.panels import second_opinion
from ptysup.judgebench.replay import ERROR, Panel, Result, replay
from ptysup.judgebench.save import SaveError, make_case
from ptysup.judgebench.score import score, write_table
from ptysup.run import turns
from ptysup.run.decision import Asked, Judge, Moment, SecondOpinion, TurnView
from ptysup.run.turns import TurnLog, read_turn, read_turns
from ptysup.supervisor.decide import Decided
from ptysup.supervisor.parse import parse
from ptysup.supervisor.runner import Answer
from tests.unit.test_decision import Judge as Says


def _case(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "format": 1,
        "kind": "checks_fail",
        "label": "not_done",
        "task": "fix add()",
        "verify": ["python3 -m unittest"],
        "turn": {"turn_end": "stop", "last_message": "Fixed.", "screen": "● Fixed."},
        "moment": {"iteration": 1, "max_iter": 10, "elapsed_s": 3.0},
        "evidence": "Files changed since the start: calc.py",
        "checks": {"result": "fail", "command": "python3 -m unittest", "exit_code": 1},
    }
    data.update(changes)
    return data


def _write(tmp_path: Path, data: Any, name: str = "case.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_a_case_reads_back_as_it_was_written() -> None:
    project = {
        "start": {"calc.py": "x = 1\n", "run.sh": {"text": "#!/bin/sh\n", "executable": True}},
        "end": {"calc.py": "x = 2\n", "run.sh": None, "blob": {"base64": "AAE="}},
    }
    case = from_json(_case(project=project), "c")
    assert case.start is not None and case.start["run.sh"] == File(b"#!/bin/sh\n", True)
    assert case.end == {"calc.py": File(b"x = 2\n"), "run.sh": None, "blob": File(b"\0\1")}
    again = from_json(json.loads(json.dumps(case.to_json())), "c")
    assert again == case


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ("{not json", "not a judge-bench case: Expecting property name"),
        ([], "not a judge-bench case: not a JSON object"),
        (_case(kind="easy"), "kind must be one of done, checks_fail"),
        (_case(label="maybe"), "label must be one of done, not_done, person, not 'maybe'"),
        (_case(format=2), "format 2: this ptysup reads format 1"),
        ({k: v for k, v in _case().items() if k != "task"}, "judge-bench case: task is missing"),
        (_case(project={"start": {"../x": "a"}}), "'../x' is not a path inside the project"),
        (_case(checks={"result": "green"}), "checks.result must be one of pass, fail"),
    ],
)
def test_a_file_that_is_no_case_is_refused_in_one_line(
    tmp_path: Path, data: Any, says: str
) -> None:
    path = _write(tmp_path, data)
    with pytest.raises(CaseError) as refused:
        load(path)
    assert str(refused.value).startswith(f"{path}: ")
    assert says in str(refused.value) and "\n" not in str(refused.value)


def _result(label: str, outcome: str, kind: str = "done", cost: float = 0.5) -> Result:
    return Result("c", kind, label, outcome, seconds=2.0, cost_usd=cost)


def test_the_score_counts_each_outcome_against_its_label() -> None:
    results = [
        _result("done", "complete"),
        _result("done", "continue"),  # stopped too late: done missed
        _result("done", "escalate"),  # done missed, and a wrong escalation
        _result("not_done", "complete", "checks_fail"),  # a false done
        _result("not_done", "continue", "question"),
        _result("person", "complete", "person"),  # a false done, a person missed
        _result("person", "escalate", "spinning"),  # right, and spinning caught
        _result("person", "continue", "spinning"),
        _result("person", "abort", "person"),
        Result("c", "done", "done", ERROR, error="supervisor failed"),
    ]
    s = score(results)
    assert (s.cases, s.decided, s.errors, s.right) == (10, 9, 1, 3)
    assert (s.false_done_accepted, s.done_missed) == (2, 2)
    assert (s.escalations_right, s.escalations_wrong, s.person_missed) == (1, 1, 3)
    assert (s.aborts, s.spinning, s.spinning_caught) == (1, 2, 1)
    assert (s.cost_usd, s.cost_per_decision_usd, s.seconds_per_decision) == (4.5, 0.5, 2.0)
    table = io.StringIO()
    write_table(results, "claude -p", None, table)
    lines = table.getvalue().splitlines()
    assert lines[0] == "ptysup judge-bench: 10 case(s), judge: claude -p"
    summary = "false done accepted: 2, done missed: 2, spinning caught: 1/2, cost $4.5000"
    assert summary in lines and lines[lines.index(summary) + 1] == "not as labelled:"
    assert "  c [done, done] → supervisor failed" in lines


def test_the_bundled_corpus_has_forty_cases_of_six_kinds_and_every_label() -> None:
    cases = [load(p) for p in sorted(CORPUS.glob("*.json"))]
    assert len(cases) >= 40
    kinds = {c.kind for c in cases}
    assert len(kinds) >= 6 and kinds <= set(KINDS)
    assert {c.label for c in cases} == set(LABELS)
    agents = {c.source.get("agent") for c in cases}
    assert {"claude", "codex"} <= agents
    # Recorded with a project: the bench runs the checks and the tamper guard again.
    assert all(c.start is not None for c in cases if c.verify)


class _Panel:
    def __init__(self, judge: Judge) -> None:
        self.judge = judge
        self.second: SecondOpinion | None = None
        self.split = False

    def close(self) -> None:
        pass


def test_a_case_without_a_project_is_judged_with_the_checks_as_the_run_recorded_them(
    tmp_path: Path,
) -> None:
    case = load(_write(tmp_path, _case()))
    judge = Says("[COMPLETE] it says fixed")

    def panels(project: Path, log: EventLog) -> Panel:
        return _Panel(judge)

    result = replay(case, panels, {})
    # The recorded failing check refuses the judge's [COMPLETE]: the run would go on.
    assert (result.outcome, result.by, result.judge) == ("continue", "verify", "complete")
    assert (result.seconds, result.cost_usd, result.checks.result) == (0.1, 0.5, "fail")
    assert "Files changed since the start: calc.py" in judge.prompts[0]


def _bench(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = command.main(list(args), env or {"PATH": "/usr/bin:/bin"}, out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("no-such.json",), "no-such.json: no such file or folder"),
        (("--kind", "easy"), "--kind must be one of done, checks_fail"),
        (("--format", "xml"), "--format must be one of table, json, not 'xml'"),
        (("--second-opinion", "a 'b"), "--second-opinion: "),
        (("save", "last"), "save needs --label (done, not_done or person) and --kind"),
        (("save", "last", "--label", "yes", "--kind", "done"), "--label must be one of"),
        (("save",), "save takes one RUN"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: tuple[str, ...], says: str) -> None:
    given = args if args[:1] == ("save",) else (*args, "--supervisor-cmd", "true")
    code, out, err = _bench(*given)
    assert code == int(ExitCode.USAGE) == 2, err
    assert err.startswith("ptysup: judge-bench: ") and err.count("\n") == 1, err
    assert says in err and not out


def test_a_bad_case_is_refused_before_any_is_replayed(tmp_path: Path) -> None:
    good = _write(tmp_path, _case(), "good.json")
    bad = _write(tmp_path, _case(label="maybe"), "bad.json")
    code, out, err = _bench(str(good), str(bad), "--supervisor-cmd", "true")
    assert (
        code == 2
        and not out
        and err
        == (
            f"ptysup: judge-bench: {bad}: not a judge-bench case: label must be one of done, "
            "not_done, person, not 'maybe'\n"
        )
    )


def test_a_supervisor_that_is_not_installed_exits_5(tmp_path: Path) -> None:
    code, _, err = _bench(str(_write(tmp_path, _case())), "--supervisor-cmd", "no-such-cli -p")
    assert code == int(ExitCode.SUPERVISOR) == 5
    assert err == "ptysup: judge-bench: supervisor command not found: no-such-cli\n"


def test_the_command_line_refuses_an_option_judge_bench_does_not_take(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert ptysup_main(["judge-bench", "--max-iter", "3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ptysup: ") and err.count("\n") == 1 and "--max-iter" in err


def test_a_turn_view_and_moment_survive_the_case_format() -> None:
    view = TurnView("question", ("Bash(ls) → ok",), "Which one?", "screen", "Which one?", True)
    case = Case("n", "question", "not_done", "t", view, Moment(2, 9, 1.5))
    assert from_json(case.to_json(), "n") == case


def _asked(iteration: int, screen: str = "● Done.") -> Asked:
    view = TurnView("stop", ("Edit(calc.py) → ok",), "Done.", screen, "", False)
    decided = Decided(parse("[CONTINUE] go on"), Answer("[CONTINUE] go on", 1.0, None), 1)
    return Asked(view, Moment(iteration, 50, 1.0), "prompt", None, "evidence", decided, ("n",))


def test_a_run_keeps_the_last_turn_ends_each_as_its_judge_was_shown_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(turns, "MAX_KEPT", 3)
    log = TurnLog(tmp_path / "turns", lambda: "abc123")
    for i in range(1, 6):
        log.keep("fix add()", _asked(i, "x" * (turns.MAX_TEXT + 10)), [("make", "test")])
    kept = read_turns(tmp_path)
    assert sorted(kept) == [3, 4, 5]  # the oldest went first
    turn = read_turn(kept[5])
    assert (turn.task, turn.moment.iteration, turn.snapshot) == ("fix add()", 5, "abc123")
    assert turn.checks == (("make", "test"),) and turn.notes == ("n",)
    assert turn.judge == ("continue", "go on")
    assert len(turn.view.screen.encode()) <= turns.MAX_TEXT + 20  # cut, its end kept
    assert turn.view.screen.endswith("x" * 100) and turn.view.screen.startswith("[… cut …]")


def test_a_turn_end_that_cannot_be_kept_is_said_once_and_the_run_goes_on(tmp_path: Path) -> None:
    (tmp_path / "turns").write_text("a file where the folder should be")
    said: list[str] = []
    log = TurnLog(tmp_path / "turns", lambda: None, said.append)
    log.keep("t", _asked(1), [])
    log.keep("t", _asked(2), [])
    assert len(said) == 1 and said[0].startswith("cannot keep the turn ends for ptysup judge-bench")


def test_save_without_such_a_run_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(SaveError, match="no run") as refused:
        make_case("no-such-run", "done", "done", runs_dir=tmp_path / "runs")
    assert "\n" not in str(refused.value)
    monkeypatch.chdir(tmp_path)
    code, out, err = _bench("save", "last", "--label", "done", "--kind", "done")
    assert code == 2 and not out
    assert err.startswith("ptysup: judge-bench: ") and err.count("\n") == 1


def test_second_opinion_auto_picks_another_vendor_than_the_judge(tmp_path: Path) -> None:
    for name in ("claude", "codex", "gemini"):
        (tmp_path / name).write_text("#!/bin/sh\n")
        (tmp_path / name).chmod(0o755)
    assert second_opinion(("auto",), ("claude", "-p"), str(tmp_path)) == ("codex", "exec")
    assert second_opinion(("auto",), ("codex", "exec"), str(tmp_path)) == ("claude", "-p")
    assert second_opinion(("gemini", "-p", ""), ("claude",), str(tmp_path)) == ("gemini", "-p", "")
    assert second_opinion(None, ("claude",), str(tmp_path)) is None
    (tmp_path / "codex").unlink()
    (tmp_path / "gemini").unlink()
    env = {"PATH": str(tmp_path)}
    code, _, err = _bench("--supervisor-cmd", "claude -p", "--second-opinion", "auto", env=env)
    assert code == 2 and err == (
        "ptysup: judge-bench: --second-opinion auto: no supervisor CLI of another vendor than "
        "the judge's (claude) is installed\n"
    )


def test_a_bad_case_is_a_usage_error_even_when_the_supervisor_is_missing(tmp_path: Path) -> None:
    # A newcomer without Claude Code who mistyped a case file was told of the supervisor.
    for words in ((str(tmp_path / "nope.json"),), (str(_write(tmp_path, "x: [", "bad.json")),)):
        code, out, err = _bench(*words, "--supervisor-cmd", "no-such-cli -p")
        assert code == 2 and not out and "no-such-cli" not in err, err
