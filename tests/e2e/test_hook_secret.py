"""ptysup's secret (the hook channel's token, its socket's path) reaches nothing the person
keeps: not the terminal's output, the recording, the CI log, the event log, nor any file
of the agent's or the project's, for every agent with its real pinned binary (issue 30:
Gemini CLI printed `Expanding hook command: … <socket> <token>` at exit)."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ptysup.agents.opencode.testkit import HOME_MARKER
from ptysup.agents.private import agents_dir
from tests.e2e.conftest import Rig
from tests.helpers import read_events, wait_for

pytestmark = pytest.mark.e2e

# Where an agent of the rigs keeps its files.
HOMES = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "QWEN_HOME")
TOKEN = re.compile(r"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])")  # secrets.token_hex(16)


def test_no_output_or_file_of_a_run_holds_the_hook_channels_secret(
    every_agent_rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = every_agent_rig(
        {"agent": [{"reply": "Done."}], "supervisor": [{"reply": "[COMPLETE] done"}]}
    )
    proc = r.popen("say done", "--max-iter", "2")
    secret = _secret_while_running(r)
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, out + err
    socket, token = secret
    places = {"stdout": out, "stderr": err}
    for path in _files(r, tmp_path):
        places[str(path)] = path.read_bytes().decode(errors="replace")
    assert any(p.endswith(".cast") for p in places)  # the recording was looked at
    leaks = [where for where, text in places.items() if token in text or socket in text]
    assert leaks == []


def _secret_while_running(r: Rig) -> tuple[str, str]:
    """The socket's path and the token, read where the run keeps them while it runs: the
    hook channel's address file, or (before it had one) the agent's command line and the
    files in the run's private directory that carry the hook command."""
    found: list[str] = []

    def started() -> bool:
        starts = [e for e in read_events(r.log) if e["event"] == "run_start"]
        agents = [e for e in read_events(r.log) if e["event"] == "agent_start"]
        if not starts or not agents:
            return False
        run_id = starts[0]["run_id"]
        parents = {tempfile.gettempdir(), "/tmp"}
        sockets = [p for d in parents for p in Path(d).glob(f"ptysup-hooks-{run_id}-*/*.sock")]
        if not sockets:
            return False
        texts = [Path(f"/proc/{agents[0]['pid']}/cmdline").read_bytes().decode(errors="replace")]
        keeps = [*sockets[0].parent.glob("address"), *agents_dir(r.env).glob(f"{run_id}-*/*")]
        texts += [p.read_text(errors="replace") for p in keeps if p.is_file()]
        tokens = {t for text in texts for t in TOKEN.findall(text)}
        found[:] = [str(sockets[0]), *tokens]
        return len(tokens) == 1

    wait_for(lambda: r.log.exists() and started(), 60, "the hook channel's socket and token")
    return found[0], found[1]


def _files(r: Rig, tmp_path: Path) -> Iterator[Path]:
    """Every file the run's output, its agent and its project left: the test's temp dir
    (event log, recording, project) and the agent's private home."""
    homes = [r.env[k] for k in (*HOMES, HOME_MARKER) if k in r.env]
    if r.env.get("HOME", "") not in ("", os.environ.get("HOME")):
        homes.append(r.env["HOME"])  # aider's private home
    for top in {tmp_path, *map(Path, homes)}:
        for path in top.rglob("*"):
            if path.is_file() and not path.is_symlink():
                yield path
