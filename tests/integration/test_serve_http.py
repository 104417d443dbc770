"""`ptysup serve` over plain HTTP: the token, the Host check, the headers, the routes."""

from __future__ import annotations

import http.client
import json
import re
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ptysup.store.rundir import RUNS_DIR
from tests.helpers import ptysup_argv
from tests.serving import Served, make_run, served

RUN = "20260101-120000-aaaaaa"
ROUTES = (
    "/",
    "/static/app.js",
    "/static/app.css",
    "/static/vendor/asciinema-player.min.js",
    "/static/vendor/LICENSE",
    "/api/runs",
    f"/api/runs/{RUN}",
    f"/api/runs/{RUN}/cast",
    f"/api/runs/{RUN}/live",
    "/no/such/page",
)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Served]:
    make_run(
        tmp_path,
        RUN,
        task="Add a <script>alert(1)</script> cache",
        decisions=[("continue", "run the tests"), ("complete", "all green")],
        screen="hello from the recording",
    )
    with served(tmp_path) as s:
        yield s


def test_the_first_line_is_the_url_with_the_token_bound_to_loopback(server: Served) -> None:
    assert server.url.startswith("http://127.0.0.1:")
    assert server.port > 0  # port 0 (the default) picked a free one
    assert len(server.token) >= 40
    # Bound to 127.0.0.1 only: another loopback address of this machine finds nobody there.
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.2", server.port), timeout=10).close()


def test_without_the_token_every_route_is_refused(server: Served) -> None:
    for path in ROUTES:
        for headers in (
            {},
            {"Cookie": f"ptysup_token_{server.port}=wrong"},
            {"Cookie": f"ptysup_token_{server.port + 1}={server.token}"},  # another port's
        ):
            status, got, body = server.get(path, headers, with_cookie=False)
            assert status == 403, (path, headers, status)
            assert got["Content-Security-Policy"].startswith("default-src 'none'")
            assert b"hello" not in body and b"cache" not in body
        status, _, _ = server.get(f"{path}?token=wrong", with_cookie=False)
        assert status == 403, path


