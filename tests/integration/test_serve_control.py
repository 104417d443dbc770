"""`ptysup serve --control` over plain HTTP: the second URL, and who may steer (nobody but
the control page itself)."""

from __future__ import annotations

import http.client
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.serving import Served, make_run, served

RUN = "20260101-120000-cccccc"
ACTIONS = ("send", "budget", "stop", "approve")
BODIES = {
    "send": {"text": "hello"},
    "budget": {"max_iter": "+5"},
    "stop": {},
    "approve": {"dialog": "Allow?"},
}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Served]:
    make_run(tmp_path, RUN, task="steer me", outcome="complete", screen="all done")
    with served(tmp_path, "--control") as s:
        yield s


def test_the_second_line_is_the_control_url_with_a_token_of_its_own(server: Served) -> None:
    assert server.control_url.startswith(server.base + "/?token=")
    assert len(server.control_token) >= 40 and server.control_token != server.token
    status, headers, _ = server.get(server.control_url.removeprefix(server.base), with_cookie=False)
    assert status == 303 and headers["Location"] == "/"  # the token leaves the address bar
    cookie = headers["Set-Cookie"]
    assert cookie.startswith(f"ptysup_control_{server.port}={server.control_token};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    # The control cookie reads everything the read-only one does, and says it may steer.
    for cookie_header, control in ((server.control_cookie, True), (server.cookie, False)):
        status, _, body = server.get("/api/session", {"Cookie": cookie_header}, with_cookie=False)
        assert status == 200 and json.loads(body) == {"control": control}
        status, _, body = server.get("/api/runs", {"Cookie": cookie_header}, with_cookie=False)
        assert status == 200 and json.loads(body)[0]["run_id"] == RUN


def test_a_read_only_token_gets_403_for_every_post_and_every_control_get(server: Served) -> None:
    read_only = {**server.control_headers(), "Cookie": server.cookie}
    for action in ACTIONS:
        for path in (f"/api/runs/{RUN}/{action}", f"/api/runs/{RUN}/{action}?token={server.token}"):
            status, _, body = server.post(path, BODIES[action], read_only)
            assert status == 403, path
            assert b"control URL" in body or b"not the URL" in body
    for path in ("/api/runs", "/", "/control"):
        assert server.post(path, {}, read_only)[0] == 403
    for path in ("/control", f"/api/runs/{RUN}/steer", f"/api/runs/{RUN}/terminal"):
        status, _, body = server.get(path)
        assert status == 403 and b"control URL" in body, path


def test_a_control_request_missing_anything_is_refused(server: Served) -> None:
    good = server.control_headers()
    bad = {
        "a foreign Origin": {**good, "Origin": "http://evil.example"},
        "no Origin": {k: v for k, v in good.items() if k != "Origin"},
        "no control header": {k: v for k, v in good.items() if k != "X-Ptysup-Control"},
        "a form's content type": {**good, "Content-Type": "application/x-www-form-urlencoded"},
        "the read-only cookie": {**good, "Cookie": server.cookie},
        "no cookie": {k: v for k, v in good.items() if k != "Cookie"},
        "a foreign Host": {**good, "Host": "evil.example"},
    }
    for what, headers in bad.items():
        status, _, _ = server.post(f"/api/runs/{RUN}/send", {"text": "hi"}, headers)
        assert status == 403, what
    # The control token in the URL instead of the cookie: a URL lands in logs.
    status, _, _ = server.post(
        f"/api/runs/{RUN}/send?token={server.control_token}",
        {"text": "hi"},
        {k: v for k, v in good.items() if k != "Cookie"},
    )
    assert status == 403


def test_a_finished_run_refuses_in_one_line_and_no_token_is_printed(server: Served) -> None:
    for action in ACTIONS:
        status, headers, body = server.post(f"/api/runs/{RUN}/{action}", BODIES[action])
        assert status == 200, action
        assert headers["Content-Type"].startswith("application/json")
        error = json.loads(body)["refused"]
        assert error == f"run {RUN} is not running: nothing can be steered any more"
    assert server.post("/api/runs/no-such-run/send", {"text": "x"})[0] == 404
    server.proc.terminate()
    out, err = server.proc.communicate(timeout=30)
    for token in (server.token, server.control_token):
        assert token not in out and token not in err  # beyond the two URL lines, read already


def test_the_control_page_has_a_fresh_style_nonce_and_no_inline_code(server: Served) -> None:
    nonces = []
    for _ in range(2):
        status, headers, body = server.get("/control", {"Cookie": server.control_cookie})
        assert status == 200 and headers["Content-Type"].startswith("text/html")
        page = body.decode()
        (nonce,) = re.findall(r'name="ptysup-style-nonce" content="([^"]+)"', page)
        assert f"style-src 'self' 'nonce-{nonce}'" in headers["Content-Security-Policy"]
        assert "unsafe-inline" not in headers["Content-Security-Policy"]
        assert "<script>" not in page and "<style" not in page and " style=" not in page
        nonces.append(nonce)
    assert nonces[0] != nonces[1] and len(nonces[0]) >= 40


def test_without_control_nothing_steers(tmp_path: Path) -> None:
    make_run(tmp_path, RUN, task="read only", outcome="complete")
    with served(tmp_path) as server:
        assert server.control_url == "" and server.control_token == ""
        status, _, body = server.get("/api/session")
        assert status == 200 and json.loads(body) == {"control": False}
        assert server.get("/control")[0] == 403
        # Even with every header right and a made-up control cookie.
        headers = {**server.control_headers(), "Cookie": f"ptysup_control_{server.port}="}
        assert server.post(f"/api/runs/{RUN}/stop", {}, headers)[0] == 403


def test_a_damaged_finished_run_is_refused_at_once(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, RUN, task="damaged", outcome=None)
    run_dir.default_events.unlink()
    os.mkfifo(run_dir.default_events)  # a log nobody writes: reading it would hang
    with served(tmp_path, "--control") as server:
        status, _, body = server.post(f"/api/runs/{RUN}/send", {"text": "hi"})
        assert status == 200 and "not running" in json.loads(body)["refused"]
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        conn.request("GET", f"/api/runs/{RUN}/terminal", headers={"Cookie": server.control_cookie})
        response = conn.getresponse()
        assert response.status == 200
        assert response.readline() == b"event: gone\n"
        gone = json.loads(response.readline().decode().removeprefix("data: "))
        assert gone["reason"].startswith(f"run {RUN} is not running")
        conn.close()
