"""The pyte model of the agent's screen, fed off the hot path, read as snapshots.

Stock pyte 0.8.2 models a screen at about 1 MB/s: `Screen.draw` builds one namedtuple
per character with `_replace`, and every byte of an escape sequence is a generator
round trip. `_Screen` and `_Stream` below keep pyte's model (its buffer of `Char`s, its
methods for everything else) and only make the hot paths cheap: runs of single-width
characters go into a line with one `dict.update` (a run drawn again at the same column,
as TUIs do, reuses its cells), SGR results are remembered, complete CSI/OSC/ESC
sequences are dispatched from one regex match, and `display` re-renders only the lines
pyte marked dirty. tests/unit/test_screen.py holds them to stock pyte's display, title,
cursor and cells. Where a terminal shows something else than pyte, the model follows the
terminal, tmux (tests/e2e/test_screen_matches_tmux.py holds it to tmux's rows): see the
methods that say so, and the resize with its reflow (reflow.py).

The feeder keeps the model off the relay's path: the relay only appends to a bounded
backlog; the model catches up in batches at most every `interval` seconds, and under a
flood it feeds only the tail of what arrived (see `ScreenFeeder`). HISTORY rows scrolled
off the top are kept, for a resize to bring back: the recording on disk has the rest.
"""

from __future__ import annotations

import codecs
import collections
import copy
import re
import threading
import time
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import pyte
from pyte import charsets
from pyte import modes as mo
from pyte.screens import Char, Savepoint, StaticDefaultDict, wcwidth

from ptysup.terminal import reflow

T = TypeVar("T")


@dataclass(frozen=True)
class ScreenSnapshot:
    """What the agent's terminal shows at one moment."""

    lines: tuple[str, ...]
    title: str
    cursor: tuple[int, int]  # (row, col)
    # The payload of the agent's last in-band state report (Codex's OSC 7501), if it
    # writes them (ScreenFeeder's `signal_osc`): "" before the first.
    signal: str = ""

    def text(self) -> str:
        """The screen as text, trailing blanks and blank bottom lines dropped."""
        rows = [line.rstrip() for line in self.lines]
        while rows and not rows[-1]:
            rows.pop()
        return "\n".join(rows)


class _Cells(dict[str, Char]):
    """The cells of one set of attributes, one shared `Char` per character, and the cells
    of runs of text drawn more than once at the same column (TUIs repaint the same
    borders, prompts and status lines over and over)."""

    def __init__(self, attrs: Char) -> None:
        super().__init__()
        self._attrs = attrs
        self.runs: dict[tuple[str, int], dict[int, Char]] = {}
        self.seen: set[tuple[str, int]] = set()

    def __missing__(self, data: str) -> Char:
        if len(self) >= _MAX_CHARS:
            self.clear()
        cell = self[data] = self._attrs._replace(data=data)
        return cell

    def forget(self) -> None:
        """Drop the remembered runs."""
        self.runs.clear()
        self.seen.clear()


class _Widths(dict[str, int]):
    """wcwidth per character, memoised without lru_cache's per-call overhead."""

    def __missing__(self, char: str) -> int:
        if len(self) >= _MAX_CHARS * 16:
            self.clear()
        width = self[char] = wcwidth(char)
        return width


_WIDTHS = _Widths()
_JOINER = "\u200d"
_EMOJI_SELECTOR = "\ufe0f"
_SKIN_TONES = ("\U0001f3fb", "\U0001f3ff")


def _flag_half(char: str) -> bool:
    """A regional indicator: two of them are one flag."""
    return "\U0001f1e6" <= char <= "\U0001f1ff"


def _cell_width(data: str) -> int:
    """The cells a cell's text takes: its first character's, two for one an emoji
    selector widened."""
    width = _WIDTHS[data[0]] if data else 0
    return 2 if width == 1 and _EMOJI_SELECTOR in data else width


_BLANK = {False: Char(" "), True: Char(" ", reverse=True)}
_ERASED = Char(" ")  # an erased cell: equal to a blank, told apart by identity (see _erase)
_LATIN1 = charsets.LAT1_MAP
# Every cache here is bounded, so memory stays flat whatever the agent prints.
_MAX_ATTRS = 256  # distinct attribute sets whose cells are cached (24-bit colours vary)
_MAX_CHARS = 4096  # distinct characters whose cells are cached per attribute set
_MAX_REMEMBERED = 64 * 1024  # cells in remembered runs, plus runs seen once: a few MB
HISTORY = 1000  # rows kept above the screen, for a resize to bring back (tmux keeps 2000)


