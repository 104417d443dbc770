"""The person's terminal: where its cursor is."""

from __future__ import annotations

import os

from ptysup.terminal.tty_ import cursor_position


def test_the_cursor_position_is_read_and_typed_keys_kept() -> None:
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    try:
        os.write(in_w, b"ab\x1b[12;5Rc")
        assert cursor_position(in_r, out_w, timeout=5) == ((11, 4), b"abc")
        assert os.read(out_r, 100) == b"\x1b[6n"
        os.write(in_w, b"no answer")
        assert cursor_position(in_r, out_w, timeout=0.05) == (None, b"no answer")
    finally:
        for fd in (in_r, in_w, out_r, out_w):
            os.close(fd)
