"""The supervisor runner with real child processes: huge, binary and failing answers."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ptysup.events import EventLog
from ptysup.supervisor.decide import ApiErrorNotWaited, Supervisor, SupervisorFailed
from ptysup.supervisor.parse import Action
from ptysup.supervisor.runner import MAX_OUTPUT, SupervisorError, SupervisorRunner
from tests.helpers import EventList, alive, wait_for


def printer(code: str, *, timeout: float = 30, **kw: Any) -> SupervisorRunner:
    """A runner whose supervisor is `python -c CODE` (sys and os imported)."""
    return SupervisorRunner(
        [sys.executable, "-c", f"import os, sys\n{code}"], timeout=timeout, **kw
    )


def test_five_megabytes_of_answer_are_capped_at_max_output() -> None:
    runner = printer("sys.stdout.write('[CONTINUE] ' + 'x' * 5_000_000)")
    start = time.monotonic()
    answer = runner.run("prompt")
    assert time.monotonic() - start < 20  # the pipe was drained, the child never blocked
    assert answer.truncated
    assert answer.out_bytes == 5_000_011
    assert len(answer.text.encode()) == MAX_OUTPUT
    assert answer.text.startswith("[CONTINUE] xxx")


def test_a_cap_that_splits_a_character_keeps_the_text_before_it() -> None:
    answer = printer("sys.stdout.buffer.write(b'[CONTINUE] x' + 'é'.encode() * 600_000)").run("p")
    assert answer.truncated
    assert answer.text.endswith("é")
    assert MAX_OUTPUT - 4 < len(answer.text.encode()) <= MAX_OUTPUT


def test_huge_stderr_with_a_failure_is_one_bounded_error() -> None:
    runner = printer("sys.stderr.write('boom ' * 1_000_000); sys.exit(3)")
    with pytest.raises(SupervisorError) as info:
        runner.run("p")
    message = str(info.value)
    assert message.startswith("exit status 3: boom")
    assert len(message) < 400


def test_a_supervisor_that_crashes_is_reported_by_its_error_not_traceback_line() -> None:
    runner = printer("import os; os.environ['NO_SUCH_SETTING']")
    with pytest.raises(SupervisorError) as info:
        runner.run("p")
    assert str(info.value) == "exit status 1: KeyError: 'NO_SUCH_SETTING'"


@pytest.mark.parametrize(
    ("code", "error"),
    [
        pytest.param(
            "sys.stdout.buffer.write(os.urandom(200_000))", "not UTF-8 text", id="random-bytes"
        ),
        pytest.param(
            "sys.stdout.buffer.write(b'[CONTINUE] \\xff\\xfe run it')",
            "not UTF-8 text",
            id="invalid-utf8-after-a-marker",
        ),
        pytest.param(
            "sys.stdout.write('[CONTINUE] a\\0b')", "not text (NUL byte at offset 12)", id="nul"
        ),
        pytest.param("sys.stdout.write('\\0' * 100)", "not text", id="only-nuls"),
        pytest.param(
            "sys.stdout.write('\\x1b[0m\\r\\n\\x07  ')", "empty answer", id="only-controls"
        ),
        pytest.param("pass", "empty answer", id="nothing"),
        pytest.param(
            "sys.stdout.buffer.write(os.urandom(5000)); sys.stderr.write('bad key'); sys.exit(1)",
            "exit status 1: bad key",
            id="binary-and-a-failure",
        ),
        pytest.param("sys.exit(3)", "exit status 3$", id="a-silent-failure"),
    ],
)
def test_binary_or_empty_answers_are_failed_attempts(code: str, error: str) -> None:
    with pytest.raises(SupervisorError, match=error.replace("(", r"\(").replace(")", r"\)")):
        printer(code).run("p")


@pytest.mark.parametrize("exit_code", [0, 1])
def test_an_api_error_line_is_a_failed_attempt(exit_code: int) -> None:
    runner = printer(
        'print(\'API Error: 529 \\x1b[31m{"type":"overloaded_error"}\\x1b[0m\');'
        f"sys.exit({exit_code})"
    )
    with pytest.raises(SupervisorError) as info:
        runner.run("p")
    message = str(info.value)
    assert "API Error: 529" in message and "overloaded_error" in message
    assert "\x1b" not in message  # it is logged and printed: no escape sequences


def test_a_claude_supervisor_is_read_as_json(tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    claude.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        "assert sys.argv[1:] == ['-p', '--output-format', 'json'], sys.argv\n"
        "sys.stdin.read()\n"
        "print(json.dumps({'result': '[COMPLETE] ok', 'total_cost_usd': 0.25, "
        "'is_error': False}))\n"
    )
    claude.chmod(claude.stat().st_mode | stat.S_IXUSR)
    answer = SupervisorRunner([str(claude), "-p"], timeout=30).run("p")
    assert (answer.text, answer.cost_usd) == ("[COMPLETE] ok", 0.25)


def test_the_prompt_reaches_stdin_intact_even_when_big() -> None:
    prompt = "ünïcode ✓ $(touch x) `id` 'q' \"d\" \\ \x00 " * 50_000  # ~2 MB
    runner = printer("import hashlib; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())")
    assert runner.run(prompt).text.strip() == hashlib.sha256(prompt.encode()).hexdigest()


def test_a_supervisor_that_never_reads_its_prompt_still_answers() -> None:
    answer = printer("print('[COMPLETE] did not read')").run("x" * 5_000_000)
    assert answer.text.strip() == "[COMPLETE] did not read"


def test_a_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    runner = printer(
        "import subprocess, time\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
        "sys.stdout.write('[COMPLETE] too late'); sys.stdout.flush()\n"
        "time.sleep(60)",
        timeout=2,
    )
    with pytest.raises(SupervisorError, match="timed out after 2s"):
        runner.run("p")
    grandchild = int(pid_file.read_text())
    wait_for(lambda: not alive(grandchild), 5, "the supervisor's child to be killed")


def test_a_truncated_answer_is_logged_and_still_decides() -> None:
    sink = EventList()
    log = EventLog([sink])
    runner = printer("sys.stdout.write('[CONTINUE] ' + 'step ' * 1_000_000)")
    decided = Supervisor(runner, log, backoff=()).decide("p", iteration=1)
    assert decided.decision.action is Action.CONTINUE
    warnings = [e.fields["message"] for e in sink.events if e.event == "warning"]
    assert warnings == [f"supervisor printed 5000011 bytes; only the first {MAX_OUTPUT} were read"]


def test_binary_answers_are_retried_then_the_decision_fails() -> None:
    sink = EventList()
    runner = printer("sys.stdout.buffer.write(os.urandom(1000) + b'\\xff')")
    with pytest.raises(SupervisorFailed, match="failed 2 attempts at decision 1"):
        Supervisor(runner, EventLog([sink]), backoff=(0.01,)).decide("p", iteration=1)
    errors = [e.fields for e in sink.events if e.event == "supervisor_error"]
    assert [e["attempt"] for e in errors] == [1, 2]
    assert all("not UTF-8 text" in e["error"] for e in errors)


def test_a_decision_cancelled_by_a_signal_is_not_retried_nor_said_to_be() -> None:
    sink = EventList()
    runner = printer("sys.stdin.read(); import time; time.sleep(30)", warm=False)
    supervisor = Supervisor(runner, EventLog([sink]), backoff=(0.01, 0.01))
    threading.Timer(0.5, runner.cancel).start()  # what ptysup's signal handler does
    with pytest.raises(SupervisorFailed, match=r"^cancelled$"):
        supervisor.decide("p", iteration=1)
    assert [e.event for e in sink.events] == []  # no "supervisor_error ... retry_in_s"


def test_an_answer_with_escape_sequences_decides_on_clean_text() -> None:
    runner = printer(
        "sys.stdout.write('\\x1b[1m[CONTINUE]\\x1b[0m fix \\x1b]0;pwned\\x07it\\r\\n')"
    )
    decided = Supervisor(runner, EventLog(), backoff=()).decide("p", iteration=1)
    assert decided.decision.action is Action.CONTINUE
    assert decided.decision.content == "fix it"


@pytest.fixture(autouse=True)
def _every_supervisor_is_reaped() -> Iterator[None]:
    before = _children()
    yield
    assert _children() <= before  # no child left running, and no zombie either


def _children() -> set[int]:
    """This process's children, zombies included (from /proc)."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == os.getpid():
                        found.add(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_the_supervisor_dies_with_a_killed_ptysup(tmp_path: Path) -> None:
    # ptysup SIGKILLed mid-decision cannot kill the supervisor's group: the kernel must.
    pid_file = tmp_path / "supervisor.pid"
    sleeper = (
        f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    )
    ptysup = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from ptysup.supervisor.runner import SupervisorRunner\n"
            f"SupervisorRunner([sys.executable, '-c', {sleeper!r}], timeout=60).run('p')",
        ],
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        wait_for(lambda: pid_file.exists() and pid_file.read_text(), 20, "the supervisor")
        supervisor = int(pid_file.read_text())
        assert alive(supervisor)
        ptysup.kill()
        ptysup.wait(10)
        wait_for(lambda: not alive(supervisor), 5, "the supervisor to die with ptysup")
    finally:
        ptysup.kill()
        ptysup.wait()