class _Screen(pyte.Screen):
    """pyte's Screen with fast drawing and erasing, cached rendering, and answerbacks
    (DA, DSR) handed to a callback."""

    def __init__(self, columns: int, lines: int, answer: Callable[[bytes], None] | None) -> None:
        self._cells: dict[Char, _Cells] = {}
        self._attrs: Char | None = None  # the last attributes drawn with, and their cells
        self._attrs_cells = _Cells(Char(" "))
        self._remembered = 0  # cells and keys held in the _Cells' runs and seen
        self._sgr: dict[tuple[Char, tuple[int, ...], bool], Char] = {}
        self._rendered: dict[int, str] = {}
        self._rendered_size = (0, 0)
        self._main: Any = None  # the main screen's lines while the alternate one shows
        self._main_size = (lines, columns)  # the main screen's size when it was left
        # Rows scrolled off the top of the main screen: a grow or a wider window brings
        # them back, as tmux does from its history.
        self._history: collections.deque[Any] = collections.deque(maxlen=HISTORY)
        self._wraps = False  # some row was left by an autowrap (a `wrapped` mark is set)
        self._saved: Savepoint | None = None  # DECSC's one slot (pyte keeps a stack)
        self._alt_saved: Savepoint | None = None  # the cursor ?1049 saved on its own
        # Where the cursor was after a joiner: a character drawn there joins its cell.
        self._joining: tuple[int, int] | None = None
        # Where the cursor was after a lone regional indicator: the next one joins it (🇺🇸).
        self._flag_at: tuple[int, int] | None = None
        super().__init__(columns, lines)
        self._answer = answer

    def write_process_input(self, data: str) -> None:
        if self._answer is not None:
            self._answer(data.encode())

    @property
    def default_char(self) -> Char:
        """pyte's blank cell, one shared object per reverse-screen mode (every new line
        asks for it)."""
        return _BLANK[mo.DECSCNM in self.mode]

    # -- drawing -------------------------------------------------------------------------
    def _cells_of(self, attrs: Char) -> _Cells:
        cells = self._cells.get(attrs)
        if cells is None:
            if len(self._cells) >= _MAX_ATTRS:
                self._forget_runs()
                self._cells.clear()
            cells = self._cells[attrs] = _Cells(attrs)
        return cells

    def _run(
        self, cells: _Cells, data: str, x: int
    ) -> dict[int, Char] | Iterable[tuple[int, Char]]:
        """The cells of single-width DATA drawn at column X, remembered from the second
        time it is drawn there."""
        pairs = zip(range(x, x + len(data)), map(cells.__getitem__, data), strict=False)
        key = (data, x)
        if self._remembered >= _MAX_REMEMBERED:
            self._forget_runs()
        if key not in cells.seen:
            cells.seen.add(key)
            self._remembered += 1
            return pairs
        row = cells.runs[key] = dict(pairs)
        self._remembered += len(row)
        return row

    def _forget_runs(self) -> None:
        for cells in (*self._cells.values(), self._attrs_cells):
            cells.forget()
        self._remembered = 0

    def draw(self, data: str) -> None:
        """pyte's draw: the same cells, cursor and wrapping, without a tuple per character."""
        if self.charset or self.g0_charset is not _LATIN1:  # Latin-1 maps every char to itself
            data = data.translate(self.g1_charset if self.charset else self.g0_charset)
        cursor = self.cursor
        mode = self.mode
        if (self._joining or self._flag_at) and (cursor.y, cursor.x) not in (
            self._joining,
            self._flag_at,
        ):
            self._joining = self._flag_at = None  # the cursor moved on since
        joins = self._joining or self._flag_at
        if mo.DECAWM not in mode or mo.IRM in mode or cursor.x > self.columns or joins:
            self._draw_each(data)
            return
        attrs = cursor.attrs
        if attrs is self._attrs:
            cells = self._attrs_cells
        else:
            cells = self._attrs_cells = self._cells_of(attrs)
            self._attrs = attrs
        x = cursor.x
        end = x + len(data)
        row = cells.runs.get((data, x))
        if row is not None and end <= self.columns:
            self.buffer[cursor.y].update(row)
        elif not (data.isascii() and data.isprintable()) and set(
            map(_WIDTHS.__getitem__, data)
        ) != {1}:
            self._draw_each(data)
            return
        elif end > self.columns:
            self._draw_wrapping(data, cells)
            return
        else:
            self.buffer[cursor.y].update(self._run(cells, data, x))
        cursor.x = end
        self.dirty.add(cursor.y)

    def _draw_wrapping(self, data: str, cells: _Cells) -> None:
        """Single-width characters past the last column: a line at a time, wrapping."""
        cursor = self.cursor
        columns = self.columns
        x = cursor.x
        line = self.buffer[cursor.y]
        pos, end = 0, len(data)
        while pos < end:
            if x == columns:
                self._wrap_line()
                x = cursor.x
                line = self.buffer[cursor.y]
            take = min(end - pos, columns - x)
            chunk = map(cells.__getitem__, data[pos : pos + take])
            line.update(zip(range(x, x + take), chunk, strict=False))
            x += take
            pos += take
        cursor.x = x
        self.dirty.add(cursor.y)

    def _draw_each(self, data: str) -> None:
        """pyte 0.8.2's per-character draw loop (after the charset translation)."""
        columns = self.columns
        for char in data:
            char_width = _WIDTHS[char]
            if char_width > 0 and (self._joining or self._flag_at):
                here = (self.cursor.y, self.cursor.x)
                joins = self._joining == here or (self._flag_at == here and _flag_half(char))
                self._joining = self._flag_at = None
                if joins:
                    # 👨‍👩‍👧 and 🇺🇸 are one character of two cells, as Claude Code (and a
                    # terminal that joins emoji) counts them; drawn as more, the row moves on.
                    self._join_previous(char)
                    continue
            if _SKIN_TONES[0] <= char <= _SKIN_TONES[1]:
                self._join_previous(char)  # 👍🏽: the tone is part of the emoji before it
                continue
            cursor = self.cursor
            if char_width > 0 and cursor.x + char_width > columns:
                # As tmux: a character that does not fit goes on at the next row's start
                # (a wide one at the last column too: pyte drew half of it off screen),
                # or without autowrap the last column is written again, where a wide
                # character is not drawn at all.
                if mo.DECAWM in self.mode:
                    self._wrap_line()
                elif char_width > 1:
                    continue
                else:
                    cursor.x = columns - 1
            if mo.IRM in self.mode and char_width > 0:
                self.insert_characters(char_width)
            line = self.buffer[cursor.y]
            if char_width == 1:
                line[cursor.x] = self._cells_of(cursor.attrs)[char]
            elif char_width == 2:
                cells = self._cells_of(cursor.attrs)
                line[cursor.x] = cells[char]
                if cursor.x + 1 < columns:
                    line[cursor.x + 1] = cells[""]  # the stub after a two-cell character
            elif char_width == 0:
                # pyte keeps only combining marks and drops the rest of the text at any
                # other zero-width character: a variation selector (the U+FE0F of ⚠️), a
                # joiner (👨‍👩‍👧) or U+200B. Each joins the character before it instead.
                self._join_previous(char)
            else:
                continue  # unprintable: not drawn (pyte drops the rest of the text; tmux not)
            if char_width > 0:
                # Without autowrap the cursor stays on the last column (tmux).
                cursor.x = min(cursor.x + char_width, columns - (mo.DECAWM not in self.mode))
                if _flag_half(char):
                    self._flag_at = (cursor.y, cursor.x)
        self.dirty.add(self.cursor.y)

    def _join_previous(self, char: str) -> None:
        """Add CHAR to the cell before the cursor (the last one of the line above at a line
        start), past the stub of a wide character: a zero-width one, or the one after a
        joiner. A joiner joins the next character too; an emoji selector (U+FE0F) makes a
        one-cell character two cells wide (⚠️), as Claude Code counts it."""
        cursor = self.cursor
        if cursor.x:
            y, line, x = cursor.y, self.buffer[cursor.y], cursor.x - 1
        elif cursor.y:
            y, line, x = cursor.y - 1, self.buffer[cursor.y - 1], self.columns - 1
        else:
            return  # nothing before it to join
        if x and not line[x].data:
            x -= 1  # the stub after a two-cell character: the character is left of it
        last = line[x]
        if char == _EMOJI_SELECTOR and _cell_width(last.data) == 1 and y == cursor.y:
            if cursor.x < self.columns:
                line[cursor.x] = self._cells_of(cursor.attrs)[""]
            cursor.x = min(cursor.x + 1, self.columns)
        self._joining = (cursor.y, cursor.x) if char == _JOINER else None
        line[x] = last._replace(data=unicodedata.normalize("NFC", last.data + char))
        self.dirty.add(y)  # pyte forgets the line above changed

    # -- attributes and cursor moves: pyte's semantics, fewer calls ---------------------
    def select_graphic_rendition(self, *attrs: int) -> None:
        """pyte's SGR, remembered: the result depends only on the current attributes, the
        parameters and reverse-screen mode."""
        key = (self.cursor.attrs, attrs, mo.DECSCNM in self.mode)
        known = self._sgr.get(key)
        if known is None:
            super().select_graphic_rendition(*attrs)
            if len(self._sgr) >= _MAX_ATTRS:
                self._sgr.clear()
            known = self._sgr[key] = self.cursor.attrs
        self.cursor.attrs = known

    def cursor_to_column(self, column: int | None = None) -> None:
        self.cursor.x = min(max(0, (column or 1) - 1), self.columns - 1)

    def cursor_forward(self, count: int | None = None) -> None:
        cursor = self.cursor
        cursor.x = min(max(0, cursor.x + (count or 1)), self.columns - 1)

    def cursor_up(self, count: int | None = None) -> None:
        top = 0 if self.margins is None else self.margins.top
        self.cursor.y = max(self.cursor.y - (count or 1), top)

    def cursor_down(self, count: int | None = None) -> None:
        bottom = self.lines - 1 if self.margins is None else self.margins.bottom
        self.cursor.y = min(self.cursor.y + (count or 1), bottom)

    def index(self) -> None:
        """pyte's index; a scroll moves the lines with one dict.update, and a row scrolled
        off the top of the main screen goes into the history. A line feed ends the row's
        line: a mark that it wrapped is taken off (tmux)."""
        top, bottom = self.margins or (0, self.lines - 1)
        buffer = self.buffer
        if self._wraps and (line := buffer.get(self.cursor.y)) is not None:
            line.__dict__.pop("wrapped", None)
        if self.cursor.y == bottom:
            self.dirty.update(range(self.lines))
            if top == 0 and bottom == self.lines - 1 and self._main is None:
                self._history.append(buffer[0])
            buffer.update(
                zip(
                    range(top, bottom),
                    map(buffer.__getitem__, range(top + 1, bottom + 1)),
                    strict=True,
                )
            )
            buffer.pop(bottom, None)
        else:
            self.cursor_down()

    def _new_row(self) -> Any:
        """An empty row, as the buffer makes them."""
        return StaticDefaultDict(self.default_char)

    def _wrap_line(self) -> None:
        """Autowrap: the cursor goes on at the next row's start, and the row it left is
        marked as going on there (a resize reflows both as one line)."""
        self.dirty.add(self.cursor.y)
        line = self.buffer[self.cursor.y]
        self.carriage_return()
        self.index()  # takes a mark off the row it leaves: set after
        line.__dict__["wrapped"] = True
        self._wraps = True

    def next_line(self) -> None:
        """NEL (`ESC E`): a carriage return and a line feed (pyte's is a line feed only)."""
        self.carriage_return()
        self.index()

    def repeat(self, char: str, count: int) -> None:
        """REP (`CSI n b`): CHAR drawn again COUNT times, at most to the end of the row
        (tmux; pyte has no REP)."""
        self.draw(char * min(max(count, 1), self.columns - self.cursor.x))

    def scroll_up(self, count: int | None = None, *rest: int, private: bool = False) -> None:
        """SU (`CSI n S`): the scroll region's rows move up COUNT, the cursor stays (tmux;
        pyte has no SU). `CSI ? … S` is another sequence (XTSMGRAPHICS)."""
        if not private:
            self._scroll(count or 1)

    def scroll_down(self, count: int | None = None, *rest: int, private: bool = False) -> None:
        """SD (`CSI n T`): the scroll region's rows move down COUNT, the cursor stays."""
        if not private:
            self._scroll(-(count or 1))

    def _scroll(self, count: int) -> None:
        """Move the scroll region's rows up COUNT (down if negative), blank rows coming in;
        the rows leaving the top of the whole main screen go into the history."""
        top, bottom = self.margins or (0, self.lines - 1)
        height = bottom - top + 1
        count = max(-height, min(count, height))
        buffer = self.buffer
        rows = [buffer.pop(y, None) for y in range(top, bottom + 1)]
        if count > 0 and height == self.lines and self._main is None:
            self._history.extend(
                row if row is not None else self._new_row() for row in rows[:count]
            )
        blank: list[Any] = [None] * abs(count)
        moved = rows[count:] + blank if count > 0 else blank + rows[:count]
        for y, row in zip(range(top, bottom + 1), moved, strict=True):
            if row is not None:
                buffer[y] = row
        self.dirty.update(range(top, bottom + 1))

    def insert_lines(self, count: int | None = None) -> None:
        """pyte's insert_lines, where a line that was never drawn on moves like a blank one
        (pyte leaves the old line in its place until its `display` has been read)."""
        count = count or 1
        top, bottom = self.margins or (0, self.lines - 1)
        cursor = self.cursor
        if top <= cursor.y <= bottom:
            self.dirty.update(range(cursor.y, self.lines))
            buffer = self.buffer
            for y in range(bottom, cursor.y - 1, -1):
                line = buffer.pop(y, None)
                if y + count <= bottom:
                    if line is None:
                        buffer.pop(y + count, None)
                    else:
                        buffer[y + count] = line
            self.carriage_return()

    def delete_lines(self, count: int | None = None) -> None:
        """pyte's delete_lines, where a line that was never drawn on moves like a blank one."""
        count = count or 1
        top, bottom = self.margins or (0, self.lines - 1)
        cursor = self.cursor
        if top <= cursor.y <= bottom:
            self.dirty.update(range(cursor.y, self.lines))
            buffer = self.buffer
            for y in range(cursor.y, bottom + 1):
                line = buffer.pop(y + count, None) if y + count <= bottom else None
                if line is None:
                    buffer.pop(y, None)
                else:
                    buffer[y] = line
            self.carriage_return()

    # -- erasing: pyte's semantics, one dict.update instead of a loop ---------------------
    def erase_in_line(self, how: int = 0, private: bool = False) -> None:
        cursor = self.cursor
        self.dirty.add(cursor.y)
        if how == 0:
            interval = range(cursor.x, self.columns)
        elif how == 1:
            interval = range(cursor.x + 1)
        elif how == 2:
            interval = range(self.columns)
        else:  # pyte raises UnboundLocalError here; an unknown mode erases nothing
            return
        line = self.buffer[cursor.y]
        self._erase(line, interval)
        if self._wraps and len(interval) == self.columns:
            line.__dict__.pop("wrapped", None)  # an emptied row goes on nowhere (tmux)

    def _erase(self, line: Any, interval: Iterable[int]) -> None:
        """Cells erased to blanks in the cursor's colours; to the default look, they are
        _ERASED (a reflow counts a row's cells up to the last one written, as tmux)."""
        attrs = self.cursor.attrs
        if attrs is _BLANK[False] or attrs == _BLANK[False]:
            attrs = _ERASED
        line.update(dict.fromkeys(interval, attrs))

    def erase_characters(self, count: int | None = None) -> None:
        cursor = self.cursor
        self.dirty.add(cursor.y)
        interval = range(cursor.x, min(cursor.x + (count or 1), self.columns))
        self._erase(self.buffer[cursor.y], interval)

    def erase_in_display(self, how: int = 0, *args: Any, **kwargs: Any) -> None:
        cursor = self.cursor
        if how == 0:
            interval = range(cursor.y + 1, self.lines)
        elif how == 1:
            interval = range(cursor.y)
        elif how == 2:
            interval = range(self.lines)
        elif how == 3:  # the scrollback only, as xterm and tmux (pyte erases the screen)
            self._history.clear()
            return
        else:  # pyte raises UnboundLocalError here; an unknown mode erases nothing
            return
        self.dirty.update(interval)
        for y in interval:
            line = self.buffer[y]
            self._erase(line, list(line))
            line.__dict__.pop("wrapped", None)
        if how == 0 or how == 1:
            self.erase_in_line(how)

    # -- where ptysup differs from pyte on purpose ---------------------------------------
    def set_mode(self, *modes: int, **kwargs: Any) -> None:
        """pyte's set_mode, plus the alternate screen (?1049, ?1047, ?47)."""
        if kwargs.get("private") and _ALT_MODES.intersection(modes) and self._main is None:
            if 1049 in modes:
                self._alt_saved = self._savepoint()  # a slot of its own (tmux, xterm)
            self._main = self.buffer
            self._main_size = (self.lines, self.columns)
            buffer: Any = self.buffer  # a defaultdict of lines
            self.buffer = type(buffer)(self._new_row)
            self.dirty.update(range(self.lines))
        super().set_mode(*modes, **kwargs)

    def reset_mode(self, *modes: int, **kwargs: Any) -> None:
        """pyte's reset_mode, plus leaving the alternate screen: the main one is back as
        it was (a pager or editor that quit inside the agent leaves no page behind)."""
        super().reset_mode(*modes, **kwargs)
        if kwargs.get("private") and _ALT_MODES.intersection(modes) and self._main is not None:
            # As tmux: the main screen back at the size it was left at, its cursor, then
            # resized (and reflowed) to the size the window has now.
            size = (self.lines, self.columns)
            self.buffer = self._main
            self._main = None
            self.lines, self.columns = self._main_size
            if 1049 in modes:
                self._restore(self._alt_saved)
            self._resize(*size)

    def save_cursor_sco(self, *params: int, private: bool = False) -> None:
        """`CSI s`: DECSC by another name, in the same slot (xterm, tmux). `CSI ? s` saves
        modes (XTSAVE), which the model does not keep."""
        if not private and not any(params):
            self.save_cursor()

    def restore_cursor_sco(self, *params: int, private: bool = False) -> None:
        """`CSI u`: DECRC by another name. `CSI ? u` asks for the kitty keyboard flags."""
        if not private and not any(params):
            self.restore_cursor()

    def _savepoint(self) -> Savepoint:
        return Savepoint(
            copy.copy(self.cursor),
            self.g0_charset,
            self.g1_charset,
            self.charset,
            mo.DECOM in self.mode,
            mo.DECAWM in self.mode,
        )

    def save_cursor(self) -> None:
        """DECSC (`ESC 7`): into one slot, as tmux and xterm have (pyte keeps a stack)."""
        self._saved = self._savepoint()

    def restore_cursor(self) -> None:
        """DECRC (`ESC 8`): the slot, as often as asked (pyte pops it and then goes home)."""
        self._restore(self._saved)

    def _restore(self, saved: Savepoint | None) -> None:
        """Back to SAVED, the cursor where it was (within the screen: pyte pulls it into
        the scroll region); home if nothing was saved."""
        if saved is None:
            self.reset_mode(mo.DECOM)
            self.cursor_position()
            return
        self.g0_charset, self.g1_charset = saved.g0_charset, saved.g1_charset
        self.charset = saved.charset
        (self.set_mode if saved.origin else self.reset_mode)(mo.DECOM)
        if saved.wrap:
            self.set_mode(mo.DECAWM)
        cursor = copy.copy(saved.cursor)
        cursor.x = min(cursor.x, self.columns - 1)
        cursor.y = min(cursor.y, self.lines - 1)
        self.cursor = cursor

    @property
    def alternate(self) -> bool:
        """Whether the alternate screen shows."""
        return self._main is not None

    def reset(self) -> None:
        """pyte's reset (RIS), which also leaves the alternate screen and forgets the
        saved cursor (the history stays, as tmux keeps it)."""
        self._main = None
        self._saved = self._alt_saved = None
        super().reset()

    def resize(self, lines: int | None = None, columns: int | None = None) -> None:
        """A new size, as tmux takes it: a shrink drops the rows below the cursor first,
        then moves rows from the top into the history (the cursor with its text); a grow
        brings rows back from the history first; a new width reflows the main screen's
        lines (pyte cuts them, so their ends were lost for good). The alternate screen
        is cut (a full-screen program repaints it); the main one is resized on return."""
        lines, columns = lines or self.lines, columns or self.columns
        if (lines, columns) == (self.lines, self.columns):
            return
        if self._main is None:
            self._resize(lines, columns)
            return
        for line in self.buffer.values():
            for x in range(columns, self.columns):
                line.pop(x, None)
        if lines < self.lines:
            top = _drop_rows(self.buffer, self.cursor.y, self.lines, lines)
            self.cursor.y = max(0, self.cursor.y - top)
        self._resized(lines, columns)

    def _resize(self, lines: int, columns: int) -> None:
        """The main screen's resize (see `resize`)."""
        if lines < self.lines:
            self._shrink(lines)
        elif lines > self.lines:
            self._grow(lines)
        if columns != self.columns:
            self._reflow(columns)
        self._resized(lines, columns)

    def _resized(self, lines: int, columns: int) -> None:
        if columns != self.columns:
            self.tabstops = set(range(8, columns, 8))  # tmux resets them
        self.lines, self.columns = lines, columns
        self.margins = None
        self.dirty.update(range(lines))
        self.cursor.x = min(self.cursor.x, columns)  # at the last column's end, still
        self.ensure_vbounds()

    def _shrink(self, lines: int) -> None:
        """Fewer rows: the rows below the cursor go (tmux drops them, blank or not), then
        rows from the top go into the history, and the cursor moves up with its text."""
        buffer, excess = self.buffer, self.lines - lines
        bottom = min(excess, self.lines - 1 - self.cursor.y)
        for y in range(self.lines - bottom, self.lines):
            buffer.pop(y, None)
        top = excess - bottom
        if top:
            rows = [buffer.pop(y, None) for y in range(self.lines - bottom)]
            self._history.extend(row if row is not None else self._new_row() for row in rows[:top])
            for y, row in enumerate(rows[top:]):
                if row is not None:
                    buffer[y] = row
            self.cursor.y = max(0, self.cursor.y - top)

    def _grow(self, lines: int) -> None:
        """More rows: rows come back from the history at the top, the cursor moving down
        with its text; blank ones are added below for the rest."""
        pulled = min(lines - self.lines, len(self._history))
        if not pulled:
            return
        buffer = self.buffer
        rows = [self._history.pop() for _ in range(pulled)][::-1]
        rows += [buffer.pop(y, None) for y in range(self.lines)]
        for y, row in enumerate(rows):
            if row is not None:
                buffer[y] = row
        self.cursor.y += pulled

    def _reflow(self, columns: int) -> None:
        """The main screen and its history rewrapped to COLUMNS (reflow.py); the screen
        shows the last rows, as tmux's does."""
        buffer = self.buffer
        history = list(self._history)
        rows = history + [buffer.get(y) or self._new_row() for y in range(self.lines)]
        cursor = (len(history) + self.cursor.y, self.cursor.x)
        new, (y, x) = reflow.reflow(rows, self.columns, columns, cursor, _ERASED, self._new_row)
        new += [self._new_row() for _ in range(self.lines - len(new))]
        above = len(new) - self.lines
        self._history = collections.deque(new[:above], maxlen=HISTORY)
        buffer.clear()
        buffer.update((y, row) for y, row in enumerate(new[above:]) if row)
        self.cursor.y, self.cursor.x = max(0, y - above), x
        self._wraps = self._wraps or any(map(reflow.wrapped, new))

    # -- reading -------------------------------------------------------------------------
    @property
    def display(self) -> list[str]:
        """pyte's display, re-rendering only lines marked dirty since the last call."""
        size = (self.lines, self.columns)
        if size != self._rendered_size:
            self._rendered = {}
            self._rendered_size = size
        rendered = self._rendered
        for y in self.dirty:
            rendered.pop(y, None)
        self.dirty.clear()
        out = []
        for y in range(self.lines):
            text = rendered.get(y)
            if text is None:
                text = rendered[y] = self._render(y)
            out.append(text)
        return out

    def _render(self, y: int) -> str:
        line = self.buffer.get(y)
        if not line:
            return " " * self.columns
        chars = [line[x].data for x in range(self.columns)]
        if all(len(c) == 1 for c in chars) and "".join(chars).isascii():
            return "".join(chars)
        out = []
        wide = False
        for x, char in enumerate(chars):
            if wide:  # the stub after a two-cell character
                wide = False
                continue
            if not char:  # a stub whose wide character was overwritten (pyte raises)
                out.append(" ")
                continue
            wide = _cell_width(char) == 2
            if wide and x + 1 < len(chars) and chars[x + 1]:
                # Its stub was written over: the character is gone, as in tmux (pyte
                # shows it and hides what was written there).
                out.append(" ")
                wide = False
                continue
            out.append(char)
        return "".join(out)


