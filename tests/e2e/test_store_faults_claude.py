"""The run's files under real faults, with the real Claude Code: a disk that fills and a
run directory that turns read-only mid-run, a SIGKILL that cuts the log's last line."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ptysup.events import counted
from ptysup.testing.fakemodel import RequestKind
from tests.e2e.conftest import AGENT, TWO_PARTS, Rig
from tests.helpers import Tmux, ptysup_argv, read_events, terminal_script, wait_for

pytestmark = pytest.mark.e2e

RESUMED = "has just been resumed"
GATE = "gate"  # the agent's tool call waits for this file in the project
STARTED = "started"  # which it makes first


def _gated(reply: str = "Done.") -> dict[str, Any]:
    """An agent whose first turn runs a command that waits for GATE, so the test acts on
    the disk while the turn is under way; then commands enough to log more than the page
    a tmpfs file has room left in (a full tmpfs still takes what fits in that page)."""
    wait = f"touch {STARTED}; while [ ! -e {GATE} ]; do sleep 0.1; done"
    echo = {"tool": "Bash", "input": {"command": "echo " + "x" * 190, "description": "echo"}}
    return {
        "agent": [
            {
                "match": "the task",
                "steps": [
                    {"tool": "Bash", "input": {"command": wait, "description": "wait"}},
                    *[echo] * 16,
                    {"text": reply},
                ],
            },
            {"reply": reply},
        ],
        "supervisor": [{"reply": "[COMPLETE] done"}],
    }


Mount = Callable[[Path, str], Path]


@pytest.fixture
def tmpfs() -> Iterator[Mount]:
    """Mount a small tmpfs (root only; under PTYSUP_REQUIRE_E2E=1 a failure, else a skip
    without root); every mount is undone afterwards."""
    _root("mounting a tmpfs")
    mounted: list[Path] = []

    def mount(path: Path, size: str) -> Path:
        path.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True
        )
        mounted.append(path)
        return path

    yield mount
    for path in reversed(mounted):
        subprocess.run(["umount", "-l", str(path)], check=False)


class Ext4:
    """A small ext4 image mounted with errors=remount-ro: ext4's own error trigger turns it
    read-only under the open files, as a failing disk does."""

    def __init__(self, image: Path, path: Path) -> None:
        self.image, self.path = image, path
        subprocess.run(["truncate", "-s", "32M", str(image)], check=True)
        subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
        self.mount()

    def mount(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        options = "loop,errors=remount-ro"
        subprocess.run(["mount", "-o", options, str(self.image), str(self.path)], check=True)

    def turn_read_only(self) -> None:
        source = subprocess.run(
            ["findmnt", "-n", "-o", "SOURCE", str(self.path)], capture_output=True, text=True
        ).stdout.strip()
        Path(f"/sys/fs/ext4/{Path(source).name}/trigger_fs_error").write_text("test\n")

    def repair(self) -> None:
        """Unmount, check and mount it again, writable."""
        self.unmount()
        subprocess.run(["e2fsck", "-f", "-y", str(self.image)], capture_output=True)
        self.mount()

    def unmount(self) -> None:
        subprocess.run(["umount", str(self.path)], check=False)


def _root(what: str) -> None:
    if os.geteuid() != 0:
        message = f"{what} needs root"
        if os.environ.get("PTYSUP_REQUIRE_E2E") == "1":
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture
def ext4(tmp_path: Path) -> Iterator[Callable[[Path], Ext4]]:
    """Mount an ext4 image that can be turned read-only (root only, like `tmpfs`)."""
    _root("mounting an ext4 image")
    made: list[Ext4] = []

    def make(path: Path) -> Ext4:
        made.append(Ext4(tmp_path / f"ext4-{len(made)}.img", path))
        return made[-1]

    yield make
    for fs in made:
        fs.unmount()


def _fill(disk: Path) -> None:
    """Write to `disk` until it is full."""
    with (disk / "ballast").open("ab") as f:
        chunk = b"x" * 65536
        try:
            while True:
                f.write(chunk)
                f.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        with_chunks = f.tell()
    assert with_chunks > 0


def _whole_lines(path: Path) -> list[dict[str, Any]]:
    """The log's lines as JSON; a line cut by the fault may stand alone, never joined."""
    lines = path.read_text(encoding="utf-8").split("\n")
    parsed = []
    for i, line in enumerate(lines):
        try:
            parsed.append(json.loads(line))
        except ValueError:
            assert i == len(lines) - 1 or '"event": "run_resume"' not in line, line
    return parsed


