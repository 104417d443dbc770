"""Test helpers for `ptysup serve`: made-up run directories and a running server."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ptysup.store.rundir import RUNS_DIR, RunDir, RunRecord
from tests.helpers import ptysup_argv

START_TIMEOUT = 60.0  # the first line; a loaded machine is slow to start Python


LINGER = 8.0  # seconds the gated turn's final screen stays up before the run ends


def gated_turn(gate: Path) -> dict[str, Any]:
    """A scenario whose agent turn ("watch me") goes on until the test makes GATE: it
    says ALPHA-GATE, its command prints OPENED-42 once the gate opens, then it says
    OMEGA-END (drawn only after the command's result came back); complete. Claude Code
    2.1.332 folds the command's output away ("Ran 1 shell command"): a page test waits for
    OMEGA-END, which every release draws. The supervisor takes LINGER seconds to decide:
    2.1.332 clears its screen as it exits, and OMEGA-END stays drawn that long, live and
    in the recording's replay."""
    wait = f"while [ ! -e {gate} ]; do sleep 0.1; done; echo OPENED-$((40+2))"
    return {
        "agent": [
            {
                "match": "watch me",
                "steps": [
                    {
                        "text": "Waiting at ALPHA-GATE.",
                        "tool": "Bash",
                        "input": {"command": wait, "description": "wait for the gate"},
                    },
                    {"text": "All done at OMEGA-END."},
                ],
            }
        ],
        "supervisor": [{"reply": "[COMPLETE] the gate opened", "delay": LINGER}],
    }


@dataclass
class Served:
    """A running `ptysup serve`: its first printed line, split up."""

    proc: subprocess.Popen[str]
    url: str  # the first line, as printed
    port: int
    token: str
    control_url: str = ""  # the second line, with --control
    control_token: str = ""

    @property
    def base(self) -> str:
        """http://127.0.0.1:PORT"""
        return f"http://127.0.0.1:{self.port}"

    @property
    def cookie(self) -> str:
        """The Cookie header the page's own requests carry."""
        return f"ptysup_token_{self.port}={self.token}"

    def get(
        self, path: str, headers: Mapping[str, str] | None = None, *, with_cookie: bool = True
    ) -> tuple[int, dict[str, str], bytes]:
        """(status, headers, body) of GET path, with the cookie unless told otherwise."""
        want = dict(headers or {})
        if with_cookie:
            want.setdefault("Cookie", self.cookie)
        return http_get(self.base + path, want)

    @property
    def control_cookie(self) -> str:
        """The Cookie header the control page's own requests carry."""
        return f"ptysup_control_{self.port}={self.control_token}"

    def control_headers(self) -> dict[str, str]:
        """Every header a control request from the control page carries."""
        return {
            "Cookie": self.control_cookie,
            "Origin": self.base,
            "X-Ptysup-Control": "1",
            "Content-Type": "application/json",
        }

    def post(
        self, path: str, body: Any, headers: Mapping[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        """(status, headers, body) of POST path with `body` as JSON and exactly `headers`
        (the control page's unless told otherwise)."""
        data = json.dumps(body).encode()
        want = self.control_headers() if headers is None else dict(headers)
        request = urllib.request.Request(self.base + path, data=data, headers=want, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=150) as response:
                return response.status, dict(response.headers.items()), response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers.items()), exc.read()


def http_get(url: str, headers: Mapping[str, str]) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of a GET that follows no redirect."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    request = urllib.request.Request(url, headers=dict(headers))
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, dict(response.headers.items()), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers.items()), exc.read()


@contextmanager
def served(directory: Path, *args: str) -> Iterator[Served]:
    """`ptysup serve DIR ARGS` running until the block ends."""
    proc = subprocess.Popen(
        ptysup_argv("serve", str(directory), *args),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().strip()  # blocks until printed or the process ends
        if not first:
            raise AssertionError(f"ptysup serve printed nothing: {proc.communicate()[1]}")
        parts = urlsplit(first)
        token = parts.query.removeprefix("token=")
        second = proc.stdout.readline().strip() if "--control" in args else ""
        control_token = urlsplit(second).query.removeprefix("token=")
        yield Served(proc, first, int(parts.port or 0), token, second, control_token)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def make_run(
    project: Path,
    run_id: str,
    *,
    task: str,
    decisions: Sequence[tuple[str, str]] = (),
    outcome: str | None = "complete",
    screen: str = "",
    recorded: bool = True,
) -> RunDir:
    """A finished (or, with outcome None, cut-off) run in `project`'s runs directory, with
    its decisions (action, content) and (unless not `recorded`) a recording whose terminal
    shows `screen`."""
    run_dir = RunDir(project / RUNS_DIR / run_id)
    run_dir.path.mkdir(parents=True)
    cast = run_dir.default_events.with_suffix(".cast")
    run_dir.write_record(
        RunRecord(
            run_id=run_id,
            config={},
            session_id=None,
            log_file=str(run_dir.default_events),
            record=str(cast) if recorded else None,
            cwd=str(project),
            started=time.time(),
        )
    )
    t0 = time.time()
    events: list[dict[str, Any]] = [
        {"event": "run_start", "ts": t0, "run_id": run_id, "task": task, "max_iter": 10}
    ]
    for i, (action, content) in enumerate(decisions, 1):
        events.append(
            {
                "event": "decision",
                "ts": t0 + i,
                "iteration": i,
                "max_iter": 10,
                "action": action,
                "content": content,
                "cost_usd": 0.01,
                "total_cost_usd": 0.01 * i,
            }
        )
    if outcome is not None:
        n = len(decisions)
        events.append(
            {
                "event": "run_end",
                "ts": t0 + n + 1,
                "outcome": outcome,
                "iterations": n,
                "cost_usd": 0.01 * n,
                "elapsed_s": n + 1.0,
            }
        )
    run_dir.default_events.write_text("".join(json.dumps(e) + "\n" for e in events))
    if not recorded:
        return run_dir
    lines = [{"version": 2, "width": 80, "height": 24}, [0.1, "o", "\x1b[2J\x1b[H"]]
    lines += [[0.2 + i / 10, "o", row + "\r\n"] for i, row in enumerate(screen.splitlines())]
    cast.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return run_dir