def _pid_printer(**kw: Any) -> SupervisorRunner:
    """A warm-capable runner whose supervisor answers with its own pid and its argv."""
    code = "sys.stdin.read(); print('[CONTINUE]', os.getpid(), *sys.argv[1:])"
    return printer(code, warm=True, **kw)


def _pid_of(answer_text: str) -> int:
    return int(answer_text.split()[1])


# Like Claude Code 2.1.197: no stdin byte within its wait, it gives up and exits 1; after
# one it reads to the end. (Here the wait is 0.5 s, and a file says the first byte came.)
CLAUDE_LIKE = """
import select
if not select.select([0], [], [], 0.5)[0]:
    sys.exit("Warning: no stdin data received in 3s, proceeding without it.")
open(sys.argv[1], "w").close()
print("[CONTINUE] got", repr(sys.stdin.read()))
"""


def test_a_spare_is_given_the_prompts_first_line_at_once_so_it_waits_for_the_rest(
    tmp_path: Path,
) -> None:
    first_byte = tmp_path / "first-byte"
    argv = [sys.executable, "-c", f"import os, sys\n{CLAUDE_LIKE}", str(first_byte)]
    runner = SupervisorRunner(argv, timeout=30, warm=True, prelude="MARK\n")
    try:
        runner.prepare()
        spare = runner.spare_pid
        assert spare is not None
        wait_for(first_byte.exists, 10, "the spare to get the prompt's first line")
        answer = runner.run("MARK\nthe rest of it")
        assert answer.warm and answer.text.strip() == "[CONTINUE] got 'MARK\\nthe rest of it'"
        first_byte.unlink()
        # A prompt that does not start so (a template of one's own) gets a fresh process.
        assert not runner.run("other").warm
    finally:
        runner.close()
    without = SupervisorRunner(argv, timeout=30, warm=True)
    try:
        without.prepare()
        spare = without.spare_pid
        assert spare is not None
        wait_for(lambda: not alive(spare), 10, "the spare to give up on its silent stdin")
        assert not without.run("MARK\nx").warm  # the dead spare is not used
    finally:
        without.close()


