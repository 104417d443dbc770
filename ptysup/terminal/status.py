"""A status line at the bottom of the person's terminal that the agent never draws on.

The agent's PTY is one row shorter than the terminal and a scroll region (DECSTBM) keeps
its output above the last row, so the agent's own bytes reach the person unchanged but
for one: its "scroll region = the whole screen" (`CSI r`) means the rows it was given,
not the terminal's. ptysup draws the status row only between complete escape sequences of
the agent's stream, saving and restoring the cursor around it.
"""

from __future__ import annotations

import queue
import re
import time
from collections.abc import Callable

from ptysup.events import Event, shown
from ptysup.supervisor.prompt import format_elapsed
from ptysup.terminal.probes import starts
from ptysup.textwidth import fit

MIN_ROWS = 6  # below this the agent needs every row; no status line
REDRAW_S = 2.0  # while output flows, redraw this often anyway (an erase may have gone unseen)
GAP_S = 0.1  # while output flows, draw at most this often; a pause in the output draws

# A new status text redraws the row only, never the region: tmux shows a resize at once but
# tells the PTY (SIGWINCH) up to 250 ms later, and a region for the old, smaller size left a
# grown window's cursor below it, where every line the agent printed overwrote the last.
# For the same reason the row is addressed as the terminal's last, whatever size it has.
STATUS_ROW = 999

# After a resize or a reset the terminal has no scroll region, and the cursor may be on the
# last row (tmux drops rows so on a shrink; after a reset the agent's lines ran on
# to it): a line feed there scrolls everything up one
# row, the cursor with it, then back up; anywhere else it is down one and up one. The
# DECSTBM that drops the region homes the cursor, hence the save and restore around it.
FREE_LAST_ROW = b"\x1b7\x1b[r\x1b8\n\x1b[A"

# After a grow the old status row is still on the screen, inside the agent's rows now: a
# line agent's next lines land on it and leave its tail (`18ysup 1/500 · 10s`). Where it
# is depends on the terminal: tmux and xterm pull lines from the scrollback into a grown
# window, moving the old row (and the cursor) down by as many; without scrollback the new
# rows come in below it. Either way it stays as far below the cursor as it was, so it is
# erased there: the region dropped first (a terminal may keep the old one, which would
# stop the cursor above the row), the cursor's attributes (saved with it) reset for the
# erase, so the row is left blank rather than in the agent's colours.
ERASE_BELOW = b"\x1b7\x1b[r\x1b8\x1b7\x1b[%dB\x1b[0m\x1b[2K\x1b8"

_CSI_DONE = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]")
_STRING_DONE = re.compile(rb"\x1b[\]PX^_].*?(?:\x07|\x1b\\)", re.DOTALL)
_OTHER_DONE = re.compile(rb"\x1b[ -/]*[0-~]")
# What erases the row or drops the region, looked for in each batch of the agent's output
# (observe()): clearing the screen below the cursor, the screen alignment test (`ESC # 8`
# fills every row with `E`), a soft reset (`CSI ! p`) and a hard one (`ESC c`). The
# clears, the alignment test and the soft reset are found by a byte rare in terminal output
# (see probes), the regex only where one is; the hard reset, which nothing rare marks, by
# one search (~1.5 us per 4 KB). The agent's `CSI r` is not among them: for_person()
# turned it into the region above the row (Claude Code sends one as it starts and as it
# exits). Switching to or from the alternate screen (which has a row of its own) is read by
# the terminal-mode tracker, which parses those sequences anyway, and reported through
# erased().
_ERASES = re.compile(rb"\x1b\[(?:\??[023]?J|!p)|\x1bc|\x1b#8")  # `CSI ? J`: selective erase
_HARD_RESET = b"\x1bc"
_CLEARS = tuple(b"\x1b[%sJ" % p for p in (b"", b"0", b"2", b"3", b"?", b"?0", b"?2", b"?3"))
_ERASE_PROBES = ((b"J", _CLEARS), (b"!", (b"\x1b[!",)), (b"#", (b"\x1b#",)))
_LONGEST_ERASE = 5  # bytes: the seam between two batches is searched too


# The agent dropping its scroll region: the whole screen it knows, above the status row.
# (Claude Code sends it as it starts, and as it exits before it prints how to resume.)
RESET_REGION = b"\x1b[r"


