"""Making text safe to type, and typing it as ONE user message."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

MAX_MESSAGE = 64 * 1024  # characters of one instruction; more is cut (and logged)
PASTE_START = b"\x1b[200~"
PASTE_END = b"\x1b[201~"
# Claude Code treats a \r that arrives with (or right after) pasted text as part of the
# paste; a pause before Enter in its own write makes it a submit. 50 ms was the least
# observed to work; twice that leaves room on a loaded machine.
SUBMIT_PAUSE_S = 0.1

# Escape sequences first (so their parameters go with them), then lone controls.
_ESCAPES = re.compile(
    r"""
    \x1b\[[0-?]*[ -/]*[@-~]                # CSI ... final byte
  | \x1b[\]PX^_][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?  # OSC/DCS/SOS/PM/APC ... terminator
  | \x1b[ -/]*[0-~]?                       # other ESC sequences (and a lone ESC)
  | \x9b[0-?]*[ -/]*[@-~]                  # 8-bit CSI
    """,
    re.VERBOSE,
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Lone surrogates: a task given on a command line that is not UTF-8 reaches Python as
# surrogate escapes, and they cannot be encoded to be typed.
_SURROGATES = re.compile("[\ud800-\udfff]")
# Claude Code reads these as a slash command or a shell command at a message's start, and
# a leading space makes it plain text. An agent may name others (agents/profile.py).
LEADERS = ("/", "!")
GUARD = " "
WORD_JOINER = "\u2060"  # a guard for agents that trim spaces away: zero-width, never drawn


def clean(text: str) -> str:
    """Remove everything that would act on a terminal; keep newlines and tabs.

    CRLF and lone CR become LF first so that line structure survives; every other C0/C1
    control, DEL and escape sequence is dropped, and a lone surrogate becomes U+FFFD.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _ESCAPES.sub("", text)
    return _SURROGATES.sub("\ufffd", _CONTROLS.sub("", text))


def as_message(text: str, leaders: tuple[str, ...] = LEADERS, guard: str = GUARD) -> str:
    """Cleaned text that the agent reads as a message, never as a command: a text that
    starts with one of the agent's LEADERS gets its GUARD in front."""
    text = clean(text).strip("\n")
    if text.startswith(leaders):
        text = guard + text
    if text.endswith("\\"):
        # Claude Code 2.1.197 reads `\` + Enter as "insert a newline" and drops the `\`:
        # a trailing space keeps the Enter a submit, and the input trims it on submit.
        text += " "
    return text


def one_line(text: str) -> str:
    """TEXT as a single line, for an agent that reads lines: a newline would submit the
    first line on its own, so lines are joined with a space and blank ones dropped."""
    return " ".join(line.strip() for line in text.split("\n") if line.strip())


class Typist:
    """Types into the agent: pasted text, a pause, then Enter in its own write."""

    def __init__(
        self,
        write: Callable[[bytes], None],
        pause: Callable[[float], None] = time.sleep,
        submit_pause_s: float = SUBMIT_PAUSE_S,
        bracketed: Callable[[], bool] = lambda: True,
    ) -> None:
        self._write = write
        self._pause = pause
        self._submit_pause_s = submit_pause_s
        self._bracketed = bracketed  # whether the agent turned bracketed paste on

    def pastes(self) -> bool:
        """Whether the agent has bracketed paste switched on now."""
        return self._bracketed()

    def paste(self, text: str, plain: bool = True) -> bool:
        """Type already-cleaned text without submitting it: as one bracketed paste if the
        agent asked for those, else as one line of plain text (`one_line`), unless PLAIN
        is False (then nothing is typed); whether it was typed."""
        if self._bracketed():
            self._write(PASTE_START + text.encode() + PASTE_END)
        elif plain:
            self._write(one_line(text).encode())
        else:
            return False
        return True

    def command(self, command: str) -> None:
        """Type a slash command (e.g. /clear) as keystrokes and submit it."""
        self.keys(command)
        self.enter()

    def keys(self, text: str) -> None:
        """Type already-cleaned text as keystrokes, without submitting it."""
        self._write(text.encode())

    def key(self, key: bytes) -> None:
        """Press one key (e.g. Esc), alone in its write."""
        self._write(key)

    def pause(self) -> None:
        """The pause that separates keys a TUI must see as separate presses."""
        self._pause(self._submit_pause_s)

    def enter(self) -> None:
        """Pause, then Enter in its own write."""
        self.pause()
        self._write(b"\r")