_ALT_MODES = frozenset((47, 1047, 1049))  # private modes that switch to the alternate screen


def _drop_rows(buffer: Any, cursor_y: int, lines: int, keep: int) -> int:
    """Shrink the alternate screen from LINES rows to KEEP: the rows below the cursor
    first, then rows from the top; how many went from the top."""
    bottom = min(lines - keep, lines - 1 - cursor_y)
    rows = [buffer.pop(y, None) for y in range(lines - bottom)]
    buffer.clear()
    top = len(rows) - keep
    for y, row in enumerate(rows[top:]):
        if row is not None:
            buffer[y] = row
    return top


# CSI sequences pyte has no notion of, consumed whole and never drawn: private markers
# `<` `=` (`CSI < u`, the kitty keyboard protocol's pop), `>` but for `CSI > c` (pyte
# drops the `>`, so `CSI > 4;2 m` would underline), colon sub-parameters, and
# intermediate bytes other than space and `$` (`CSI ! p`, soft reset). Stock pyte ends
# them at the first byte it does not expect and draws the rest (`u╭─── Claude Code`).
_FOREIGN_CSI = (
    r"\x1b\[(?:[0-?]*[<=:][0-?]*[ -/]*[@-~]"
    r"|>[0-?]*[ -/]*[@-bd-~]"
    r"|[0-?]*[ $]*[!-#%-/][ -/]*[@-~])"
)

