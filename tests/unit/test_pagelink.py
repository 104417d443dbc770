"""Where a waiting run finds its control page: what `serve --control` publishes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ptysup.events import Event, format_line
from ptysup.notify import message
from ptysup.store import pagelink

PAGE = "http://127.0.0.1:8000/control"


def runs_dir(tmp_path: Path) -> Path:
    runs = tmp_path / ".ptysup" / "runs"
    runs.mkdir(parents=True)
    return runs


def test_a_published_page_links_each_run_until_withdrawn(tmp_path: Path) -> None:
    runs = runs_dir(tmp_path)
    assert pagelink.control_link(runs, "r1") is None  # nothing serves
    withdraw = pagelink.publish(runs, PAGE)
    saved = (tmp_path / ".ptysup" / "serve.json").read_text()
    assert json.loads(saved) == {"control": PAGE, "pid": os.getpid()}  # no token
    assert (tmp_path / ".ptysup" / "serve.json").stat().st_mode & 0o077 == 0
    assert pagelink.control_link(runs, "r1") == f"{PAGE}#r1"
    withdraw()
    assert pagelink.control_link(runs, "r1") is None
    assert not (tmp_path / ".ptysup" / "serve.json").exists()


@pytest.mark.pty  # starts a process
def test_a_serve_that_died_links_nothing_and_a_newer_one_is_not_withdrawn(tmp_path: Path) -> None:
    runs = runs_dir(tmp_path)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    withdraw = pagelink.publish(runs, PAGE)
    path = tmp_path / ".ptysup" / "serve.json"
    path.write_text(json.dumps({"control": PAGE, "pid": int(dead.stdout)}))  # killed, say
    assert pagelink.control_link(runs, "r1") is None
    withdraw()  # not ours any more: left for whoever wrote it
    assert path.exists()


def test_a_file_serve_did_not_write_links_nothing(tmp_path: Path) -> None:
    runs = runs_dir(tmp_path)
    path = tmp_path / ".ptysup" / "serve.json"
    for text in (
        "not json",
        "[1]",
        json.dumps({"control": "javascript:alert(1)", "pid": os.getpid()}),
        json.dumps({"control": PAGE, "pid": True}),
        json.dumps({"control": PAGE}),
        json.dumps({"control": PAGE, "pid": os.getpid(), "pad": "x" * 5000}),  # too big
    ):
        path.write_text(text)
        assert pagelink.control_link(runs, "r1") is None, text
    path.unlink()
    os.mkfifo(path)  # never waited on
    assert pagelink.control_link(runs, "r1") is None


def test_another_users_file_links_nothing(tmp_path: Path) -> None:
    runs = runs_dir(tmp_path)
    pagelink.publish(runs, PAGE)
    os.chown(tmp_path / ".ptysup" / "serve.json", os.getuid() + 4242, -1)  # as root can
    assert pagelink.control_link(runs, "r1") is None


def test_a_waiting_escalation_says_its_page_beside_the_send_line() -> None:
    fields = {
        "iteration": 1,
        "reason": "pick the storage",
        "at": "turn_end",
        "waiting": True,
        "wait_s": 600,
        "answer_with": 'ptysup send r1 "your answer"',
    }
    linked = Event("escalation", 0.0, {**fields, "page": f"{PAGE}#r1"})
    assert format_line(linked).endswith(f'for an answer: ptysup send r1 "your answer" or {PAGE}#r1')
    assert message("escalation", linked).endswith(f'"your answer" or {PAGE}#r1')
    alone = Event("escalation", 0.0, fields)  # no serve --control: the send line alone
    assert format_line(alone).endswith('for an answer: ptysup send r1 "your answer"')
    assert message("escalation", alone).endswith('ptysup send r1 "your answer"')