def test_a_warm_spare_answers_the_next_decision_and_is_replaced_by_a_new_one() -> None:
    runner = _pid_printer()
    try:
        runner.prepare()
        spare = runner.spare_pid
        assert spare is not None and alive(spare)
        answer = runner.run("p")
        assert answer.warm and _pid_of(answer.text) == spare
        # The next spare is already waiting, a fresh process.
        following = runner.spare_pid
        assert following is not None and following != spare and alive(following)
        assert runner.run("p").warm
    finally:
        runner.close()


def test_without_warm_no_spare_is_started() -> None:
    runner = printer("sys.stdin.read(); print('[CONTINUE] cold')")
    runner.prepare()
    assert runner.spare_pid is None
    assert not runner.run("p").warm and runner.spare_pid is None


def test_a_spare_started_for_another_system_prompt_is_replaced(tmp_path: Path) -> None:
    runner = _pid_printer()
    try:
        runner.prepare("instructions A")
        stale = runner.spare_pid
        assert stale is not None
        answer = runner.run("p", system="instructions B")
        assert not answer.warm and _pid_of(answer.text) != stale
        assert not alive(stale)  # killed, not left waiting
        # The system prompt went in as a private file, named by its content.
        path = Path(answer.text.split()[-1])
        assert answer.text.split()[-2] == "--system-prompt-file"
        assert path.read_text() == "instructions B"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    finally:
        runner.close()
    assert not path.parent.exists()  # close() removes the files


