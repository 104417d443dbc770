"""The ptysup command end to end with a fake agent and a fake supervisor (real PTYs).

The same behaviours are shown against the real Claude Code in tests/e2e; these run in
a second and pin down the generic (hook-less) agent path.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.helpers import FAKES, Run, processes_with, ptysup_argv, read_events, run_ptysup, wait_for

AGENT = f"{sys.executable} {FAKES / 'agent.py'}"
SUPERVISOR = f"{sys.executable} {FAKES / 'supervisor.py'}"


@pytest.fixture
def rig(tmp_path: Path):  # type: ignore[no-untyped-def]
    marker = f"PTYSUP_TEST_RUN={uuid.uuid4().hex}"
    env = dict(os.environ)
    env.update(
        FAKE_AGENT_LOG=str(tmp_path / "agent.jsonl"),
        FAKE_SUPERVISOR_LOG=str(tmp_path / "supervisor.jsonl"),
        FAKE_SUPERVISOR_ANSWERS=str(tmp_path / "answers.json"),
        PTYSUP_TEST_RUN=marker.split("=", 1)[1],
    )

    class Rig:
        path = tmp_path
        environ = env

        def answers(self, *answers: str) -> None:
            (tmp_path / "answers.json").write_text(json.dumps(list(answers)))

        def run(self, *args: str, timeout: float = 60) -> Run:
            base = ["--agent-cmd", AGENT, "--supervisor-cmd", SUPERVISOR, "--idle", "0.5"]
            return run_ptysup(
                [*args, *base],
                cwd=tmp_path,
                env=env,
                log_path=tmp_path / "events.jsonl",
                timeout=timeout,
            )

        def agent_messages(self) -> list[str]:
            p = tmp_path / "agent.jsonl"
            return (
                [json.loads(x)["message"] for x in p.read_text().splitlines()] if p.exists() else []
            )

        def prompts(self) -> list[str]:
            p = tmp_path / "supervisor.jsonl"
            return [json.loads(x)["prompt"] for x in p.read_text().splitlines()]

    yield Rig()
    from tests.helpers import kill_all

    leftovers = processes_with(marker)
    kill_all(leftovers)
    assert not leftovers, "processes of the run outlived ptysup"


def test_complete_run_prints_lines_and_logs_every_event(rig) -> None:  # type: ignore[no-untyped-def]
    rig.answers("[CONTINUE] step two", "[COMPLETE] all done")
    run = rig.run("build it")
    assert run.code == 0, run.stderr
    assert rig.agent_messages() == ["build it", "step two"]
    names = [e["event"] for e in run.events]
    assert names[0] == "run_start" and names[-1] == "run_end"
    for name in ("agent_ready", "inject", "turn_end", "decision"):
        assert name in names
    end = run.events[-1]
    assert (end["outcome"], end["exit_code"], end["iterations"]) == ("complete", 0, 2)
    assert "ptysup decision" in run.stdout and "\x1b" not in run.stdout  # readable, no raw TUI
    assert "Iteration 2/50" in rig.prompts()[1]


def test_json_log_format_prints_json_lines(rig) -> None:  # type: ignore[no-untyped-def]
    rig.answers("[COMPLETE] ok")
    run = rig.run("t", "--log-format", "json")
    printed = [json.loads(line) for line in run.stdout.splitlines()]
    assert printed[-1]["event"] == "run_end" and printed[-1]["exit_code"] == 0


def test_multiline_instruction_arrives_as_one_message(rig) -> None:  # type: ignore[no-untyped-def]
    rig.answers("[CONTINUE] first line\nsecond line\n\nfourth line", "[COMPLETE]")
    run = rig.run("t")
    assert run.code == 0
    assert rig.agent_messages()[1] == "first line\nsecond line\n\nfourth line"


def test_control_bytes_are_removed_before_typing(rig) -> None:  # type: ignore[no-untyped-def]
    rig.answers("[CONTINUE] safe\x03\x1b[31m red\x1b[201~\r\n/exit \x04text", "[COMPLETE]")
    run = rig.run("t")
    assert run.code == 0
    typed = rig.agent_messages()[1]
    assert typed == "safe red\n/exit text"
    injected = [e["text"] for e in run.named("inject")]
    assert injected[1] == typed


def test_budget_exhaustion_exits_3_and_a_generic_agent_gets_no_clear(rig) -> None:  # type: ignore[no-untyped-def]
    rig.answers("[CONTINUE] again")
    # Exactly what was decided, without the wind-down (its own tests: test_winddown.py).
    run = rig.run("t", "--max-iter", "2", "--wind-down", "off")
    assert run.code == 3
    assert len(rig.prompts()) == 2
    # /clear is Claude Code's: a generic agent (a shell would run it) is only ended.
    assert rig.agent_messages() == ["t", "again"]
    assert run.events[-1]["outcome"] == "budget"


def test_abort_exits_1_and_a_generic_agent_gets_no_clear(rig) -> None:  # type: ignore[no-untyped-def]
    rig.answers("[ABORT] going in circles")
    run = rig.run("t")
    assert run.code == 1
    assert "/clear" not in rig.agent_messages()
    assert run.events[-1]["reason"] == "going in circles"


def test_hung_supervisor_is_killed_retried_then_exit_5(rig) -> None:  # type: ignore[no-untyped-def]
    rig.answers("!sleep 30")
    run = rig.run(
        "t", "--supervisor-timeout", "1", "--supervisor-retries", "1", "--supervisor-backoff", "0.1"
    )
    assert run.code == 5
    errors = run.named("supervisor_error")
    assert len(errors) == 2 and "timed out" in errors[0]["error"]
    assert run.events[-1]["outcome"] == "supervisor_failed"


def test_failing_supervisor_exit_status_is_retried(rig) -> None:  # type: ignore[no-untyped-def]
    rig.answers("!exit 1", "[COMPLETE] second try")
    run = rig.run("t", "--supervisor-backoff", "0.1")
    assert run.code == 0
    assert "exit status 1" in run.named("supervisor_error")[0]["error"]
    assert run.named("decision")[0]["attempts"] == 2


def test_agent_crash_exits_4(rig) -> None:  # type: ignore[no-untyped-def]
    rig.answers("[CONTINUE] crash")
    run = rig.run("t")
    assert run.code == 4
    assert run.events[-1]["outcome"] == "agent_exited"


def test_missing_agent_command_is_one_line_and_exit_4(tmp_path: Path) -> None:
    proc = subprocess.run(
        ptysup_argv(
            "t", "--agent-cmd", "no-such-agent-xyz", "--log-file", str(tmp_path / "e.jsonl")
        ),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 4
    assert proc.stderr.strip() == "ptysup: agent command not found: no-such-agent-xyz"
    assert read_events(tmp_path / "e.jsonl")[-1]["event"] == "run_end"


def test_unwritable_log_file_is_a_usage_error(tmp_path: Path) -> None:
    proc = subprocess.run(
        ptysup_argv("t", "--log-file", "/proc/nope/events.jsonl"),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("ptysup: cannot write --log-file /proc/nope/events.jsonl: ")
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signal_ends_the_run_with_128_plus_n(rig, signum: int) -> None:  # type: ignore[no-untyped-def]
    rig.answers("[CONTINUE] hang")
    log = rig.path / "events.jsonl"
    proc = subprocess.Popen(
        ptysup_argv(
            "t",
            "--agent-cmd",
            AGENT,
            "--supervisor-cmd",
            SUPERVISOR,
            "--idle",
            "0.5",
            "--log-file",
            str(log),
        ),
        cwd=rig.path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=rig.environ,
    )
    wait_for(lambda: log.exists() and '"decision"' in log.read_text(), 30, "a decision")
    proc.send_signal(signum)
    proc.wait(timeout=15)
    assert proc.returncode == 128 + signum
    events = read_events(log)
    assert events[-1]["event"] == "run_end"
    assert events[-1]["exit_code"] == 128 + signum
    assert events[-1]["outcome"] == "signal"


ANTHROPIC_KEY = "sk-ant-api03-" + "Q" * 80 + "-abcdAA"
GITHUB_TOKEN = "ghp_" + "x1Y2" * 9


def test_secrets_never_reach_logs_lines_or_prompts(rig) -> None:  # type: ignore[no-untyped-def]
    rig.answers(f"[CONTINUE] the token is {GITHUB_TOKEN} and the password hunter2", "[COMPLETE]")
    run = rig.run(f"deploy with {ANTHROPIC_KEY}", "--redact", "hunter[0-9]")
    assert run.code == 0
    # The agent itself gets the real text: only what ptysup records and forwards is redacted.
    assert rig.agent_messages()[0] == f"deploy with {ANTHROPIC_KEY}"
    everything = run.log_path.read_text() + run.stdout + "".join(rig.prompts())
    for secret in (ANTHROPIC_KEY, GITHUB_TOKEN, "hunter2"):
        assert secret not in everything
    assert "[REDACTED:" in run.log_path.read_text() and "[REDACTED:" in rig.prompts()[0]
    assert run.log_path.stat().st_mode & 0o777 == 0o600


def test_invalid_redact_regex_is_a_usage_error(rig) -> None:  # type: ignore[no-untyped-def]
    run = rig.run("t", "--redact", "(unclosed")
    assert run.code == 2
    assert run.stderr.startswith("ptysup: --redact: invalid redaction regex")


def test_full_disk_for_the_event_log_is_a_usage_error_before_the_agent_starts(
    tmp_path: Path,
) -> None:
    proc = subprocess.run(
        ptysup_argv("t", "--log-file", "/dev/full", "--agent-cmd", AGENT),
        capture_output=True,
        text=True,
        timeout=30,
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    # Refused by the check of every output path before anything starts, naming the option.
    assert proc.stderr == "ptysup: cannot write --log-file /dev/full: No space left on device\n"


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (
            ["--supervisor-cmd", "no-such-supervisor-xyz -p"],
            5,
            "ptysup: supervisor command not found: no-such-supervisor-xyz",
        ),
        (
            ["--verify", "no-such-check-xyz --all"],
            2,
            "ptysup: verify command not found: no-such-check-xyz",
        ),
    ],
)
def test_missing_commands_are_one_line_before_the_agent_starts(
    tmp_path: Path, args: list[str], code: int, message: str
) -> None:
    log = tmp_path / "e.jsonl"
    proc = subprocess.run(
        ptysup_argv("t", "--agent-cmd", AGENT, "--log-file", str(log), *args),
        capture_output=True,
        text=True,
        timeout=30,
        cwd=tmp_path,
    )
    assert proc.returncode == code
    assert proc.stderr.strip() == message
    events = read_events(log)
    assert [e["event"] for e in events] == ["run_start", "run_end"]  # no agent_start
    assert events[-1]["exit_code"] == code


def test_a_plan_and_its_resume_with_an_agent_without_hooks(rig) -> None:  # type: ignore[no-untyped-def]
    rig.answers("[COMPLETE] a done", "[CONTINUE] more on b", "[COMPLETE] b done")
    (rig.path / "plan.yaml").write_text(
        "steps:\n  - id: a\n    do: first part\n    verify: 'true'\n"
        "  - id: b\n    do: second part\n"
    )
    # Exactly the plan's steps, without the wind-down (its own tests: test_winddown.py).
    first = rig.run("--plan", "plan.yaml", "--max-iter", "2", "--wind-down", "off")
    assert first.code == 3, first.stderr
    typed = ["Step 1/2 (a): first part", "Step 2/2 (b): second part"]
    assert rig.agent_messages() == typed  # the budget ran out at b's first decision (no /clear)
    base = ["--agent-cmd", AGENT, "--supervisor-cmd", SUPERVISOR, "--idle", "0.5"]
    resumed = subprocess.run(
        ptysup_argv("resume", "--max-iter", "4", *base),
        cwd=rig.path,
        env=rig.environ,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert resumed.returncode == 0, resumed.stderr
    events = read_events(rig.path / "events.jsonl")
    assert [e["event"] for e in events].count("run_end") == 2  # one per part, the last wins
    assert (events[-1]["outcome"], events[-1]["iterations"]) == ("complete", 3)
    # A generic agent is started again; the supervisor decides at once, nothing retyped.
    assert rig.agent_messages() == typed
    assert "has just been resumed" in rig.prompts()[-1] and "Iteration 3/4" in rig.prompts()[-1]
    # Its supervisor is told that it remembers nothing: no conversation was reopened.
    assert "the agent was started again and started afresh" in rig.prompts()[-1]
    assert "Current step (b): second part" in rig.prompts()[-1]


TRY_AGAIN = "[CONTINUE] Please try again to find config.yaml"


def test_a_generic_agent_answering_the_same_again_escalates_with_exit_7(rig) -> None:  # type: ignore[no-untyped-def]
    rig.answers(TRY_AGAIN)
    run = rig.run("find config.yaml", "--max-iter", "30")
    assert run.code == 7, run.stderr
    # The task, then the same instruction three times with the same answer (its screen
    # lines; the progress dots are as many as the machine's speed makes them).
    assert (
        rig.agent_messages() == ["find config.yaml"] + ["Please try again to find config.yaml"] * 3
    )
    prompts = rig.prompts()
    assert len(prompts) == 3
    assert not any("Repeating:" in p for p in prompts[:2])
    assert "the same instruction got the same answer 2 times in a row" in prompts[2]
    assert "done: Please try again to find config.yaml" in prompts[2]
    end = run.events[-1]
    assert (end["outcome"], end["iterations"]) == ("escalated", 3)
    assert end["reason"].startswith("spinning: the same instruction got the same answer 3 times")
    assert [e["count"] for e in run.named("repeat")] == [2, 3]
    assert "repeat" in run.stdout and "2x the same round (of 3 allowed)" in run.stdout
    (escalation,) = run.named("escalation")
    assert (escalation["at"], escalation["waiting"]) == ("repeat", False)


@pytest.mark.parametrize(("grows", "code"), [(False, 7), (True, 3)])
def test_files_changing_between_rounds_is_progress_not_spinning(  # type: ignore[no-untyped-def]
    rig, grows: bool, code: int
) -> None:
    # A supervisor that keeps answering [COMPLETE] against the same failing --verify; the
    # folder is a git repository, and in one case a file changes at every round.
    subprocess.run(("git", "init", "-q"), cwd=rig.path, check=True)
    (rig.path / ".gitignore").write_text("*.jsonl\nanswers.json\n.ptysup/\n")
    change = "date +%s%N >> progress.txt; " if grows else ""
    rig.answers("[COMPLETE] done")
    run = rig.run("t", "--max-iter", "5", "--verify", f"sh -c '{change}exit 1'")
    assert run.code == code, run.stderr
    repeats = run.named("repeat")
    if grows:
        assert not repeats and run.events[-1]["outcome"] == "budget"
    else:
        assert repeats[-1]["what"] == ["instruction", "answer", "files", "verify", "decision"]
        assert "the failing --verify" in run.events[-1]["reason"]


WIND = "(ptysup: this run is near the end of its budget"


def test_a_resume_after_the_wind_down_does_not_repeat_it_and_a_raised_budget_brings_it_again(  # type: ignore[no-untyped-def]
    rig,
) -> None:
    rig.answers(*(f"[CONTINUE] step {n}" for n in range(1, 20)))  # no two rounds alike
    first = rig.run("t", "--max-iter", "4")
    assert first.code == 3, first.stderr
    assert [WIND in m for m in rig.agent_messages()] == [False, False, False, True]
    base = ["--agent-cmd", AGENT, "--supervisor-cmd", SUPERVISOR, "--idle", "0.5"]

    def resume(max_iter: str) -> list[dict[str, object]]:
        done = subprocess.run(
            ptysup_argv("resume", "--max-iter", max_iter, *base),
            cwd=rig.path,
            env=rig.environ,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=90,
        )
        assert done.returncode == 3, done.stderr
        events = read_events(rig.path / "events.jsonl")
        return events[max(i for i, e in enumerate(events) if e["event"] == "run_resume") :]

    # One more decision: still the last stretch, and the log says the agent was told.
    part = resume("5")
    assert part[0]["wound_down"] is True
    assert not [e for e in part if e["event"] in ("wind_down", "wind_down_lifted")]
    assert sum(WIND in m for m in rig.agent_messages()) == 1
    assert "has been told to wind down" in rig.prompts()[-1]
    # Raised far above: out of the last stretch (the supervisor is told), then in again.
    part = resume("12")
    lifted = [e for e in part if e["event"] == "wind_down_lifted"]
    assert [(e["iteration"], e["max_iter"]) for e in lifted] == [(6, 12)]
    assert [e["iteration"] for e in part if e["event"] == "wind_down"] == [10]
    assert sum(WIND in m for m in rig.agent_messages()) == 2
    assert "The budgets were raised after the agent was told" in rig.prompts()[5]
