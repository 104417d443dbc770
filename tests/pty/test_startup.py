"""The agent starts before ptysup loads its heavy parts, so the two overlap.

Everything ptysup imports before the agent's spawn delays the agent's first byte; the
screen model (pyte), the run loop, the supervisor and the recording load afterwards,
while the agent boots (see ptysup.run.app.run and scripts/bench.py `exit`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

# Loaded after the spawn: none of these may be needed to start the agent.
LATER = (
    "pyte",
    "wcwidth",
    "ptysup.run.wiring",
    "ptysup.run.loop",
    "ptysup.terminal.screen",
    "ptysup.terminal.record",
    "ptysup.agents.session",
    "ptysup.supervisor.runner",
    "ptysup.supervisor.decide",
    "ptysup.attach.server",
)

PROBE = textwrap.dedent(
    """\
    import json, os, sys
    from ptysup.terminal import pty_

    def spawn(cls, argv, **kwargs):
        with open(os.environ["PROBE_OUT"], "w") as out:
            json.dump(sorted(sys.modules), out)
        raise pty_.AgentStartError("stopped by the test at the spawn")

    pty_.AgentProcess.spawn = classmethod(spawn)
    from ptysup.cli.commandline import main
    sys.exit(main(sys.argv[1:]))
    """
)


def modules_at_spawn(tmp_path: Path, *agent: str) -> list[str]:
    """The modules loaded when ptysup spawns `agent` (a real ptysup run, stopped there)."""
    out = tmp_path / "modules.json"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            PROBE,
            "task",
            "--agent-cmd",
            " ".join(agent),
            "--supervisor-cmd",
            "true",
            "--log-file",
            str(tmp_path / "events.jsonl"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PROBE_OUT": str(out)},
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert out.exists(), (done.returncode, done.stdout, done.stderr)
    # The run still ends as a failed start does, with run_end last.
    events = [json.loads(x) for x in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert events[-1]["event"] == "run_end"
    assert "stopped by the test" in events[-1]["reason"]
    modules: list[str] = json.loads(out.read_text())
    return modules


def test_a_generic_agent_is_spawned_before_the_heavy_modules_load(tmp_path: Path) -> None:
    loaded = set(modules_at_spawn(tmp_path, "cat"))
    assert "ptysup.run.app" in loaded  # the probe saw the real run, at its spawn
    assert sorted(loaded.intersection(LATER)) == []


def test_claude_code_is_spawned_before_the_heavy_modules_load(tmp_path: Path) -> None:
    claude = tmp_path / "bin" / "claude"  # never run: the spawn is stopped
    claude.parent.mkdir()
    claude.write_text("#!/bin/sh\n")
    claude.chmod(0o755)
    loaded = set(modules_at_spawn(tmp_path, str(claude)))
    assert "ptysup.agents.hookchannel" in loaded  # the Claude profile, with its hook channel
    assert sorted(loaded.intersection(LATER)) == []
