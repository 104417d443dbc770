"""ptysup's own escape key: a prefix key (Ctrl-] by default) followed by a command key.

Like ssh's `~.` or a terminal multiplexer's prefix. The relay feeds every chunk the person
types through `EscapeKeys.feed`, which returns the bytes for the agent and the commands
for ptysup; a prefix at the end of one read and its command key in the next are one press.
What the terminal reports between the two (its answer to the agent's query, a focus
event) is the agent's and goes on to it; the command key is still the next key pressed.
Pure and cheap: no I/O, one `bytes.find` per chunk when no prefix is pending.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from ptysup.terminal.reports import begun, report_end

DEFAULT_ESCAPE_KEY = "ctrl-]"


class KeyCommand(str, enum.Enum):
    """What the person asked ptysup to do."""

    STOP = "stop"  # end the run: the agent ended gracefully, outcome `stopped`
    PAUSE = "pause"  # take over: no decisions until resumed
    RESUME = "resume"
    TOGGLE = "toggle"  # pause when supervising, resume when paused
    MENU = "menu"  # the prefix was pressed: show the command keys
    CANCEL = "cancel"  # the key after the prefix was no command: hide them again


# The command keys after the prefix. The prefix pressed twice sends it to the agent.
COMMAND_KEYS: dict[bytes, KeyCommand] = {
    b"s": KeyCommand.STOP,
    b".": KeyCommand.STOP,
    b"p": KeyCommand.TOGGLE,
    b"r": KeyCommand.RESUME,
}

_NAMED = re.compile(r"(?:ctrl[-+]|c-|\^)(.)", re.IGNORECASE)


def parse_escape_key(value: str) -> bytes | None:
    """'ctrl-]', 'C-]', '^]' or 'ctrl-g' → the control byte; 'none' → None (no escape key).

    Raises ValueError for anything else: the escape key is one control key, so it can
    never be part of text, a UTF-8 character or an escape sequence's parameters.
    """
    text = value.strip()
    if text.lower() in ("none", "off", ""):
        return None
    m = _NAMED.fullmatch(text)
    if m is None:
        raise ValueError(f"{value!r} is not a control key (e.g. ctrl-], ^g, or none)")
    char = m.group(1).upper()
    code = ord(char) ^ 0x40
    # Ctrl-[ is Esc, Ctrl-M Enter, Ctrl-I Tab, Ctrl-H Backspace, Ctrl-C/Z/\ signals in
    # cooked mode and the agent's own interrupt: none of those may be taken from it.
    if not 0 < code < 0x20 or char in "[MIHCJ":
        raise ValueError(f"{value!r} cannot be the escape key (choose e.g. ctrl-] or ctrl-g)")
    return bytes([code])


def describe(key: bytes) -> str:
    """The key as the person reads it: b'\\x1d' → 'Ctrl-]'."""
    return "Ctrl-" + chr(key[0] ^ 0x40)


def _csi_u(key: bytes) -> bytes:
    # With the kitty keyboard protocol on, a terminal reports Ctrl+<key> as CSI code;5u.
    return b"\x1b[%d;5u" % ord(chr(key[0] ^ 0x40).lower())


@dataclass(frozen=True)
class Keys:
    """One chunk of the person's typing, split: what goes to the agent, what to ptysup."""

    forward: bytes
    commands: tuple[KeyCommand, ...] = ()


class EscapeKeys:
    """Finds `prefix` + command key in the person's typing (stateful across reads)."""

    def __init__(self, prefix: bytes) -> None:
        self.prefix = prefix
        self._forms = (prefix, _csi_u(prefix))
        self._pending = False  # the prefix ended the previous chunk
        self._begun = b""  # after the prefix, the start of a report the last read cut short

    def feed(self, data: bytes) -> Keys:
        """Split one read of the person's keys; every other byte is forwarded unchanged."""
        if self._begun:
            data, self._begun = self._begun + data, b""
        if not self._pending and not any(form in data for form in self._forms):
            return Keys(data)  # the hot path: no prefix anywhere
        out = bytearray()
        commands: list[KeyCommand] = []
        i = 0
        while i < len(data):
            if self._pending:
                self._pending = False
                i = self._command(data, i, out, commands)
                continue
            found = [(at, form) for form in self._forms if (at := data.find(form, i)) >= 0]
            if not found:
                out += data[i:]
                break
            at, form = min(found)
            out += data[i:at]
            i = at + len(form)
            self._pending = True
            commands.append(KeyCommand.MENU)
        return Keys(bytes(out), tuple(commands))

    def _command(self, data: bytes, i: int, out: bytearray, commands: list[KeyCommand]) -> int:
        """Read the key after a prefix at `data[i]`; returns where to go on."""
        # After Ctrl-Z Claude Code asks the terminal who it is, and the answers came
        # between a person's Ctrl-] and `s` (seen in tmux), which then went into its
        # input box: a report is passed on, and the key after it is the command.
        if (end := report_end(data, i)) is not None:
            out += data[i:end]
            self._pending = True
            return end
        if begun(data, i):
            self._begun = data[i:]
            self._pending = True
            return len(data)
        for form in self._forms:
            if data.startswith(form, i):
                out += self.prefix  # the prefix twice: send it once to the agent
                commands.append(KeyCommand.CANCEL)
                return i + len(form)
        key = data[i : i + 1]
        command = COMMAND_KEYS.get(key.lower())
        if command is None:
            # Not a command: the person gets both keys, as with ssh's escape character.
            out += self.prefix + key
            commands.append(KeyCommand.CANCEL)
        else:
            commands.append(command)
        return i + 1