def _the_run(r: Rig) -> Path:
    (run_dir,) = (r.project / ".ptysup" / "runs").iterdir()
    return run_dir


def _halted(r: Rig, proc: subprocess.Popen[str]) -> tuple[int, str]:
    """Let the agent's command end, and the run with it."""
    (r.project / GATE).touch()
    try:
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.stderr is not None
    return proc.returncode, proc.stderr.read()


@pytest.mark.parametrize("room", [0, 3 * 4096], ids=["nothing-left", "room-for-run-json"])
def test_a_disk_full_from_the_outset_is_one_line_and_the_run_still_names_its_task(
    tmpfs: Mount, tmp_path: Path, room: int
) -> None:
    # The whole project on a full disk, but for ROOM bytes (pages: run.json and the lock
    # fit, the event log's first line not).
    project = tmpfs(tmp_path / "disk", "1m")
    with (project / "filler").open("wb", buffering=0) as filler, pytest.raises(OSError) as full:
        while True:
            filler.write(b"x" * 4096)
    assert full.value.errno == errno.ENOSPC
    os.truncate(project / "filler", max(0, (project / "filler").stat().st_size - room))
    proc = subprocess.run(
        ptysup_argv("the task", "--agent-cmd", AGENT),
        cwd=project,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    (run,) = (project / ".ptysup" / "runs").iterdir()
    assert proc.returncode == 2, proc.stderr
    # One line, `cannot write PATH: REASON` as every failed write (README, exit codes).
    assert re.fullmatch(
        f"ptysup: cannot write {re.escape(str(run))}(/[a-z.]+)?: No space left on device\n",
        proc.stderr,
    ), proc.stderr
    if room:
        assert (
            proc.stderr == f"ptysup: cannot write {run / 'events.jsonl'}: No space left on device\n"
        )
        listed = subprocess.run(
            ptysup_argv("runs", "--json"), cwd=project, capture_output=True, text=True, timeout=60
        )
        (row,) = json.loads(listed.stdout)
        assert (row["run_id"], row["task"]) == (run.name, "the task")


def test_a_disk_that_fills_mid_run_is_said_at_once_and_resume_counts_the_budget_as_spent(
    rig: Callable[..., Rig], tmpfs: Mount, tmp_path: Path
) -> None:
    r = rig(_gated())
    disk = tmpfs(tmp_path / "disk", "1m")
    log = disk / "events.jsonl"
    proc = r.start(
        "the task", "--agent-cmd", f"{AGENT} --allowedTools Bash", "--log-file", str(log)
    )
    wait_for((r.project / STARTED).exists, 90, "the agent's command to start")
    _fill(disk)
    code, stderr = _halted(r, proc)
    # One line, at once, naming the file and why; the run ended with its own exit code.
    assert code == 74, stderr
    assert stderr.count("\n") == 1
    assert stderr == f"ptysup: cannot write {log}: No space left on device\n"
    wait_for(lambda: not r.leftovers(), 30, "the agent to be ended")
    events = _whole_lines(log)
    assert events[0]["event"] == "run_start" and "run_end" not in [e["event"] for e in events]
    run_dir = _the_run(r)
    assert "No space left on device" in (run_dir / "log_incomplete").read_text()
    (row,) = json.loads(r.ptysup("runs", "--json").stdout)
    assert row["state"] == "crashed" and "No space left" in row["log_incomplete"]
    head, first = r.ptysup("runs").stdout.splitlines()[:2]
    its = head.split().index("ITER")  # the cells before it are one word each here
    assert first.split()[its] == "0+/50"
    # What the log could not hold is unknown: resume counts the budget as spent.
    refused = r.ptysup("resume")
    assert refused.returncode == 2
    assert refused.stderr.startswith(f"ptysup: run {run_dir.name}'s event log is incomplete (")
    assert refused.stderr.endswith("give the resume its budget: --max-iter N\n")
    (disk / "ballast").unlink()
    resumed = r.ptysup("resume", "--max-iter", "5", "--agent-cmd", AGENT)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    events = _whole_lines(log)
    assert [e.get("part") for e in events if e["event"] == "run_resume"] == [2]
    assert (events[-1]["event"], events[-1]["outcome"]) == ("run_end", "complete")


def test_a_run_directory_turned_read_only_ends_the_run_and_marks_it_elsewhere(
    rig: Callable[..., Rig], ext4: Callable[[Path], Ext4], tmp_path: Path
) -> None:
    r = rig(_gated())
    state = tmp_path / "state"
    r.env["XDG_STATE_HOME"] = str(state)
    store = ext4(r.project / ".ptysup")
    proc = r.start("the task", "--agent-cmd", f"{AGENT} --allowedTools Bash")
    wait_for((r.project / STARTED).exists, 90, "the agent's command to start")
    run_dir = _the_run(r)
    log = run_dir / "events.jsonl"
    store.turn_read_only()
    code, stderr = _halted(r, proc)
    assert code == 74, stderr
    # Each file that could not be written is said once: the log, and the run's state.
    assert sorted(stderr.splitlines()) == sorted(
        f"ptysup: cannot write {path}: Read-only file system"
        for path in (log, run_dir / "state.json")
    )
    wait_for(lambda: not r.leftovers(), 30, "the agent to be ended")
    # The run directory takes nothing: the mark went to the person's state directory.
    marker = json.loads((state / "ptysup" / "incomplete" / f"{run_dir.name}.json").read_text())
    assert (marker["run_id"], marker["part"]) == (run_dir.name, 1)
    assert "Read-only file system" in marker["reason"]
    (row,) = json.loads(r.ptysup("runs", "--json").stdout)
    assert row["state"] == "crashed" and "Read-only" in row["log_incomplete"]
    refused = r.ptysup("resume", "--max-cost", "5")
    assert refused.returncode == 2 and "--max-iter N" in refused.stderr
    assert "--max-cost" not in refused.stderr  # given: its own budget for this resume
    store.repair()
    resumed = r.ptysup("resume", "--max-iter", "5", "--agent-cmd", AGENT)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    events = _whole_lines(log)
    assert [e["event"] for e in events].count("run_resume") == 1
    assert (events[-1]["event"], events[-1]["outcome"]) == ("run_end", "complete")
    assert r.model.requests_of(RequestKind.SUPERVISOR)


def _transcribed(r: Rig, text: str) -> bool:
    """Whether Claude Code's transcript of this run's conversation holds `text`."""
    (run_json,) = (r.project / ".ptysup" / "runs").glob("*/run.json")
    session = json.loads(run_json.read_text())["session_id"]
    files = Path(r.env["CLAUDE_CONFIG_DIR"]).glob(f"projects/*/{session}.jsonl")
    return any(text in f.read_text(errors="replace") for f in files)


def _kill_mid_turn(r: Rig, proc: subprocess.Popen[str], prompt: str) -> None:
    """SIGKILL ptysup once the agent works on `prompt`, then end the log with half an
    event, as a kill in the middle of a write leaves it."""
    try:
        r.model.wait_for(lambda q: prompt in q.human_text, timeout=120)
        # Claude Code writes a prompt to its transcript a moment after sending it.
        wait_for(lambda: _transcribed(r, prompt), 30, "the prompt in the transcript")
    except BaseException:
        proc.kill()
        out, err = proc.communicate(timeout=30)
        print(out[-4000:], err[-2000:])  # shown with the failure
        raise
    proc.kill()
    proc.wait(timeout=30)
    wait_for(lambda: not r.leftovers(), 30, "the killed run's agent and recorder to end")
    log = _the_run(r) / "events.jsonl"
    last = log.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1]
    with log.open("ab") as f:  # the first half of one more event, and no newline
        f.write(last[: len(last) // 2])


def test_a_log_cut_by_sigkill_takes_each_resume_on_a_line_of_its_own(
    rig: Callable[..., Rig],
) -> None:
    r = rig(
        {
            "agent": [
                {"match": "finish it", "reply": "Finished."},
                {"match": "slow", "delay": 300, "reply": "never seen"},
            ],
            "supervisor": [
                {"match": RESUMED, "times": 1, "reply": "[CONTINUE] go on slowly"},
                {"match": RESUMED, "reply": "[CONTINUE] finish it"},
                {"reply": "[COMPLETE] done"},
            ],
        }
    )
    _kill_mid_turn(r, r.start("the slow task", "--agent-cmd", AGENT), "the slow task")
    _kill_mid_turn(r, r.start("resume", "--agent-cmd", AGENT), "go on slowly")
    run_dir = _the_run(r)
    part2 = (run_dir / "events.part2.cast").read_bytes()
    resumed = r.ptysup("resume", "--agent-cmd", AGENT)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    lines = (run_dir / "events.jsonl").read_text(encoding="utf-8").split("\n")
    assert lines[-1] == ""
    parsed, cut = [], []
    for line in lines[:-1]:
        try:
            parsed.append(json.loads(line))
        except ValueError:
            cut.append(line)
    assert len(cut) == 2 and all('"run_' not in line for line in cut)  # the two kills' cuts
    starts = [e for e in parsed if e["event"] in ("run_start", "run_resume")]
    assert [e.get("part", 1) for e in starts] == [1, 2, 3]
    assert [e["record"] for e in starts] == [
        str(run_dir / name) for name in ("events.cast", "events.part2.cast", "events.part3.cast")
    ]
    # The second part's recording is as its part left it; the third has one of its own.
    assert (run_dir / "events.part2.cast").read_bytes() == part2
    assert b"finish it" in (run_dir / "events.part3.cast").read_bytes()
    assert (parsed[-1]["event"], parsed[-1]["outcome"]) == ("run_end", "complete")


def _hook_dirs(run_id: str) -> set[Path]:
    return {
        p
        for parent in {tempfile.gettempdir(), "/tmp"}
        for p in Path(parent).glob(f"ptysup-hooks-{run_id}-*")
    }


def test_a_sigkilled_parts_spend_counts_on_resume_and_its_hook_directory_goes(
    rig: Callable[..., Rig],
) -> None:
    r = rig(
        {
            "agent": [
                {
                    "match": "now the slow part",
                    "steps": [
                        {
                            "tool": "Write",
                            "input": {"file_path": "{workdir}/a.txt", "content": "a"},
                        },
                        {"delay": 300, "text": "never seen"},
                    ],
                },
                {"reply": "Started."},
            ],
            "supervisor": [
                {"match": RESUMED, "reply": "[COMPLETE] done"},
                {"reply": "[CONTINUE] now the slow part"},
            ],
        }
    )
    proc = r.start("the task", "--agent-cmd", AGENT)

    def state() -> dict[str, Any]:
        saved: dict[str, Any] = json.loads((_the_run(r) / "state.json").read_text())
        return saved

    def logged() -> float:
        decisions = [
            e for e in read_events(_the_run(r) / "events.jsonl") if e["event"] == "decision"
        ]
        return float(decisions[-1]["total_cost_usd"]) if decisions else float("inf")

    try:
        # The slow turn's first reply is paid for and reported; its second never comes.
        r.model.wait_for(lambda q: "now the slow part" in q.human_text, timeout=120)
        wait_for(lambda: state()["cost_usd"] > logged(), 60, "the turn's spend in state.json")
    finally:
        proc.kill()
        proc.wait(timeout=30)
    wait_for(lambda: not r.leftovers(), 30, "the killed run's agent to end")
    run_id = _the_run(r).name
    spent, before = state()["cost_usd"], logged()
    assert _hook_dirs(run_id), "a SIGKILLed part leaves its hook directory"
    (row,) = json.loads(r.ptysup("runs", "--json").stdout)
    assert row["cost_usd"] == pytest.approx(spent)
    # A budget between what the log says and what was spent is used up.
    refused = r.ptysup("resume", "--max-cost", f"{(spent + before) / 2:.6f}")
    # It says what the killed part spent, the state.json figure, not the log's lower one.
    assert refused.returncode == 2, refused.stderr
    assert f"used ${spent:.4f} of its cost budget" in refused.stderr
    resumed = r.ptysup("resume", "--max-cost", "100", "--agent-cmd", AGENT)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    events = read_events(_the_run(r) / "events.jsonl")
    (resume,) = [e for e in events if e["event"] == "run_resume"]
    assert resume["cost_usd"] == pytest.approx(spent)
    assert events[-1]["cost_usd"] >= spent
    # The CI lines say what the killed part used, and the run's cost adds up from its parts.
    used = counted(resume["iterations"], "iteration")
    assert f"| part 2, used before: {used}," in resumed.stdout
    assert f"${spent:.4f} | run {run_id}" in resumed.stdout
    assert re.search(r"earlier parts \$\d+\.\d{4}\) reason=", resumed.stdout), resumed.stdout
    assert not _hook_dirs(run_id)  # the killed part's, and the resumed part's own


def test_in_a_terminal_a_full_disk_is_said_on_its_own_line_and_the_summary_says_why(
    rig: Callable[..., Rig], tmpfs: Mount, tmp_path: Path
) -> None:
    r = rig(_gated())
    disk = tmpfs(tmp_path / "disk", "1m")
    log = disk / "events.jsonl"
    done, seen = tmp_path / "done", tmp_path / "pane.out"
    argv = ptysup_argv(
        "the task", "--agent-cmd", f"{AGENT} --allowedTools Bash", "--log-file", str(log)
    )
    tmux = Tmux("ptysup-store")
    tmux.start(terminal_script(tmp_path / "run.sh", r.project, r.env, argv, done))
    try:
        tmux.pipe_to(seen)
        wait_for((r.project / STARTED).exists, 90, "the agent's command to start")
        _fill(disk)
        (r.project / GATE).touch()
        wait_for(done.exists, 60, "ptysup to end")
        result = done.read_text()
        screen = tmux.capture()
    finally:
        tmux.kill()
    assert result.startswith("exit=74\n")
    modes = result.split()
    assert "icanon" in modes and "echo" in modes  # the terminal is cooked again
    said = f"ptysup: cannot write {log}: No space left on device"
    # Written while the terminal was raw: the line starts and ends at the left margin.
    out = seen.read_bytes().decode(errors="replace")
    assert f"\r\n{said}\r\n" in out
    # Then the summary, shown on the screen as the run left it, says why.
    assert "ptysup: log_error after 0 iteration(s) (exit 74)" in " ".join(screen.split())
    summary = out[out.index("ptysup: log_error after") :].splitlines()[0]
    assert f": {said.removeprefix('ptysup: ')}; events: {log}" in summary


def test_what_a_sigkilled_run_left_in_the_temp_dir_and_its_folder_goes_on_resume(
    rig: Callable[..., Rig],
) -> None:
    # The supervisor's system prompt folder (ptysup-judge-*) and a state file's temp file
    # stayed for good after a SIGKILL: SIGKILL runs no cleanup.
    r = rig(TWO_PARTS)
    tmp = Path(tempfile.mkdtemp(prefix="i30-", dir="/tmp"))  # short: sockets go there too
    r.env["TMPDIR"] = str(tmp)
    try:
        _, resumed = r.killed_then_resumed_after(
            lambda: _leave_a_temp_file(r, tmp), "do part one", "Claude Code"
        )
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert not list(tmp.glob("ptysup-judge-*")), list(tmp.iterdir())
        assert not list(_the_run(r).glob(".*.tmp"))
    finally:
        subprocess.run(["rm", "-rf", str(tmp)], check=False)


def _leave_a_temp_file(r: Rig, tmp: Path) -> None:
    """What the kill left: the judge's folder, and (planted, as a kill mid-write leaves
    it) a state file's temp file."""
    (judge,) = tmp.glob("ptysup-judge-*")
    assert any(judge.glob("*.md"))  # the system prompt the first decision was given
    (_the_run(r) / ".state.json.4242.tmp").write_text('{"state": "work')