def _erases(data: bytes) -> bool:
    """Whether `data` may have erased the status row: a memchr for ESC in plain text; in
    ANSI-heavy output one for `J`, one for `!`, one for `#` and a search for the hard reset, a match
    only where a probe found something."""
    if b"\x1b" not in data:
        return False
    return _HARD_RESET in data or any(_ERASES.match(data, i) for i in starts(data, _ERASE_PROBES))


def ends_cleanly(data: bytes) -> bool:
    """Whether `data` ends outside any escape sequence or UTF-8 character, so other bytes
    may follow it without changing what it means."""
    tail = data[-512:]
    esc = tail.rfind(b"\x1b")
    if esc != -1:
        rest = tail[esc:]
        if rest[1:2] == b"[":
            m = _CSI_DONE.match(rest)
        elif rest[1:2] in (b"]", b"P", b"X", b"^", b"_"):
            m = _STRING_DONE.match(rest)
        else:
            m = _OTHER_DONE.match(rest)
        if m is None:
            return False
    return _utf8_complete(tail)


def _utf8_complete(data: bytes) -> bool:
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:
            return True
        if byte >= 0xC0:  # a lead byte: how long should its sequence be?
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return back >= need
    return True


class StatusLine:
    """Draws `text` on the terminal's last row; the agent gets the rows above it."""

    def __init__(
        self,
        write: Callable[[bytes], None],
        rows: int,
        cols: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._write = write
        self._rows, self._cols = rows, cols
        self._clock = clock
        self.text = "ptysup"
        self._last = b""  # the agent's latest chunk: does it end between sequences?
        self._pending = False
        self._drawn_at = float("-inf")
        self._loose = False  # the cursor may sit on the status row: free it at the next draw
        self._region_due = False  # the region may be gone: the next draw sets it again
        self._region_at = float("-inf")
        self._stale_below = 0  # after a grow: how far below the cursor the old row is
        self._alerts: queue.SimpleQueue[bytes] = queue.SimpleQueue()  # any thread puts
        self._begun = b""  # how much of a `CSI r` the last chunk ended with
        self._seam = b""  # the last batch's last bytes: an erase may be split

    @staticmethod
    def fits(rows: int) -> bool:
        """Whether a terminal this tall gets a status line."""
        return rows >= MIN_ROWS

    def agent_size(self) -> tuple[int, int]:
        """(rows, cols) the agent is told: one row less than the terminal."""
        return self._rows - 1, self._cols

    def start(self) -> None:
        """Make room: scroll the screen if the cursor sits on the last row, set the region."""
        self._write(b"\r\n\x1b[A" + self._region() + self._status())
        self._drawn_at = self._region_at = self._clock()

    def resize(self, rows: int, cols: int, cursor_row: int | None = None) -> None:
        """Follow a window-size change; the next draw also frees the status row and, after
        a grow, erases the old one if the cursor's row (from 0) is known."""
        grown = rows > self._rows
        if grown and cursor_row is not None and 0 <= cursor_row < self._rows - 1:
            self._stale_below = self._rows - 1 - cursor_row
        self._rows, self._cols = rows, cols
        self._pending = True
        self._loose = True
        self._region_due = True

    def update(self, text: str) -> None:
        """New status text; drawn at the next safe moment."""
        self.text = text
        self._pending = True

    def alert(self, data: bytes) -> None:
        """Queue complete sequences (bell, OSC notifications) for the next safe draw."""
        self._alerts.put(data)
        self._pending = True

    def for_person(self, data: bytes) -> bytes:
        """The agent's chunk as the person's terminal must get it (relay thread, before the
        write): a `CSI r` becomes the region above the status row. Both reset the region
        and home the cursor; with the bare one the agent's next line feeds ran into the
        status row and scrolled it up with them. One split across two chunks has reached
        the terminal in part: the region follows it at once (the same cursor, the same
        region). Every chunk of a flood passes here: plain text costs one memchr for ESC,
        the rest one reverse search (~1 us per 4 KB), never a regex."""
        if not data:
            return data
        begun = self._begun
        end = begun + data[-2:]  # a piece as short as `[` may continue one begun before
        self._begun = b"\x1b[" if end.endswith(b"\x1b[") else b"\x1b" if end[-1] == 0x1B else b""
        if b"\x1b" in data:
            data = self._translate(data)
        if begun and data.startswith(RESET_REGION[len(begun) :]):
            done = len(RESET_REGION) - len(begun)
            data = data[:done] + self._agent_region() + data[done:]
        return data

    def _translate(self, data: bytes) -> bytes:
        """Each `CSI r` in `data` as the agent's region. Found from the end, piece by piece:
        twice as fast as bytes.replace() (one pass instead of a count and a search)."""
        i = data.rfind(RESET_REGION)
        if i == -1:
            return data
        pieces = []
        end = len(data)
        while i != -1:
            pieces.append(data[i + len(RESET_REGION) : end])
            end = i
            i = data.rfind(RESET_REGION, 0, i)
        pieces.append(data[:end])
        pieces.reverse()
        return self._agent_region().join(pieces)

    def _agent_region(self) -> bytes:
        return b"\x1b[1;%dr" % (self._rows - 1)

    def observe(self, data: bytes) -> None:
        """Each batch of the agent's output, in order, once the person has it (relay thread,
        at most a few ms after after_output): did it erase the row? Looked for even while
        the region is due anyway: a reset must also free the cursor (erased())."""
        seam = self._seam + data[: _LONGEST_ERASE - 1]  # one begun in the last batch(es)
        spanning = _erases(seam) and not _erases(self._seam)  # (the last one saw its own)
        self._seam = (self._seam + data[1 - _LONGEST_ERASE :])[1 - _LONGEST_ERASE :]
        if spanning or _erases(data):
            self.erased()

    def erased(self) -> None:
        """The agent's output may have erased the row or dropped the region (a clear, a
        reset, another screen): both are drawn again at the next safe moment. With the
        region gone the agent's lines may have run onto the status row (a reset and what
        followed it in one read): the cursor is freed from it first, as after a resize."""
        self._pending = self._region_due = self._loose = True

    def after_output(self, data: bytes) -> None:
        """Called after each agent chunk reached the terminal (relay thread).

        Under an output flood this runs for every few KB, so it does little: mark the
        region due every REDRAW_S (in case an erase went unseen), and draw at most every
        GAP_S; the relay's next pause in the output (`flush`) draws what is left.
        """
        self._last = data
        self._stale_below = 0  # the cursor moved: where the old row is is not known now
        now = self._clock()
        if not self._region_due and now - self._region_at > REDRAW_S:
            self._pending = self._region_due = True
        if self._pending and now - self._drawn_at >= GAP_S:
            self.flush()

    def flush(self) -> None:
        """Draw a pending status if the agent's stream is between sequences (relay thread)."""
        if self._pending and ends_cleanly(self._last):
            # Cleared before the text is read: an update() from the loop thread meanwhile
            # stays pending instead of being lost.
            self._pending = False
            repair = ERASE_BELOW % self._stale_below if self._stale_below else b""
            repair += FREE_LAST_ROW if self._loose else b""
            self._stale_below = 0
            region = self._region() if self._region_due else b""
            self._loose = self._region_due = False
            self._write(repair + region + self._status() + self._take_alerts())
            self._drawn_at = self._clock()
            if region:
                self._region_at = self._drawn_at

    def stop(self) -> None:
        """Give the whole terminal back: reset the region, clear the status row."""
        self._write(b"\x1b7\x1b[r\x1b[%d;1H\x1b[2K\x1b8" % self._rows)

    def _take_alerts(self) -> bytes:
        out = b""
        while not self._alerts.empty():
            out += self._alerts.get_nowait()
        return out

    def _region(self) -> bytes:
        # DECSTBM homes the cursor: save and restore it around the change.
        return b"\x1b7" + self._agent_region() + b"\x1b8"

    def _status(self) -> bytes:
        # Cut by columns: a wider text would wrap past the last row and scroll the screen.
        text = fit(shown(self.text, self._cols - 1), self._cols - 1)
        return (
            b"\x1b7\x1b[%d;1H\x1b[0m\x1b[2K\x1b[7m" % STATUS_ROW + text.encode() + b"\x1b[0m\x1b8"
        )


# The person's events, and what the status says while supervision is theirs.
_PERSON_STATES = {
    "person_command",
    "person_input",
    "person_prompt",
    "decision_cancelled",
    "interrupt",
}


class StatusSink:
    """An event sink that turns the run's progress into the status line's text."""

    def __init__(
        self,
        line: StatusLine,
        poke: Callable[[], None],
        max_iter: int = 0,
        clock: Callable[[], float] = time.monotonic,
        escape_key: str | None = None,
    ) -> None:
        self._escape_key = escape_key  # e.g. "Ctrl-]": shown as a hint, and its menu
        self._menu = False
        self._paused = False
        self._line = line
        self._poke = poke
        self._clock = clock
        self._start = clock()
        self._iteration = 0
        self._max_iter = max_iter
        self._state = "starting"
        self._last = ""
        self._cost = 0.0  # the run's (agent and supervisor), as of the last decision

    def write(self, event: Event) -> None:
        f = event.fields
        name = event.event
        if name == "run_start":
            self._max_iter = int(f.get("max_iter") or 0)
        elif name == "agent_ready":
            self._state = "agent ready"
        elif name == "inject":
            self._state = "agent working"
        elif name == "turn_end":
            self._state = "asking the supervisor"
        elif name == "decision":
            self._iteration = int(f.get("iteration") or 0)
            self._cost = float(f.get("total_cost_usd") or 0.0)
            self._last = f"{f.get('action')}: {shown(f.get('content', ''))}"
            self._state = f"decided: {f.get('action')}"
        elif name == "wait":
            self._state = f"API limit: waiting {f.get('seconds')}s"
        elif name == "verify":
            self._state = "verify " + ("passed" if f.get("passed") else "FAILED")
        elif name == "second_opinion":
            self._state = f"second opinion: {f.get('action')}"
        elif name == "tamper" and f.get("verdict") in ("refused", "escalated"):
            self._state = "done refused: the agent changed the tests"
        elif name in _PERSON_STATES:
            self._state = self._person_state(name, f)
        elif name == "escalation":
            self._state = f"waiting for you: {f.get('reason', '')}"
        elif name == "budget":  # a person moved the budgets from elsewhere
            self._max_iter = int(f.get("max_iter") or self._max_iter)
            self._state = f"budgets moved by {f.get('source')}"
        elif name == "person_action":
            self._state = f"{f.get('action')} from {f.get('source')}"
        elif name == "question":
            who = "asking the supervisor" if f.get("to") == "supervisor" else "waiting for you"
            self._state = f"{who}: the agent asks a question"
        elif name == "answer":
            self._state = "agent working"
        elif name == "hook" and f.get("name") == "UserPromptSubmit":
            self._state = "agent working"  # also a turn the person started
        else:
            return
        if self._paused and name not in _PERSON_STATES:
            self._state = self._paused_state()  # paused until the person resumes, whatever runs
        self._line.update(self.text())
        self._poke()

    def tick(self) -> None:
        """Redraw if the text changed since the last draw (the elapsed time advanced)."""
        text = self.text()
        if text != self._line.text:
            self._line.update(text)
            self._poke()

    def menu(self, show: bool) -> None:
        """Show the escape key's commands instead of the status (the prefix was pressed)."""
        self._menu = show
        self._line.update(self.text())
        self._poke()

    def _paused_state(self) -> str:
        key = self._escape_key or "the escape key"
        return f"PAUSED: the agent is yours, no decisions · {key} p resumes"

    def _person_state(self, name: str, f: dict[str, object]) -> str:
        if name == "person_command":
            self._paused = f.get("command") == "pause"
            if f.get("command") == "stop":
                return "stopping: ending the agent"
        if self._paused:
            return self._paused_state()
        if name == "person_input":
            if f.get("state") == "typing":
                return "waiting: your text is in the input box (Enter sends it)"
            return "agent working" if f.get("state") == "submitted" else "supervising"
        if name == "decision_cancelled":
            return "decision cancelled: your message goes first"
        if name == "interrupt":
            return "stopping: turn interrupted"
        return "supervising" if name == "person_command" else "your message: agent working"

    def text(self) -> str:
        """'ptysup 2/50 · 1m05s · agent working · last: continue: Fix the test'."""
        if self._menu and self._escape_key:
            k = self._escape_key
            return f"ptysup keys: s stop the run · p pause/resume supervision · {k} send {k}"
        parts = [
            f"ptysup {self._iteration}/{self._max_iter}",
            format_elapsed(self._clock() - self._start),
        ]
        if self._cost:
            parts.append(f"${self._cost:.2f}")
        parts.append(self._state)
        if self._escape_key:
            parts.append(f"{self._escape_key} keys")
        if self._last:
            parts.append(f"last: {self._last}")
        return " · ".join(parts)

    def close(self) -> None:
        pass
