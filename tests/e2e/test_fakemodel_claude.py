"""The real Claude Code against the fake model: `claude -p` and one interactive session."""

from __future__ import annotations

import json
import select
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyte
import pytest
from ptyprocess import PtyProcess

from ptysup.supervisor.prompt import SUPERVISOR_MARKER
from ptysup.testing.conversation import RequestKind
from ptysup.testing.fakemodel import FakeModel
from ptysup.testing.kit import AgentEnv
from ptysup.testing.scenario import Scenario

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

SCENARIOS = Path(__file__).resolve().parents[2] / "ptysup" / "testing" / "scenarios"
SUPERVISOR_PROMPT = f"{SUPERVISOR_MARKER}\nTask: implement feature X\nDecide.\n"


def claude_p(env: AgentEnv, cwd: Path, prompt: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        env.argv("-p", *args),
        input=prompt,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=dict(env.env),
        timeout=30,
    )


@pytest.mark.parametrize(
    "answer",
    [
        "[COMPLETE] all tests pass",
        "[CONTINUE] line1\nline2",
        "[CONTINUE] \x1b[31mred\x1b[0m and \x03 control bytes",
    ],
)
def test_supervisor_prompt_gets_the_scripted_answer(
    fake_model: Any, claude_env: Any, project_dir: Path, answer: str
) -> None:
    fm = fake_model({"supervisor": [{"reply": answer}], "agent": [{"reply": "not me"}]})

    result = claude_p(claude_env(fm.url), project_dir, SUPERVISOR_PROMPT)

    assert (result.returncode, result.stdout) == (0, answer + "\n")
    (request,) = fm.requests
    assert request.kind is RequestKind.SUPERVISOR
    # The stdin prompt arrives verbatim, trailing newline included.
    assert request.human_text == SUPERVISOR_PROMPT
    assert request.path == "/v1/messages?beta=true" and request.body["stream"] is True


def test_json_output_reports_result_and_cost(
    fake_model: Any, claude_env: Any, project_dir: Path
) -> None:
    fm = fake_model({"supervisor": [{"reply": "[COMPLETE] done"}]})

    result = claude_p(claude_env(fm.url), project_dir, SUPERVISOR_PROMPT, "--output-format", "json")

    assert result.returncode == 0
    report = json.loads(result.stdout)
    assert report["result"] == "[COMPLETE] done"
    assert report["is_error"] is False
    assert isinstance(report["total_cost_usd"], (int, float))


