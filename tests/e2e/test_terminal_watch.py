"""What a person watching sees: a ticking clock, a view that survives a shrink, and what
a line-reading agent is typed."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from ptysup.testing.fakemodel import RequestKind
from ptysup.textwidth import columns
from tests.e2e.conftest import AGENT, Rig, Screen
from tests.helpers import Tmux, ptysup_argv, read_events, run_ptysup, terminal_script, wait_for

pytestmark = pytest.mark.e2e


def in_tmux(r: Rig, tmp_path: Path, agent: str, task: str, *args: str) -> tuple[Tmux, Path]:
    done = tmp_path / "done"
    argv = ptysup_argv(task, "--agent-cmd", agent, "--log-file", str(r.log), *args)
    tmux = Tmux("ptysup-watch")
    tmux.start(terminal_script(tmp_path / "run.sh", r.project, r.env, argv, done))
    return tmux, done


def status_row(tmux: Tmux) -> str:
    lines = tmux.capture().rstrip("\n").splitlines()
    return lines[-1] if lines else ""


def test_the_status_clock_ticks_while_the_agent_works(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig({"agent": [{"delay": 8, "reply": "Done."}], "supervisor": [{"reply": "[COMPLETE] ok"}]})
    tmux, done = in_tmux(r, tmp_path, AGENT, "take your time")
    clocks: set[str] = set()
    try:

        def three_ticks() -> bool:
            m = re.match(r"ptysup 0/50 · (\d+s) · agent working", status_row(tmux))
            if m:
                clocks.add(m[1])
            return len(clocks) >= 3

        wait_for(three_ticks, 60, "the clock to advance three times during the turn")
        wait_for(done.exists, 90, "ptysup to finish")
    finally:
        tmux.kill()
    assert done.read_text().startswith("exit=0")


def test_after_a_shrink_a_line_agent_still_scrolls_above_the_status_row(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig({"agent": [{"reply": "unused"}], "supervisor": [{"delay": 40, "reply": "[COMPLETE]"}]})
    tmux, done = in_tmux(r, tmp_path, "bash --norc --noprofile -i", "seq 1 60", "--idle", "1")
    try:
        wait_for(
            lambda: r.log.exists() and '"turn_end"' in r.log.read_text(), 60, "bash's turn end"
        )
        for n, (cols, rows) in enumerate([(120, 30), (100, 20), (100, 24), (80, 12)]):
            tmux.resize(cols, rows)
            wait_for(
                lambda rows=rows: len(tmux.capture().rstrip("\n").splitlines()) <= rows,
                10,
                f"the pane at {rows} rows",
            )
            tmux.send_keys("-l", f"seq {n * 100 + 1} {n * 100 + 40}; echo after-$(({n}*7))")
            tmux.send_keys("Enter")

            def shown(n: int = n, rows: int = rows) -> bool:
                lines = tmux.capture().rstrip("\n").splitlines()
                return (
                    len(lines) == rows
                    and lines[-1].startswith("ptysup ")
                    and f"after-{n * 7}" in lines[-3]
                    and lines[-4] == f"{n * 100 + 40}"
                    and lines[-2].startswith("bash")
                )

            try:
                wait_for(shown, 15, f"the output scrolled above the status row at {rows} rows")
            except AssertionError as exc:
                raise AssertionError(f"{exc}:\n{tmux.capture()}") from None
        wait_for(done.exists, 90, "ptysup to finish")
    finally:
        tmux.kill()
    assert done.read_text().startswith("exit=0"), r.log.read_text()


def test_a_flood_under_a_generic_agent_ends_its_turn_only_once_it_stopped(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    # bash printing 3 million lines into tmux: the screen model lags the relay by seconds
    # (it starved for 2 s at a time here), so a quiet clock timed on its updates ended the
    # turn 1-7 s in, with the supervisor shown a screen thousands of lines behind.
    r = rig({"agent": [{"reply": "unused"}], "supervisor": [{"reply": "[COMPLETE] ok"}]})
    r.env["PS1"] = "shell$ "
    task = "seq 1 3000000; echo flood-done"
    tmux, done = in_tmux(r, tmp_path, "bash --norc --noprofile -i", task, "--idle", "1")
    try:
        wait_for(done.exists, 300, "ptysup to finish")
    finally:
        tmux.kill()
    assert done.read_text().startswith("exit=0"), r.log.read_text()
    [request] = r.model.requests_of(RequestKind.SUPERVISOR)
    screen = request.human_text.split("The agent's screen now:\n", 1)[1]
    assert "2999999\n3000000\nflood-done\nshell$" in screen, screen[-500:]
    warnings = [e for e in read_events(r.log) if e["event"] == "warning"]
    assert warnings == [], warnings


# A line agent: prints its first lines at once, the rest slowly once `go` exists, and
# exits once `end` does.
LINES = """\
seq 1 {first}
while [ ! -e go ]; do sleep 0.05; done
i={first}; while [ $i -lt {last} ]; do i=$((i+1)); echo $i; sleep 0.05; done
while [ ! -e end ]; do sleep 0.05; done
"""


@pytest.mark.parametrize(
    "first",
    [3, 14, 40],
    ids=["nothing-scrolled", "some-scrolled-back-in", "all-new-rows-from-the-scrollback"],
)
def test_after_a_grow_no_old_status_text_is_left_in_the_agents_lines(
    rig: Callable[..., Rig], tmp_path: Path, first: int
) -> None:
    # tmux fills a grown window from its scrollback first, moving the old status row down
    # with the agent's lines (all of it in the last case, none in the first), and adds
    # blank rows for the rest. A 12-row window grown to 20: the agent's next lines scroll
    # over the row where the old status line was left, and on into the scrollback.
    last = first + 25
    r = rig({"agent": [{"reply": "unused"}], "supervisor": [{"delay": 40, "reply": "[COMPLETE]"}]})
    (r.project / "lines.sh").write_text(LINES.format(first=first, last=last))
    argv = ptysup_argv("t", "--agent-cmd", "sh lines.sh", "--idle", "30", "--log-file", str(r.log))
    tmux = Tmux("ptysup-grow", cols=80, rows=12)
    done = tmp_path / "done"
    tmux.start(terminal_script(tmp_path / "run.sh", r.project, r.env, argv, done))
    try:
        wait_for(lambda: f"\n{first}\n" in tmux.capture(), 30, f"the agent's first {first} lines")
        wait_for(lambda: status_row(tmux).startswith("ptysup "), 30, "the status row")
        tmux.resize(80, 20)
        wait_for(lambda: len(tmux.capture().rstrip("\n").splitlines()) == 20, 10, "20 rows")
        wait_for(lambda: status_row(tmux).startswith("ptysup "), 10, "the status row, moved")
        (r.project / "go").touch()
        wait_for(lambda: f"\n{last}\n" in tmux.capture(), 30, "the agent's last line")
        screen = tmux.capture(history=True)
        (r.project / "end").touch()
        wait_for(done.exists, 30, "ptysup to finish")
    finally:
        tmux.kill()
    *agent_rows, status = screen.rstrip("\n").splitlines()
    assert status.startswith("ptysup "), screen
    assert all(row == "" or row.isdigit() for row in agent_rows), screen
    numbers = [int(row) for row in agent_rows if row]
    assert numbers == list(range(1, last + 1)), screen


def test_after_a_grow_claude_codes_next_reply_has_no_old_status_text_in_it(
    screen: Callable[..., Screen],
) -> None:
    # Claude Code's first reply stays near the top of a 40-row window; the window grows
    # while the supervisor decides, and the next reply runs down over the old status row.
    items = "\n".join(f"- item {n}" for n in range(1, 46))  # a list: one line each
    s = screen(
        {
            "agent": [{"times": 1, "reply": "Ready."}, {"reply": items}],
            "supervisor": [
                {"times": 1, "delay": 3, "reply": "[CONTINUE] list the items"},
                {"reply": "[COMPLETE] listed"},
            ],
        },
        "get ready",
    )
    s.wait_event("turn_end")
    s.tmux.resize(120, 50)
    wait_for(lambda: len(s.text().rstrip("\n").splitlines()) == 50, 10, "50 rows")
    wait_for(lambda: s.status().startswith("ptysup "), 10, "the status row on the new last row")
    try:
        wait_for(lambda: "item 45" in s.text(), 60, "the second reply")
    except AssertionError as exc:
        raise AssertionError(f"{exc}:\n{s.text()}") from None
    shown = s.tmux.capture(history=True).rstrip("\n").splitlines()
    assert s.finish().startswith("exit=0"), s.events()
    stale = [row for row in shown[:-1] if "Ctrl-] keys" in row or "ptysup 1/" in row]
    assert not stale, "\n".join(shown)


def test_the_status_row_and_region_are_drawn_again_right_after_a_clear_reset_or_screen_switch(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    # What the terminal got, byte for byte: after each of the agent's erasing sequences
    # ptysup sets its region again (with the row) before the agent's next output, half a
    # second later. Without the repair only a flood's 2 s redraw would, so most of the
    # five would go without.
    supervisor = [
        {"match": "erased-done", "delay": 5, "reply": "[COMPLETE] ok"},  # time to look
        {"delay": 40, "reply": "[COMPLETE] too early"},  # the person's Enter cancels it
    ]
    r = rig({"agent": [{"reply": "unused"}], "supervisor": supervisor})
    (r.project / "erase.sh").write_text(
        "echo ready; read go\n"
        "printf 'a\\033[?1049h'; sleep 0.5\n"  # to the alternate screen
        "printf 'b\\033[H\\033[2J'; sleep 0.5\n"  # a clear
        "printf 'c\\033[?1049l'; sleep 0.5\n"  # back
        "printf 'e\\033#8'; sleep 0.5\n"  # the alignment test: E on every row
        "printf 'd\\033c'; seq 1 60; sleep 0.5\n"  # a hard reset, lines with it
        "echo erased-done\n"
    )
    raw = tmp_path / "terminal.raw"
    tmux, done = in_tmux(r, tmp_path, "bash --norc --noprofile -i", "sh erase.sh", "--idle", "1")
    try:
        wait_for(lambda: "ready" in tmux.capture(), 60, "the script to wait for Enter")
        tmux.pipe_to(raw)
        tmux.send_keys("Enter")
        # After the reset the lines still scroll above the status row, none lost on it.
        wait_for(
            lambda: tmux.capture().rstrip("\n").splitlines()[-4:-2] == ["60", "erased-done"],
            30,
            "the script's last lines above the prompt and the status row",
        )
        assert status_row(tmux).startswith("ptysup "), tmux.capture()
        wait_for(done.exists, 90, "ptysup to finish")
    finally:
        tmux.kill()
    assert done.read_text().startswith("exit=0"), r.log.read_text()
    data = raw.read_bytes()
    region = b"\x1b7\x1b[1;%dr\x1b8" % (tmux.rows - 1)
    steps = [
        b"a\x1b[?1049h",
        b"b\x1b[H\x1b[2J",
        b"c\x1b[?1049l",
        b"e\x1b#8",
        b"d\x1bc",
        b"erased-done",
    ]
    for erasing, following in itertools.pairwise(steps):
        start = data.index(erasing) + len(erasing)
        assert region in data[start : data.index(following, start)], (erasing, data[-2000:])


def test_a_line_reading_agent_gets_plain_text_one_line_per_message(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig(
        {
            "agent": [{"reply": "unused"}],
            "supervisor": [
                {"times": 1, "reply": "[CONTINUE] line one\n\n  line two"},
                {"reply": "[COMPLETE] ok"},
            ],
        }
    )
    got = r.project / "got.txt"
    run = run_ptysup(
        ["Get ready", "--agent-cmd", f"sh -c 'cat -v > {got}'", "--idle", "1"],
        cwd=r.project,
        env=r.env,
        log_path=r.log,
    )
    assert run.code == 0, run.stderr
    # cat -v would show bracketed-paste markers as ^[[200~ ... ^[[201~.
    assert got.read_text() == "Get ready\nline one line two\n"
    typed = [e["text"] for e in read_events(r.log) if e["event"] == "inject"]
    assert typed == ["Get ready", "line one\n\n  line two"]


def test_after_a_pager_quits_the_supervisor_sees_the_shell_again(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig(
        {
            "agent": [{"reply": "unused"}],
            "supervisor": [{"times": 1, "reply": "[CONTINUE] q"}, {"reply": "[COMPLETE] ok"}],
        }
    )
    (r.project / "notes.txt").write_text("".join(f"notes line {n}\n" for n in range(1, 200)))
    run = run_ptysup(
        ["less notes.txt", "--agent-cmd", "bash --norc --noprofile -i", "--idle", "1"],
        cwd=r.project,
        env={**r.env, "PS1": "shell$ "},
        log_path=r.log,
    )
    assert run.code == 0, run.stderr
    first, second = (q.human_text for q in r.model.requests_of(RequestKind.SUPERVISOR))
    assert "notes line 30" in first  # the pager's page
    screen = second.split("The agent's screen now:\n", 1)[1]
    assert "notes line" not in screen  # the page went with the alternate screen
    assert "shell$ less notes.txt" in screen


def test_sequences_the_model_rejected_are_one_warning_with_their_count(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig({"agent": [{"reply": "unused"}], "supervisor": [{"reply": "[COMPLETE] ok"}]})
    # pyte raises on `CSI 1;2 A` (one parameter too many): three of them, apart.
    script = "printf 'a\\033[1;2Ab\\n'; sleep 0.5; printf 'c\\033[1;2Ad\\033[1;2Ae\\n'; exec cat"
    agent = f'sh -c "{script}"'
    run = run_ptysup(
        ["hello", "--agent-cmd", agent, "--idle", "1"], cwd=r.project, env=r.env, log_path=r.log
    )
    assert run.code == 0, run.stderr
    warnings = [e["message"] for e in run.named("warning") if "screen model" in e["message"]]
    assert len(warnings) == 1 and "could not apply 3 escape sequence(s)" in warnings[0]


def test_a_decision_in_wide_characters_stays_on_the_status_row(
    screen: Callable[..., Screen],
) -> None:
    # Each of these characters takes two columns: cut by characters, the status text is
    # twice as wide as the row, wraps past the last column and scrolls the screen.
    wide = "テストが失敗しています。関数を直してください。" * 4
    s = screen(
        {
            "agent": [{"times": 1, "reply": "First try."}, {"delay": 6, "reply": "Fixed."}],
            "supervisor": [
                {"times": 1, "reply": f"[CONTINUE] {wide}"},
                {"reply": "[COMPLETE] fixed"},
            ],
        },
        "fix it",
    )
    s.wait_event("decision", action="continue")
    wait_for(lambda: "last: continue: テスト" in s.status(), 10, "the decision on the status row")
    # The instruction typed, the second turn runs: the status row is drawn again each tick.
    wait_for(lambda: len(s.events("inject")) == 2, 30, "the instruction typed")
    wait_for(lambda: "agent working" in s.status(), 30, "the second turn")
    shown = s.tmux.capture(history=True).rstrip("\n").splitlines()
    assert s.finish().startswith("exit=0"), s.events()
    status = shown[-1]
    assert status.startswith("ptysup 1/50 · "), "\n".join(shown)
    assert status.endswith("…") and columns(status) <= s.tmux.cols, status
    stale = [row for row in shown[:-1] if "ptysup 1/" in row or "直してください。…" in row]
    assert not stale, "\n".join(shown)


def test_the_last_line_says_why_the_run_ended(screen: Callable[..., Screen]) -> None:
    # The status row that showed the decision is gone when the run ends: the summary line
    # is all the person has left, and it says why (one line, redacted).
    key = "sk-ant-api03-" + "Zq4Wx8Ec2Rv6Tb1Yn5Um9Ik3Ol7Pa0Sd" * 3
    s = screen(
        {
            "agent": [{"reply": "I gave up."}],
            "supervisor": [{"reply": f"[ABORT] the agent gave up\nand printed {key}"}],
        },
        "try it",
    )
    assert s.finish().startswith("exit=1"), s.events()
    shown = "".join(s.tmux.capture(history=True).split())  # the line wraps at the width
    said = "ptysup:abortafter1iteration(s)(exit1)"
    assert said in shown, s.text()
    why = shown[shown.index(said) :].split("events:")[0]
    assert why.endswith(":theagentgaveupandprinted[REDACTED:anthropic-key];"), why