def test_the_printed_url_sets_the_cookie_that_opens_everything(server: Served) -> None:
    status, headers, _ = server.get(server.url.removeprefix(server.base), with_cookie=False)
    assert status == 303 and headers["Location"] == "/"  # the token leaves the address bar
    cookie = headers["Set-Cookie"]
    assert cookie.startswith(f"ptysup_token_{server.port}={server.token};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    status, headers, body = server.get("/", {"Cookie": cookie.split(";")[0]}, with_cookie=False)
    assert status == 200 and b"ptysup runs" in body
    assert headers["Content-Type"].startswith("text/html")
    # The token also opens any other route directly.
    status, _, body = server.get(f"/api/runs?token={server.token}", with_cookie=False)
    assert status == 200 and json.loads(body)[0]["run_id"] == RUN


def test_only_this_servers_own_names_are_answered(server: Served) -> None:
    for host in ("evil.example", f"evil.example:{server.port}", f"127.0.0.1:{server.port + 1}"):
        status, _, body = server.get("/api/runs", {"Host": host})
        assert status == 421, host
        assert b"cache" not in body
    for host in (f"127.0.0.1:{server.port}", f"localhost:{server.port}", f"[::1]:{server.port}"):
        status, _, _ = server.get("/api/runs", {"Host": host})
        assert status == 200, host


def test_every_answer_carries_the_security_headers(server: Served) -> None:
    for path in ROUTES[:-4]:
        status, headers, _ = server.get(path)
        assert status == 200, path
        csp = headers["Content-Security-Policy"]
        for directive in (
            "default-src 'none'",
            "style-src 'self'",
            "connect-src 'self'",
            "img-src 'self' data:",
            "frame-ancestors 'none'",
            "base-uri 'none'",
            "form-action 'none'",
        ):
            assert directive in csp, (path, directive)
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["Referrer-Policy"] == "no-referrer"
        assert headers["Cache-Control"] == "no-store"


def test_the_page_has_no_inline_script_or_style(server: Served) -> None:
    _, _, body = server.get("/")
    html = body.decode()
    assert "<script>" not in html and "<style" not in html and " style=" not in html
    assert re.search(r"\son\w+\s*=", html) is None  # no inline event handlers


def test_the_runs_and_one_runs_details(server: Served) -> None:
    _, headers, body = server.get("/api/runs")
    assert headers["Content-Type"].startswith("application/json")
    (row,) = json.loads(body)
    assert (
        row["state"] == "done"
        and row["outcome"] == "complete"
        and row["task"].startswith("Add a <script>")
    )
    assert row["iterations"] == 2 and row["live"] is False and row["has_recording"] is True
    _, _, body = server.get(f"/api/runs/{RUN}")
    details = json.loads(body)
    assert [(d["action"], d["content"]) for d in details["decisions"]] == [
        ("continue", "run the tests"),
        ("complete", "all green"),
    ]
    assert details["cast_duration_s"] == pytest.approx(0.2)
    status, headers, body = server.get(f"/api/runs/{RUN}/cast")
    assert status == 200 and b"hello from the recording" in body


def raw_get(server: Served, target: str) -> tuple[int, bytes]:
    """A GET of `target` exactly as written (no client normalises the dots away)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.putrequest("GET", target, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", f"127.0.0.1:{server.port}")
        conn.putheader("Cookie", server.cookie)
        conn.endheaders()
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_paths_out_of_the_served_files_are_refused(server: Served, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("top secret")
    for target in (
        "/static/../../../../etc/passwd",
        "/static/%2e%2e/%2e%2e/etc/passwd",
        "/static/vendor/../../serve/cli.py",
        f"/api/runs/{RUN}/../../../secret.txt",
        "/api/runs/..%2f..%2f..%2fsecret.txt",
        "/api/runs/../run.json",
        f"/api/runs/{RUN}/run.json",
        "//etc/passwd",
    ):
        status, body = raw_get(server, target)
        assert status == 404, target
        assert b"root:" not in body and b"secret" not in body


def test_it_is_read_only(server: Served) -> None:
    for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
        # A POST is a control request: the read-only token never makes one (403).
        with_token = 403 if method == "POST" else 405
        for cookie, status in ((server.cookie, with_token), ("", 403)):
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
            conn.request(method, "/api/runs", body=b"{}", headers={"Cookie": cookie})
            response = conn.getresponse()
            assert response.status == status, (method, cookie)
            if status == 405:
                assert response.getheader("Allow") == "GET, HEAD"
            conn.close()


def test_a_live_run_streams_its_recording_until_it_ends(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, RUN, task="live", outcome=None, screen="before you came")
    cast = run_dir.default_events.with_suffix(".cast")
    with served(tmp_path) as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        with run_dir.lock():  # this process is the run, alive while it holds the lock
            conn.request("GET", f"/api/runs/{RUN}/live", headers={"Cookie": server.cookie})
            response = conn.getresponse()
            assert response.status == 200
            assert response.getheader("Content-Type", "").startswith("text/event-stream")
            first = json.loads(response.readline().decode().removeprefix("data: "))
            assert first["cols"] == 80 and first["rows"] == 24
            assert "before you came" in first["init"] and first["time"] == pytest.approx(0.2)
            assert response.readline() == b"\n"
            with cast.open("a") as f:
                f.write(json.dumps([1.5, "o", "and now this"]) + "\n")
                f.write(json.dumps([1.6, "m", "turn_end:idle"]) + "\n")  # not for the player
                f.write(json.dumps([1.7, "r", "100x30"]) + "\n")
            assert json.loads(response.readline().decode()[6:]) == [1.5, "o", "and now this"]
            assert response.readline() == b"\n"
            assert json.loads(response.readline().decode()[6:]) == [1.7, "r", "100x30"]
            assert response.readline() == b"\n"
            with cast.open("a") as f:
                f.write(json.dumps([2.0, "o", "last words"]) + "\n")
        # The run ended (its lock is free): what it wrote last comes, then the end.
        rest = response.read().decode()  # returns once the server ends the stream
        assert rest == 'data: [2.0, "o", "last words"]\n\nevent: done\ndata: {}\n\n'
        conn.close()
        # A finished run's stream is its whole recording at once, then the end.
        _, _, body = server.get(f"/api/runs/{RUN}/live")
        assert "last words" in body.decode() and body.endswith(b"event: done\ndata: {}\n\n")


def test_a_run_without_a_recording_has_no_terminal_to_show(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, RUN, task="quiet", outcome=None, recorded=False)
    with served(tmp_path) as server, run_dir.lock():
        (row,) = json.loads(server.get("/api/runs")[2])
        assert (row["live"], row["recorded"], row["has_recording"]) == (True, False, False)
        for route in ("cast", "live"):
            status, _, body = server.get(f"/api/runs/{RUN}/{route}")
            assert (status, body) == (404, b"this run has no recording\n")


def test_head_answers_like_get_without_a_body(server: Served) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.request("HEAD", "/api/runs", headers={"Cookie": server.cookie})
    response = conn.getresponse()
    assert response.status == 200 and int(response.getheader("Content-Length", "0")) > 0
    assert response.read() == b""
    conn.close()


def test_sigterm_stops_it_with_exit_0_and_a_taken_port_is_exit_2(tmp_path: Path) -> None:
    with served(tmp_path) as server:
        taken = subprocess.run(
            ptysup_argv("serve", str(tmp_path), "--port", str(server.port)),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert taken.returncode == 2 and taken.stdout == ""
        assert taken.stderr.startswith(f"ptysup: serve: cannot listen on 127.0.0.1:{server.port}")
        server.proc.terminate()
        assert server.proc.wait(timeout=30) == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--port", "x"], "--port needs a number"),
        (["--port", "70000"], "--port needs a number"),
        (["--bogus"], "unknown option"),
        (["a", "b"], "unknown argument"),
        (["/no/such/dir"], "no such directory"),
        (["--host"], "--host needs a value"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(args: list[str], message: str) -> None:
    done = subprocess.run(
        ptysup_argv("serve", *args), capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    assert done.stderr.startswith("ptysup: ") and message in done.stderr
    assert done.stderr.count("\n") == 1 and done.stdout == ""


def test_an_empty_directory_serves_an_empty_list(tmp_path: Path) -> None:
    with served(tmp_path) as server:
        status, _, body = server.get("/api/runs")
        assert status == 200 and json.loads(body) == []
    assert not (tmp_path / RUNS_DIR).exists()  # read-only: nothing created


def test_a_connection_kept_alive_serves_request_after_request(server: Served) -> None:
    """A page reuses its connections: each answered request waits for the next one on the
    same connection, and requests sent back to back (pipelined) are answered in order."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    for path in ("/api/runs", f"/api/runs/{RUN}", "/static/app.css"):
        conn.request("GET", path, headers={"Cookie": server.cookie})
        response = conn.getresponse()
        assert response.status == 200 and response.getheader("Connection") != "close"
        response.read()
    conn.close()
    with socket.create_connection(("127.0.0.1", server.port), 30) as sock:
        one = f"GET {{}} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nCookie: {server.cookie}\r\n"
        sock.sendall(
            (
                one.format("/api/runs")
                + "\r\n"
                + one.format("/no/such")
                + "Connection: close\r\n\r\n"
            ).encode()
        )
        received = b""
        while chunk := sock.recv(1 << 16):
            received += chunk
    assert received.startswith(b"HTTP/1.1 200 ") and RUN.encode() in received
    assert b"\r\n\r\nnot found\n" in received and received.count(b"HTTP/1.1 ") == 2