def test_agent_writes_a_real_file_with_its_write_tool(
    fake_model: Any, claude_env: Any, project_dir: Path
) -> None:
    fm = fake_model(
        {
            "agent": [
                {
                    "match": "create hello",
                    "steps": [
                        {
                            "tool": "Write",
                            "input": {
                                "file_path": "{workdir}/hello.py",
                                "content": "print('hi')\n",
                            },
                        },
                        {"text": "Created hello.py."},
                    ],
                }
            ]
        }
    )

    result = claude_p(
        claude_env(fm.url),
        project_dir,
        "please create hello.py",
        "--permission-mode",
        "acceptEdits",
    )

    assert (result.returncode, result.stdout) == (0, "Created hello.py.\n")
    assert (project_dir / "hello.py").read_text() == "print('hi')\n"
    first, second = fm.requests_of(RequestKind.AGENT)
    assert (first.step_index, second.step_index) == (0, 1)
    results = [
        block
        for message in second.body["messages"]
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    assert len(results) == 1 and not results[0].get("is_error")


def test_overloaded_error_is_an_api_error_on_stdout(
    fake_model: Any, claude_env: Any, project_dir: Path
) -> None:
    fm = fake_model({"supervisor": [{"error": 529}]})

    result = claude_p(claude_env(fm.url), project_dir, SUPERVISOR_PROMPT)

    assert result.returncode == 1
    assert "API Error" in result.stdout
    assert [r.status for r in fm.requests] == [529]


def test_demo_scenario_plays_out_with_claude_p(
    fake_model: Any, claude_env: Any, project_dir: Path
) -> None:
    scenario = Scenario.load(SCENARIOS / "demo.yaml")
    scenario.seed(project_dir)
    fm = fake_model(scenario)
    env = claude_env(fm.url)
    edits = ("--permission-mode", "acceptEdits")

    def verdict() -> str:
        result = claude_p(env, project_dir, SUPERVISOR_PROMPT)
        assert result.returncode == 0
        return result.stdout

    agent = claude_p(env, project_dir, "Please implement feature X.", *edits)
    assert agent.stdout.startswith("Feature X is implemented")
    continuation = verdict()
    assert continuation.startswith("[CONTINUE] python3 -m unittest fails")
    fixed = claude_p(env, project_dir, continuation.removeprefix("[CONTINUE] "), *edits)
    assert fixed.stdout.startswith("Fixed")
    assert verdict().startswith("[COMPLETE]")
    assert [r.rule for r in fm.requests] == [
        "partial",
        "partial",
        "tests-fail",
        "fix",
        "fix",
        "fix",
        "tests-pass",
    ]


# -- the interactive TUI ---------------------------------------------------------------------


class Tui:
    """Claude Code in a PTY, its output fed into a pyte screen."""

    def __init__(self, process: PtyProcess, columns: int, lines: int) -> None:
        self.process = process
        self.screen = pyte.Screen(columns, lines)
        self._stream = pyte.ByteStream(self.screen)

    def pump(self, seconds: float) -> None:
        """Feed whatever the child prints for SECONDS."""
        self.wait_until(lambda: False, seconds, fail=False)

    def wait_until(self, condition: Callable[[], bool], timeout: float, fail: bool = True) -> None:
        """Feed output until CONDITION holds; fail after TIMEOUT seconds."""
        deadline = time.monotonic() + timeout
        while not condition():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if fail:
                    pytest.fail("timed out; screen:\n" + self.display_text())
                return
            ready, _, _ = select.select([self.process.fd], [], [], min(remaining, 0.05))
            if ready:
                try:
                    self._stream.feed(self.process.read(65536))
                except EOFError:
                    pytest.fail("claude exited; screen:\n" + self.display_text())

    def display_text(self) -> str:
        """The screen's lines, right-trimmed, joined by newlines."""
        return "\n".join(line.rstrip() for line in self.screen.display)

    def input_shows(self, text: str) -> bool:
        """TEXT is in the input box (Claude Code puts a no-break space after the `❯`)."""
        return any(line.startswith("❯") and text in line for line in self.screen.display)

    def idle(self) -> bool:
        """An empty `❯` input box under a `────` rule, and a `✳` title."""
        lines = [line.rstrip() for line in self.screen.display]
        box = any(
            line == "❯" and lines[i - 1].startswith("────") for i, line in enumerate(lines) if i
        )
        return box and (self.screen.title or "").startswith("✳")

    def submit(self, text: str) -> None:
        """Type TEXT as a bracketed paste, then Enter in its own write."""
        self.process.write(f"\x1b[200~{text}\x1b[201~".encode())
        # An Enter that reaches Claude Code in the same read as the paste's end is
        # swallowed (seen under CPU load; reproduced by SIGSTOPping claude across both
        # writes), so wait for the echo first, then keep the ~0.1 s gap.
        self.wait_until(lambda: self.input_shows(text), timeout=10)
        self.pump(0.1)
        self.process.write(b"\r")


def test_interactive_tui_accepts_the_fake_sse(
    fake_model: Any, claude_env: Any, project_dir: Path
) -> None:
    fm: FakeModel = fake_model(
        {
            "title": "Create hello",
            "agent": [
                {
                    "match": "create hello",
                    "steps": [
                        {
                            "text": "Writing it.",
                            "tool": "Write",
                            "input": {
                                "file_path": "{workdir}/hello.py",
                                "content": "print('hi')\n",
                            },
                        },
                        {"text": "Created hello.py."},
                    ],
                }
            ],
        }
    )
    env = claude_env(fm.url)
    process = PtyProcess.spawn(
        env.argv("--permission-mode", "acceptEdits"),
        cwd=str(project_dir),
        env={**env.env, "TERM": "xterm-256color"},
        dimensions=(40, 120),
    )
    tui = Tui(process, columns=120, lines=40)
    try:
        tui.wait_until(tui.idle, timeout=20)
        assert [r.kind for r in fm.requests] == []  # only a HEAD / at startup
        tui.submit("please create hello.py")
        tui.wait_until((project_dir / "hello.py").exists, timeout=20)
        tui.wait_until(lambda: tui.idle() and "Created hello.py." in tui.display_text(), timeout=20)
    finally:
        process.terminate(force=True)
    assert (project_dir / "hello.py").read_text() == "print('hi')\n"
    kinds = [r.kind for r in fm.requests]
    assert kinds.count(RequestKind.TITLE) == 1 and kinds.count(RequestKind.AGENT) == 2
    assert tui.screen.title == "✳ Create hello"