def test_a_spare_older_than_its_maximum_age_is_not_used() -> None:
    now = [100.0]
    runner = _pid_printer(clock=lambda: now[0], max_spare_age=60)
    try:
        runner.prepare()
        old = runner.spare_pid
        now[0] += 61
        answer = runner.run("p")
        assert not answer.warm and _pid_of(answer.text) != old
        assert old is not None and not alive(old)
    finally:
        runner.close()


def test_a_spare_s_time_out_counts_from_the_prompt() -> None:
    now = [0.0]
    runner = _pid_printer(clock=lambda: now[0], timeout=5, max_spare_age=10_000)
    try:
        runner.prepare()
        now[0] = 1000.0  # the spare waited far longer than the time-out
        assert runner.run("p").warm
    finally:
        runner.close()


def test_each_supervisor_gets_a_temp_dir_of_its_own_removed_when_it_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    # Like opencode 1.18, which unpacks a 5.6 MB library into its temp dir at every call.
    code = (
        "d = os.environ['TMPDIR']; open(os.path.join(d, 'lib.so'), 'wb').write(b'x' * 1000);"
        " sys.stdin.read(); print('[CONTINUE]', d)"
    )
    runner = printer(code, warm=True)
    try:
        runner.prepare()
        first = runner.run("p")
        used = Path(first.text.split()[1])
        assert first.warm and used.is_relative_to(tmp_path)
        assert not used.exists()  # gone with the process
        # The next spare waits with a temp dir of its own.
        assert runner.spare_pid is not None
        wait_for(lambda: len(list(tmp_path.rglob("lib.so"))) == 1, 10, "the spare's lib.so")
        assert Path(runner.run("p").text.split()[1]) != used
    finally:
        runner.close()
    assert not list(tmp_path.iterdir())


def test_cancel_and_close_kill_the_spare() -> None:
    runner = _pid_printer()
    runner.prepare()
    spare = runner.spare_pid
    assert spare is not None
    runner.cancel()
    assert runner.spare_pid is None and not alive(spare)
    runner.prepare()  # cancelled: no new spare
    assert runner.spare_pid is None
    runner.close()


def test_a_claude_supervisor_reports_its_tokens(tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    usage = {
        "input_tokens": 120,
        "cache_read_input_tokens": 3000,
        "cache_creation_input_tokens": 50,
        "output_tokens": 12,
        "service_tier": "standard",
    }
    claude.write_text(
        f"#!{sys.executable}\nimport json, sys\nsys.stdin.read()\n"
        f"print(json.dumps({{'result': '[COMPLETE] ok', 'usage': {usage!r}}}))\n"
    )
    claude.chmod(claude.stat().st_mode | stat.S_IXUSR)
    answer = SupervisorRunner([str(claude), "-p"], timeout=30).run("p")
    assert dict(answer.tokens) == {"input": 120, "cached": 3000, "cache_write": 50, "output": 12}


@pytest.mark.parametrize(
    ("answer", "fatal"),
    [
        # as `claude -p --output-format json` 2.1.197 prints them (see waits.is_fatal_error)
        ({"is_error": True, "api_error_status": 401, "result": "Failed to authenticate."}, True),
        ({"is_error": True, "api_error_status": 404, "result": "issue with the model"}, True),
        ({"is_error": True, "api_error_status": 529, "result": "API Error: 529 Overloaded"}, False),
    ],
)
def test_authentication_and_model_errors_end_the_decision_at_once(
    tmp_path: Path, answer: dict[str, Any], fatal: bool
) -> None:
    claude = tmp_path / "claude"
    claude.write_text(
        f"#!{sys.executable}\nimport json, sys\nsys.stdin.read()\n"
        f"print(json.dumps({answer!r}))\nsys.exit(1)\n"
    )
    claude.chmod(claude.stat().st_mode | stat.S_IXUSR)
    sink = EventList()
    runner = SupervisorRunner([str(claude), "-p"], timeout=30)
    with pytest.raises((SupervisorFailed, ApiErrorNotWaited)) as info:
        Supervisor(runner, EventLog([sink]), backoff=(0.01,)).decide("p", iteration=1)
    errors = [e.fields for e in sink.events if e.event == "supervisor_error"]
    assert len(errors) == (1 if fatal else 2)
    assert ("cannot work" in str(info.value)) is fatal
    if fatal:
        assert errors[0]["retry_in_s"] is None
