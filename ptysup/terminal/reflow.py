"""Rows rewrapped to a new width, as tmux reflows its grid when a window's width changes.

A row the cursor left by wrapping at the last column continues in the next one (its
`wrapped` mark, set by the screen model); the rows of one line are joined, cut again at
the new width, and the cursor stays on its character. Lines printed before a resize then
keep their ends: narrower, they wrap onto more rows; wider again, they are whole again.
Pure functions over the model's rows (dicts of column to cell), so they are tested alone.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import Any

Row = Any  # one row of cells: pyte's StaticDefaultDict[int, Char] (a dict of column → cell)


def wrapped(row: Row) -> bool:
    """Whether ROW goes on in the next row (the cursor left it by wrapping)."""
    return bool(row.__dict__.get("wrapped"))


def reflow(
    rows: Sequence[Row],
    old: int,
    new: int,
    cursor: tuple[int, int],
    erased: Any,
    make_row: Callable[[], Row],
) -> tuple[list[Row], tuple[int, int]]:
    """ROWS (oldest first), OLD columns wide, as rows NEW columns wide, and where the
    cursor (row index, column) is then. ERASED is the cell an erase leaves (no written
    cell: a row counts up to its last written one); MAKE_ROW makes an empty row."""
    out: list[Row] = []
    at = cursor
    start = 0
    while start < len(rows):
        end = start
        while end < len(rows) - 1 and wrapped(rows[end]):
            end += 1
        cells, offset = _join(rows[start : end + 1], old, cursor[0] - start, cursor[1], erased)
        cut, starts = _cut(cells, new, make_row)
        if offset is not None:
            at = _position(len(out), starts, offset, new)
        out.extend(cut)
        start = end + 1
    return out, at


def _join(
    rows: Sequence[Row], old: int, cursor_row: int, cursor_col: int, erased: Any
) -> tuple[list[Any], int | None]:
    """One line's cells (each row's up to the last one written, as tmux counts them), and
    the cursor's offset into them if the cursor is on one of its rows."""
    cells: list[Any] = []
    offset = None
    for n, row in enumerate(rows):
        if n == cursor_row:
            offset = len(cells) + cursor_col
        width = max((x + 1 for x, cell in row.items() if x < old and cell is not erased), default=0)
        cells.extend(row[x] for x in range(width))  # a row's default for the ones never written
    return cells, offset


def _cut(cells: list[Any], new: int, make_row: Callable[[], Row]) -> tuple[list[Row], list[int]]:
    """CELLS as rows NEW columns wide (a wide character is never cut in two), and the
    offset each row starts at."""
    rows, starts = [], []
    start = 0
    while True:
        end = min(start + new, len(cells))
        if end < len(cells) and end > start + 1 and cells[end].data == "":
            end -= 1  # the character before a stub goes on to the next row with it
        row = make_row()
        row.update(enumerate(cells[start:end]))
        rows.append(row)
        starts.append(start)
        if end >= len(cells):
            return rows, starts
        row.__dict__["wrapped"] = True
        start = end


def _position(first: int, starts: list[int], offset: int, new: int) -> tuple[int, int]:
    """The row and column of OFFSET into a line whose rows (from row FIRST) start at STARTS."""
    row = bisect.bisect_right(starts, offset) - 1
    return first + row, min(offset - starts[row], new)