# Strings no screen shows, consumed whole (pyte knows none of them and draws their bodies):
# DCS (`ESC P`: XTGETTCAP's `ESC P + q …`, sixel), SOS, PM and APC (kitty graphics), each
# up to its ST. tmux's passthrough (`ESC P tmux; …`, which opencode wraps its start-up
# queries in under tmux) doubles each ESC of the wrapped sequences, so there `ESC ESC` is
# part of the string and only a single `ESC \` ends it, as tmux itself reads it.
_STRING = r"\x1bPtmux;(?:[^\x1b]|\x1b\x1b)*\x1b\\|\x1b[P_^X][^\x1b\x9c]*(?:\x1b\\|\x9c)"
_STRING_STARTS = ("\x1bP", "\x1b_", "\x1b^", "\x1bX")
_MAX_STRING = 64 * 1024  # an unterminated string held for the next feed, at most

# Complete escape sequences the fast path dispatches itself, after pyte's plain-text run
# and its C0 controls; anything else (a sequence split across feeds, a C0 control inside
# a CSI, C1 introducers, palette OSCs) goes through pyte's own parser.
_SEQUENCES = (
    f"|({_FOREIGN_CSI})"  # group 3
    r"|\x1b\[([0-9]*)b"  # REP (repeat the character drawn just before): group 4
    r"|\x1b\[([0-9;?> ]*)([!-#%-/:<=@-~])"  # CSI: groups 5, 6
    r"|\x1b\]([^RP])([^\x07\x1b\x9c]*)(?:\x07|\x9c|\x1b\\)"  # OSC: groups 7, 8
    r"|\x1b([^\[\]#%()P_^X])"  # two-character ESC: group 9
    f"|({_STRING})"  # group 10
)
_TEXT, _BASIC, _FOREIGN, _REP, _CSI, _OSC, _ESC = 1, 2, 3, 4, 6, 8, 9  # each one's last group
# A sequence split across feeds is held back until it is complete, so the fast path sees
# it whole (pyte's parser would draw the final byte of a sequence it does not know).
_INCOMPLETE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*)?\Z")
_MAX_INCOMPLETE = 64
_SHIFTS = (pyte.control.SI, pyte.control.SO)
# In UTF-8, the C1 controls U+0080-U+009F are no controls to a terminal (tmux drops them):
# they come from mojibake (UTF-8 read as Latin-1 and encoded again), and pyte would start
# a string or CSI at U+0090 or U+009B and swallow the lines after it.
_C1 = re.compile("[\x80-\x9f]+")
_MAX_PARAMS = 1024  # distinct CSI parameter strings remembered


