"""`ptysup serve --control`: the Guard's control checks, the control requests turned into
steer calls, and what the page is shown of a run's budgets and wait."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from ptysup.serve import control
from ptysup.serve.api import RunsIndex
from ptysup.serve.routes import Response, Router
from ptysup.serve.security import CONTROL_CSP, Guard
from ptysup.store.rundir import RUNS_DIR, RunDir
from tests.serving import make_run

HOST = "127.0.0.1:8000"
GOOD = {
    "Host": HOST,
    "Origin": f"http://{HOST}",
    "X-Ptysup-Control": "1",
    "Content-Type": "application/json",
    "Cookie": "ptysup_control_8000=c0ntrol",
}


def guard() -> Guard:
    return Guard("r3ad", "127.0.0.1", 8000, control_token="c0ntrol")


def test_the_control_token_opens_the_page_with_the_right_to_steer() -> None:
    g = guard()
    by_url = g.check(HOST, "token=c0ntrol", None)
    assert by_url.status == 0 and by_url.from_query and by_url.control
    assert g.set_cookie(by_url).startswith("ptysup_control_8000=c0ntrol; ")
    assert "HttpOnly" in g.set_cookie(by_url) and "SameSite=Strict" in g.set_cookie(by_url)
    assert g.check(HOST, "", "ptysup_control_8000=c0ntrol").control
    # The read-only token reads, never steers.
    read = g.check(HOST, "token=r3ad", None)
    assert read.status == 0 and not read.control
    assert g.set_cookie(read).startswith("ptysup_token_8000=r3ad; ")
    assert not g.check(HOST, "", "ptysup_token_8000=r3ad").control
    # Without --control there is no control token: an empty cookie is no match for it.
    assert not Guard("r3ad", "127.0.0.1", 8000).check(HOST, "", "ptysup_control_8000=").control
    assert g.check(HOST, "", "ptysup_control_8000=").status == 403


def test_a_control_request_carries_everything_or_is_refused() -> None:
    g = guard()
    assert g.check_control("", GOOD).status == 0
    assert g.check_control("", {**GOOD, "Content-Type": "application/json; charset=utf-8"}).control
    refused: list[tuple[str, Mapping[str, str]]] = [
        ("a read-only cookie", {**GOOD, "Cookie": "ptysup_token_8000=r3ad"}),
        ("a wrong control cookie", {**GOOD, "Cookie": "ptysup_control_8000=c0ntro"}),
        ("another port's cookie", {**GOOD, "Cookie": "ptysup_control_8001=c0ntrol"}),
        ("no cookie", {k: v for k, v in GOOD.items() if k != "Cookie"}),
        ("a foreign Origin", {**GOOD, "Origin": "http://evil.example"}),
        ("another port's Origin", {**GOOD, "Origin": "http://127.0.0.1:8001"}),
        ("https Origin", {**GOOD, "Origin": f"https://{HOST}"}),
        ("Origin null", {**GOOD, "Origin": "null"}),
        ("no Origin", {k: v for k, v in GOOD.items() if k != "Origin"}),
        ("no header", {k: v for k, v in GOOD.items() if k != "X-Ptysup-Control"}),
        ("the header not 1", {**GOOD, "X-Ptysup-Control": "yes"}),
        ("a form's body", {**GOOD, "Content-Type": "application/x-www-form-urlencoded"}),
        ("text/plain", {**GOOD, "Content-Type": "text/plain"}),
        (
            "a foreign Host",
            {**GOOD, "Host": "evil.example:8000", "Origin": "http://evil.example:8000"},
        ),
    ]
    for what, headers in refused:
        verdict = g.check_control("", headers)
        assert verdict.status == 403 and not verdict.control, what
    # A token in the URL (which logs keep) never steers, even the right one.
    assert g.check_control("token=c0ntrol", GOOD).status == 403
    # Read-only serve: nothing steers.
    assert Guard("r3ad", "127.0.0.1", 8000).check_control("", GOOD).status == 403


def test_the_control_pages_policy_lets_in_only_styles_with_its_nonce() -> None:
    policy = CONTROL_CSP.format(nonce="abc")
    assert "style-src 'self' 'nonce-abc'" in policy
    assert "unsafe-inline" not in policy and "script-src 'self' 'wasm-unsafe-eval'" in policy


class Recorder:
    """A steer client that records its calls, and refuses when told to."""

    class Error(Exception):
        pass

    def __init__(self, refuse: str = "") -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.refuse = refuse

    def _answer(self, *call: Any) -> str:
        self.calls.append(call)
        if self.refuse:
            raise Recorder.Error(self.refuse)
        return f"done: {call[0]}"

    def steer(self) -> control.Steer:
        return control.Steer(
            send=lambda path, text, source: self._answer("send", path, text, source),
            budget=lambda path, changes, source: self._answer("budget", path, changes, source),
            stop=lambda path, source: self._answer("stop", path, source),
            approve=lambda path, dialog, source: self._answer("approve", path, dialog, source),
            error=Recorder.Error,
        )


def act(rec: Recorder, action: str, body: Any, raw: bytes | None = None) -> control.Answer:
    data = raw if raw is not None else json.dumps(body).encode()
    return control.act(rec.steer(), RunDir(Path("/runs/r1")), action, data, "10.0.0.7")


def test_each_action_is_one_steer_call_from_the_page_and_its_address() -> None:
    rec = Recorder()
    where = Path("/runs/r1")
    assert act(rec, "send", {"text": "use the other file"}) == control.Answer(
        200, {"ok": "done: send"}
    )
    assert act(rec, "budget", {"max_iter": "+5", "max_time": " 90m ", "max_cost": ""}).status == 200
    assert act(rec, "stop", {}).status == 200
    assert act(rec, "approve", {"dialog": "Allow rm -rf build?\n 1. Yes"}).status == 200
    assert rec.calls == [
        ("send", where, "use the other file", "page from 10.0.0.7"),
        ("budget", where, {"max_iter": "+5", "max_time": "90m"}, "page from 10.0.0.7"),
        ("stop", where, "page from 10.0.0.7"),
        ("approve", where, "Allow rm -rf build?\n 1. Yes", "page from 10.0.0.7"),
    ]


@pytest.mark.parametrize(
    ("action", "body", "raw", "status", "says"),
    [
        ("send", {}, None, 400, "text needs some text"),
        ("send", {"text": "   "}, None, 400, "text needs some text"),
        ("send", {"text": 5}, None, 400, "text needs some text"),
        ("send", {"text": "x" * 20_000}, None, 400, "at most"),
        ("send", None, b"not json", 400, "no JSON"),
        ("send", None, b"[1]", 400, "no JSON object"),
        ("send", None, b"[" * 100_000, 400, "no JSON"),
        ("budget", {}, None, 400, "no budget to change"),
        ("budget", {"max_turns": "+1"}, None, 400, "no such budget: max_turns"),
        ("budget", {"max_iter": 5}, None, 400, "short text value"),
        ("approve", {}, None, 400, "dialog needs some text"),
        ("delete", {}, None, 404, "no such action"),
    ],
)
def test_a_body_the_page_never_sends_is_refused_before_the_run_is_asked(
    action: str, body: Any, raw: bytes | None, status: int, says: str
) -> None:
    rec = Recorder()
    answer = act(rec, action, body, raw)
    assert answer.status == status and says in answer.body["error"]
    assert rec.calls == []


def test_what_the_run_refuses_reaches_the_person_as_its_one_line() -> None:
    rec = Recorder(refuse="max_iter cannot go below the 7 iterations used")
    answer = act(rec, "budget", {"max_iter": "5"})
    assert answer == control.Answer(
        200, {"refused": "max_iter cannot go below the 7 iterations used"}
    )


def write_state(tmp_path: Path, **fields: Any) -> RunDir:
    run_dir = RunDir(tmp_path / "r1")
    run_dir.path.mkdir()
    state = {"state": "needs_input", "since": 1.0, "pid": 1, "detail": None, **fields}
    (run_dir.path / "state.json").write_text(json.dumps(state))
    return run_dir


def test_the_page_is_shown_the_budgets_and_the_wait_as_the_run_wrote_them(tmp_path: Path) -> None:
    waiting = {"kind": "question", "text": "Which one?", "options": ["A", "B"], "until": None}
    budgets = {"max_iter": 12, "max_time": 5400.0, "max_cost": None}
    run_dir = write_state(tmp_path, budgets=budgets, waiting=waiting)
    assert control.state(run_dir, live=True) == {
        "live": True,
        "budgets": budgets,
        "waiting": waiting,
    }
    # A run that has ended waits on nobody, whatever its last state.json says.
    assert control.state(run_dir, live=False) == {"live": False, "budgets": None, "waiting": None}


@pytest.mark.parametrize(
    "fields",
    [
        {"waiting": {"kind": "shell", "text": "x", "options": []}},
        {"waiting": {"kind": "dialog", "text": 5, "options": []}},
        {"waiting": {"kind": "question", "text": "x", "options": [1]}},
        {"waiting": {"kind": "question", "text": "x", "options": [], "until": "soon"}},
        {"waiting": "escalation", "budgets": {"max_iter": "lots"}},
        {"budgets": [1, 2]},
    ],
)
def test_a_state_file_ptysup_did_not_write_shows_no_wait_and_no_budgets(
    tmp_path: Path, fields: dict[str, Any]
) -> None:
    run_dir = write_state(tmp_path, **fields)
    shown = control.state(run_dir, live=True)
    assert shown["waiting"] is None and shown["budgets"] is None


def test_a_live_run_is_steered_while_its_files_are_still_being_read(tmp_path: Path) -> None:
    # A loaded machine: the run's row is not read within the deadline (here: none at all),
    # so the list shows it as being read; its lock still says it lives.
    run_dir = make_run(tmp_path, "r1", task="slow to read", outcome=None)
    router = Router(
        RunsIndex(tmp_path / RUNS_DIR, wait_s=0.0),
        {},
        lambda s: True,
        time.monotonic,
        Recorder().steer(),
    )
    with run_dir.lock():
        answer = router.post("/api/runs/r1/stop", b"{}", "10.0.0.7")
        assert json.loads(answer.body) == {"ok": "done: stop"}
        steer = router.get("/api/runs/r1/steer", control=True)
        assert isinstance(steer, Response) and json.loads(steer.body)["live"] is True
    answer = router.post("/api/runs/r1/stop", b"{}", "10.0.0.7")
    assert json.loads(answer.body) == {
        "refused": "run r1 is not running: nothing can be steered any more"
    }