def _open_string(rest: str) -> str:
    """An unterminated string to hold for the next feed. Its body is never shown, so one
    longer than any query (an image) keeps only its introducer and its last bytes, with
    no ESC first (a doubled one cut in two would end tmux's passthrough)."""
    if len(rest) <= _MAX_STRING:
        return rest
    head = "\x1bPtmux;" if rest.startswith("\x1bPtmux;") else rest[:2]
    return head + rest[-_MAX_STRING // 2 :].lstrip("\x1b")


class _Stream(pyte.ByteStream):
    """pyte's ByteStream whose parser takes complete sequences from one regex match.

    pyte's parser is a generator fed one character at a time; it stays the authority
    for everything the fast path does not match, and holds the state between feeds.
    The fast path dispatches exactly as that generator would: the same methods with the
    same arguments (`?` anywhere means private, `>` and spaces are ignored, parameters
    are clamped to 9999), so only its speed differs.
    """

    # pyte's, plus SCOSC and SCORC (`CSI s`, `CSI u`): opencode saves its cursor so before
    # its alternate screen and restores it after drawing a test pattern at the top.
    # SU and SD (`CSI S`, `CSI T`) scroll the region as tmux does; pyte has neither.
    csi = {  # noqa: RUF012  # pyte's own attribute, read never written
        **pyte.ByteStream.csi,
        "s": "save_cursor_sco",
        "u": "restore_cursor_sco",
        "S": "scroll_up",
        "T": "scroll_down",
    }
    # NEL (`ESC E`) is a carriage return and a line feed; pyte makes it a line feed only.
    escape = {**pyte.ByteStream.escape, "E": "next_line"}  # noqa: RUF012  # as `csi`
    rejected = 0  # sequences skipped because pyte raised on them
    last_rejected: Exception | None = None
    _held = ""  # the start of a sequence that the next feed completes
    _repeats = ""  # the character the last feed ended drawing (a REP may follow in the next)

    def __init__(self, screen: pyte.Screen) -> None:
        super().__init__(screen)
        # Bytes that are no UTF-8 are dropped, as tmux drops them (pyte draws U+FFFD).
        self.utf8_decoder = codecs.getincrementaldecoder("utf-8")("ignore")

    def attach(self, screen: pyte.Screen) -> None:
        super().attach(screen)
        debug = screen.debug

        def table(mapping: dict[str, str]) -> collections.defaultdict[str, Callable[..., Any]]:
            return collections.defaultdict(
                lambda: debug, {key: getattr(screen, name) for key, name in mapping.items()}
            )

        self._basic = table(self.basic)
        self._esc = table(self.escape)
        self._csi = table(self.csi)
        self._params: dict[str, tuple[tuple[int, ...], bool]] = {}
        controls = "".join(map(re.escape, self.basic))
        self._token = re.compile(
            f"({self._text_pattern.pattern})|([{controls}])" + _SEQUENCES, re.DOTALL
        )

    def resync(self) -> None:
        """Forget a half-read sequence or character (the bytes after it were dropped)."""
        self.utf8_decoder.reset()
        self._initialize_parser()
        self._held = ""
        self._repeats = ""

    def feed(self, data: bytes) -> None:  # type: ignore[override]  # as pyte's ByteStream
        if self.use_utf8:
            text = self.utf8_decoder.decode(data)
            if not text.isascii() and _C1.search(text):
                text = _C1.sub("", text)
        else:
            text = "".join(map(chr, data))
        text = self._held + text
        self._held = ""
        tail = _INCOMPLETE.search(text, max(0, len(text) - _MAX_INCOMPLETE))
        if tail is None:
            self._held = self._feed_text(text)
            return
        if held := self._feed_text(text[: tail.start()]):  # a string goes on in the tail
            self._held = held + tail.group()
        elif self._taking_plain_text:  # the tail starts a sequence: wait for the rest
            self._held = tail.group()
        else:  # the tail is inside something pyte's parser is reading (an OSC string)
            self._held = self._feed_text(tail.group())

    def _csi_params(self, middle: str) -> tuple[tuple[int, ...], bool]:
        known = self._params.get(middle)
        if known is None:
            digits = middle.replace("?", "").replace(">", "").replace(" ", "")
            params = tuple(min(int(p or 0), 9999) for p in digits.split(";"))
            if len(self._params) >= _MAX_PARAMS:
                self._params.clear()
            known = self._params[middle] = (params, "?" in middle)
        return known

    def _feed_text(self, data: str) -> str:
        """Feed DATA; the start of a string (DCS, APC…) it leaves open, to be completed by
        the next feed, or ""."""
        screen = self.listener
        assert isinstance(screen, _Screen)
        draw = screen.draw
        match = self._token.match
        send = self._send_to_parser
        basic, esc, csi, params = self._basic, self._esc, self._csi, self._params
        taking = self._taking_plain_text
        offset, length = 0, len(data)
        # Where the last text drawn ends: a REP right there repeats its last character.
        drawn = 0 if self._repeats else -1
        while offset < length:
            try:
                while offset < length:
                    m = match(data, offset) if taking else None
                    if m is None:
                        if taking and data.startswith(_STRING_STARTS, offset):
                            self._taking_plain_text = True
                            self._repeats = ""
                            return _open_string(data[offset:])  # held for the next feed
                        char = data[offset]
                        offset += 1
                        taking = send(char)
                        continue
                    offset = m.end()
                    kind = m.lastindex
                    if kind == _TEXT:
                        draw(m[1])
                        drawn = offset
                    elif kind == _CSI:
                        middle = m[5]
                        known = params.get(middle)
                        if known is None:
                            known = self._csi_params(middle)
                        if known[1]:
                            csi[m[6]](*known[0], private=True)
                        else:
                            csi[m[6]](*known[0])
                    elif kind == _BASIC:
                        char = m[2]
                        if not (char in _SHIFTS and self.use_utf8):
                            basic[char]()
                    elif kind == _OSC:
                        code, param = m[7], m[8][1:]
                        if code in "01":
                            screen.set_icon_name(param)
                        if code in "02":
                            screen.set_title(param)
                    elif kind == _ESC:
                        esc[m[_ESC]]()
                    elif kind == _REP and m.start() == drawn:
                        # Only right after a character is drawn (tmux): anything between,
                        # a move, an attribute or a REP, leaves nothing to repeat.
                        char = data[drawn - 1] if drawn else self._repeats
                        screen.repeat(char, int(m[_REP][:5] or 1))
                    # else a CSI pyte does not know (_FOREIGN): consumed, nothing to do
            except Exception as exc:
                # A sequence pyte cannot take (e.g. `CSI 1;2 A`: too many parameters) is
                # skipped; stock pyte would drop the rest of the chunk with it.
                self.rejected += 1
                self.last_rejected = exc
                taking = True  # pyte's parser restarted, or was never left
        self._taking_plain_text = taking
        self._repeats = (data[drawn - 1] if drawn else self._repeats) if drawn == length else ""
        return ""


class ScreenModel:
    """A pyte Screen + ByteStream behind a lock: any chunk can be fed, any thread can read."""

    def __init__(self, rows: int, cols: int, answer: Callable[[bytes], None] | None = None) -> None:
        self._screen = _Screen(cols, rows, answer)
        self._stream = _Stream(self._screen)
        self._lock = threading.Lock()
        self._through: int | None = 0  # the output offset the screen shows (see mark)
        self._signal = ""  # the agent's last in-band state report

    def feed(self, data: bytes) -> None:
        """Apply agent output to the model (the screen is then between marks)."""
        with self._lock:
            self._through = None
            self._stream.feed(data)

    def signal(self, payload: str) -> None:
        """The agent reported its state in band (ScreenFeeder reads the reports)."""
        with self._lock:
            self._signal = payload

    def mark(self, through: int) -> None:
        """Say that the screen now shows the output's first `through` bytes (the feeder
        marks it after each batch; `painted` hands the mark out with the screen)."""
        with self._lock:
            self._through = through

    def resync(self) -> None:
        """Start parsing afresh: what follows does not continue what was fed before."""
        with self._lock:
            self._stream.resync()

    def resize(self, rows: int, cols: int) -> None:
        """Follow a window-size change (before the agent repaints)."""
        with self._lock:
            self._screen.resize(rows, cols)

    def place_cursor(self, row: int, col: int) -> None:
        """Start where the person's cursor is: an agent that draws below earlier output
        (scrolling it, moving up over its own lines) is then modelled row for row."""
        with self._lock:
            self._screen.cursor_position(row + 1, col + 1)

    @property
    def rejected(self) -> int:
        """How many escape sequences were skipped because pyte raised on them."""
        return self._stream.rejected

    def rejected_note(self) -> str | None:
        """One line saying how many sequences the model could not apply, if any (a
        modelling bug would otherwise go unseen)."""
        count, last = self._stream.rejected, self._stream.last_rejected
        if not count:
            return None
        return (
            f"the screen model could not apply {count} escape sequence(s) "
            f"(last: {type(last).__name__}: {last}); the supervisor's view may differ"
        )

    def painted(self, paint: Callable[[Any, bool], T]) -> tuple[T, int | None]:
        """`paint(screen, alternate)` on the pyte screen under the model's lock: a
        consistent view of every cell (`ptysup attach` re-emits it), and the output
        offset it shows (None while a batch is half fed)."""
        with self._lock:
            return paint(self._screen, self._screen.alternate), self._through

    def size(self) -> tuple[int, int]:
        """(rows, cols) of the modelled screen."""
        with self._lock:
            return self._screen.lines, self._screen.columns

    def snapshot(self) -> ScreenSnapshot:
        """A consistent copy of what is on screen now."""
        with self._lock:
            s = self._screen
            return ScreenSnapshot(
                tuple(s.display), s.title or "", (s.cursor.y, s.cursor.x), self._signal
            )


# Under heavy output the person's terminal comes first, and the model only has to be
# right once the output stops: nobody reads the screens in between but the detector,
# which then only needs to see that output flows.
#
# - While output flows, a batch of up to BURST bytes is fed whole. More is kept unfed
#   (the batches only tell `on_update` that output flows) until the output pauses for
#   KEPT_QUIET, and then fed whole, exactly, a slice at a time while it stays paused: a
#   progress bar repainted in place a thousand times, with relative cursor moves, is
#   modelled as the terminal shows it (any tail of it would leave stale rows). Claude
#   Code's output (a few KB per repaint, under 1 KB/s) is always modelled byte for byte.
# - The backlog keeps the newest BACKLOG bytes; older ones are dropped as they arrive.
#   Output that dropped bytes is a flood: every FLOOD_EVERY seconds its last FLOOD_TAIL
#   bytes are fed, from a line start, which keeps the screen roughly current for a few
#   ms of work; the batches in between only tell `on_update` that output flows.
# - Once a flood pauses for SETTLE_QUIET, the newest SETTLE bytes (fed or not) are fed
#   again from a line start, after the last title seen: scrolling output only shows its
#   last lines and a full repaint only what it painted, so for those the screen is the
#   one a complete feed makes (tests/pty/test_relay.py). A program that floods past the
#   backlog while patching its screen with relative moves is left approximate until it
#   repaints.
BACKLOG = 2 * 1024 * 1024  # unfed bytes kept: at most about 0.25 s of the model's work
BURST = 32 * 1024  # fed whole per batch while output flows: at most a few ms
FLOOD_TAIL = 8 * 1024  # fed during a flood: about a screenful, 1-2 ms
FLOOD_EVERY = 0.25  # seconds between flood tails (batches in between only signal output)
SETTLE = 32 * 1024  # fed again once a flood pauses: a few screenfuls, about 5-10 ms
INTERVAL = 0.04  # seconds between batches (and on_update calls) while output flows
QUIET = 0.01  # output paused this long: bring the screen up to date now
# Output kept back is fed once it paused this long: a flood that only falters (a loaded
# machine's relay stalls for a few ms) would have it fed a slice at a time all along, and
# a model fed every byte of a flood halves the relay's speed (it shares the process).
KEPT_QUIET = 0.1
SETTLE_QUIET = 0.025  # a flood paused this long: it ended (shorter gaps happen within)
SLICE = 8 * 1024  # bytes fed under the lock at a time; readers and the relay get turns

_OSC_START = re.compile(rb"\x1b\]")
_TITLE = re.compile(rb"\x1b\][02];[^\x07\x1b]*(?:\x07|\x1b\\)")


class _Recent:
    """The newest bytes, at least `keep` of them once that many arrived."""

    def __init__(self, keep: int) -> None:
        self._keep = keep
        self._chunks: collections.deque[bytes] = collections.deque()
        self.size = 0

    def add(self, data: bytes) -> None:
        self._chunks.append(data)
        self.size += len(data)
        while self.size - len(self._chunks[0]) >= self._keep:
            self.size -= len(self._chunks.popleft())

    def put_back(self, data: bytes) -> None:
        """DATA, taken out and not used, back in front of what came since."""
        self._chunks.appendleft(data)
        self.size += len(data)

    def take(self) -> list[bytes]:
        """The chunks, emptied."""
        chunks = list(self._chunks)
        self._chunks.clear()
        self.size = 0
        return chunks

    def copy(self) -> list[bytes]:
        return list(self._chunks)


@dataclass(frozen=True)
class _Batch:
    """What the feeder took from the backlog at once."""

    data: list[bytes]  # unfed output, oldest first
    dropped: int  # bytes dropped from the backlog before it
    recent: list[bytes]  # the newest SETTLE bytes or more, fed or not
    title: bytes  # the last title sequence seen so far
    paused: float  # seconds since the last output
    through: int  # bytes put up to the batch's end


class ScreenFeeder:
    """A thread that feeds the model in batches and calls `on_update` after each batch.

    The relay only appends to a bounded backlog (`put` never blocks and never parses), so
    a slow model never delays the person's view. A batch starts at once after a quiet
    spell, then at most every `interval` seconds while output keeps coming, so
    `on_update` (a snapshot and the state detector) runs a bounded number of times per
    second. Once output pauses (QUIET, or SETTLE_QUIET after a flood), the next batch
    starts at once: the screen is current a few tens of ms after the agent goes quiet,
    however much it printed.
    """

    def __init__(
        self,
        model: ScreenModel,
        on_update: Callable[[], None],
        *,
        backlog: int = BACKLOG,
        interval: float = INTERVAL,
        on_error: Callable[[BaseException], object] | None = None,
        signal_osc: int | None = None,
    ) -> None:
        self._model = model
        # The agent's in-band state reports (`ESC ] N ; payload ST`): read as the output
        # is put, before any coalescing can skip them, and across chunk boundaries.
        self._signals = _SignalReader(signal_osc, model.signal) if signal_osc else None
        self._on_update = on_update
        self._interval = interval
        self._on_error = on_error
        self._backlog = _Recent(backlog)  # not fed yet
        self._recent = _Recent(SETTLE)  # fed or not
        self._dropped = 0  # from the backlog since the last batch
        self._title = b""
        self._lock = threading.Lock()
        self._has_data = threading.Condition(self._lock)
        self._idle = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._ended = threading.Event()  # no more output comes: no quiet spell to wait for
        self._clock = time.monotonic  # the waits below are real time
        self._last_put = 0.0
        self._put = 0  # bytes put so far (the output's offset)
        self._exact = 0  # bytes the model shows as a complete feed would
        self._busy = False  # a batch is being fed
        self._flooded = False  # the screen is approximate until a settle
        self._flood_fed = -float("inf")  # when a flood tail was last fed
        self._thread = threading.Thread(target=self._run, name="ptysup-screen", daemon=True)
        self.dropped = 0  # bytes never modelled (for tests and the bench)
        self.errors: list[BaseException] = []

    def start(self) -> None:
        """Start the feeding thread."""
        self._thread.start()

    def put(self, data: bytes) -> int:
        """Queue agent output (called by the relay; never blocks on the model); returns
        the bytes put so far, the offset `ScreenModel.painted` speaks of."""
        osc = _has_osc(data)
        title = _last_title(data) if osc else b""  # outside the lock: a scan
        if self._signals is not None and (osc or self._signals.held or data[-1:] == b"\x1b"):
            self._signals.feed(data)
        with self._lock:
            before = self._backlog.size
            self._backlog.add(data)
            self._dropped += before + len(data) - self._backlog.size
            self._recent.add(data)
            self._title = title or self._title
            self._last_put = self._clock()
            self._put += len(data)
            self._has_data.notify()
            return self._put

    @property
    def pending(self) -> int:
        """Bytes waiting for the model (at most about `backlog`)."""
        with self._lock:
            return self._backlog.size

    def caught_up(self, timeout: float) -> bool:
        """Wait until the model shows every byte put so far as a complete feed would (a
        flood's tail fed again once it paused), at most `timeout` seconds."""
        with self._lock:
            target = self._put
            return self._idle.wait_for(lambda: self._exact >= target, timeout)

    def drained(self, timeout: float) -> bool:
        """Wait until the model has caught up with every byte put (or dropped it)."""
        with self._lock:
            return self._idle.wait_for(lambda: not self._backlog.size and not self._busy, timeout)

    def ended(self) -> None:
        """The agent's side closed: what is queued is all there is, so it is fed at once,
        without waiting for output to pause (a flood's settle then comes SETTLE_QUIET
        sooner, and with it the run's end)."""
        with self._lock:
            self._ended.set()
            self._has_data.notify()

    def stop(self) -> None:
        """Feed what is queued, then end the thread."""
        with self._lock:
            self._stop.set()
            self._ended.set()
            self._has_data.notify()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        last_batch = -float("inf")
        while True:
            with self._lock:
                # After a flood, the settling batch comes even if no more output does.
                self._has_data.wait_for(
                    lambda: self._backlog.size or self._flooded or self._stop.is_set()
                )
                if self._stop.is_set() and not self._backlog.size and not self._flooded:
                    return
            self._gather(last_batch)
            batch = self._take()
            if batch is None:  # kept for when the output pauses: only say that it flows
                self._tell(self._on_update)
                last_batch = self._clock()
                continue
            left = b""
            try:
                try:
                    left = self._feed(batch)
                finally:
                    self._fed(batch.through - len(left), left)
                self._on_update()
            except Exception as exc:  # a model bug must not stop the screen for good
                self._failed(exc)
            finally:
                last_batch = self._clock()
                with self._lock:
                    self._busy = False
                    self._idle.notify_all()

    def _take(self) -> _Batch | None:
        """The backlog as a batch, or None while more than BURST of it waits for the
        output to pause for KEPT_QUIET (nothing dropped yet): it is fed whole, exactly,
        then."""
        with self._lock:
            paused = float("inf") if self._ended.is_set() else self._clock() - self._last_put
            if (
                not self._flooded
                and not self._dropped
                and self._backlog.size > BURST
                and paused < KEPT_QUIET
            ):
                return None
            batch = _Batch(
                self._backlog.take(),
                self._dropped,
                self._recent.copy(),
                self._title,
                paused,
                self._put,
            )
            self._dropped = 0
            self._busy = True
            return batch

    def _tell(self, call: Callable[[], object]) -> None:
        try:
            call()
        except Exception as exc:  # a model bug must not stop the screen for good
            self._failed(exc)

    def _failed(self, exc: BaseException) -> None:
        self.errors.append(exc)
        if self._on_error is not None:
            self._on_error(exc)

    def _fed(self, through: int, left: bytes) -> None:
        """Every byte up to `through` is now fed or dropped, and LEFT (the rest of the
        batch) back in the backlog: said before `on_update`, so whoever its update wakes
        finds the model caught up."""
        self._model.mark(through)
        with self._lock:
            if left:
                self._backlog.put_back(left)
            if not self._flooded:  # a flood's screen is approximate until its settle
                self._exact = through
                self._idle.notify_all()

    def _gather(self, last_batch: float) -> None:
        """Let output gather until `interval` after the last batch, or until it pauses:
        the screen must be current soon after the agent goes quiet. (Waiting on the end
        event, outside the lock: puts do not wake this wait, the output's end does.)"""
        while not self._ended.is_set():
            now = self._clock()
            quiet = self._quiet()
            paused = now - self._last_put
            if paused >= quiet:
                return
            wait = quiet - paused
            if self._backlog.size:
                left = last_batch + self._interval - now
                if left <= 0:
                    return
                wait = min(wait, left)
            self._ended.wait(wait)

    def _quiet(self) -> float:
        """How long output must pause before the next batch is fed."""
        if self._flooded:
            return SETTLE_QUIET
        return KEPT_QUIET if self._backlog.size > BURST else QUIET

    def _feed(self, batch: _Batch) -> bytes:
        """Model BATCH; what it left unfed (output came again: the relay goes first)."""
        size = sum(map(len, batch.data))
        self._flooded = self._flooded or batch.dropped > 0
        if not self._flooded and size <= BURST:
            self._feed_all(b"".join(batch.data))  # exact
        elif not self._flooded and batch.paused >= KEPT_QUIET:
            return self._feed_while_quiet(b"".join(batch.data), batch.through)  # exact
        elif batch.paused >= SETTLE_QUIET:
            self.dropped += batch.dropped + size
            self._feed_tail(b"".join(batch.recent), SETTLE, batch.title)
            self._flooded = False
        else:
            self.dropped += batch.dropped + size
            now = self._clock()
            if now - self._flood_fed >= FLOOD_EVERY:
                self._feed_tail(b"".join(batch.data), FLOOD_TAIL, batch.title)
                self._flood_fed = now
            self._flooded = True
        return b""

    def _feed_tail(self, data: bytes, keep: int, title: bytes) -> None:
        """The last KEEP bytes of DATA from a line start, after TITLE, parsed afresh (no
        escape sequence or UTF-8 character spans a newline)."""
        tail = data[-keep:]
        cut = tail.find(b"\n") + 1 if len(data) > keep else 0
        self._model.resync()
        self._feed_all(title + tail[cut:])

    def _feed_all(self, data: bytes) -> None:
        for start in range(0, len(data), SLICE):
            self._model.feed(data[start : start + SLICE])
            time.sleep(0)  # hand the GIL to the relay between slices

    def _feed_while_quiet(self, data: bytes, through: int) -> bytes:
        """Output kept back while it flowed, fed while it stays paused; the rest once more
        comes (THROUGH is the offset at DATA's end): up to BACKLOG bytes are a fair share
        of a CPU the relay, the agent and the terminal need while output flows."""
        for start in range(0, len(data), SLICE):
            if start and self._put != through:
                return data[start:]
            self._model.feed(data[start : start + SLICE])
            time.sleep(0)
        return b""


class _SignalReader:
    """Finds `ESC ] N ; payload (BEL | ESC \\)` in output chunks and reports each payload
    (the relay's thread: only the chunks holding an OSC are scanned)."""

    MAX_HELD = 4096  # an unterminated report longer than this is not one

    def __init__(self, number: int, report: Callable[[str], None]) -> None:
        self._pattern = re.compile(
            rb"\x1b\]" + str(number).encode() + rb";([^\x07\x1b]*)(?:\x07|\x1b\\)"
        )
        self._start = b"\x1b]" + str(number).encode() + b";"
        self._report = report
        self.held = b""  # the start of a report the next chunk completes

    def feed(self, data: bytes) -> None:
        data = self.held + data
        self.held = b""
        end = 0
        for m in self._pattern.finditer(data):
            self._report(m.group(1).decode("utf-8", "replace"))
            end = m.end()
        start = data.rfind(self._start, end)
        if start < 0:  # a report's introducer may itself be split: keep a short tail
            start = data.rfind(b"\x1b", max(end, len(data) - len(self._start)))
        if start >= 0 and len(data) - start <= self.MAX_HELD:
            self.held = data[start:]


def _has_osc(data: bytes) -> bool:
    """Whether `data` holds an OSC sequence's start (ESC ]): one memchr for plain text.

    The relay hands over every byte the agent prints, so this is on its path: `in` with a
    two-byte needle scans 64 KB of plain text in ~60 us, this in ~1 (scripts/bench.py)."""
    return b"\x1b" in data and _OSC_START.search(data) is not None


def _last_title(data: bytes) -> bytes:
    """The last complete OSC 0/2 (title) sequence in `data`, or b""."""
    start = max(data.rfind(b"\x1b]0;"), data.rfind(b"\x1b]2;"))
    if start < 0:
        return b""
    m = _TITLE.match(data, start)
    return m.group() if m else b""
