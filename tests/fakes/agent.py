"""A tiny TUI-like agent for tests: raw mode, bracketed paste, one message per Enter.

Every message it receives is appended as a JSON line to $FAKE_AGENT_LOG. A message
`crash` makes it exit 3; `hang` makes it go silent; anything else is answered after
$FAKE_AGENT_WORK seconds of printing.
"""

import json
import os
import sys
import termios
import time
import tty

PASTE_START, PASTE_END = b"\x1b[200~", b"\x1b[201~"


def main() -> int:
    fd = sys.stdin.fileno()
    tty.setraw(fd, termios.TCSANOW)
    os.write(1, b"\x1b[?2004hfake-agent ready\r\n> ")
    buf, pasting, work = bytearray(), False, float(os.environ.get("FAKE_AGENT_WORK", "0.2"))
    while True:
        data = os.read(fd, 65536)
        if not data:
            return 0
        i = 0  # an index, not slicing: a 64 KiB paste stays linear
        while i < len(data):
            if data.startswith(PASTE_START, i):
                pasting, i = True, i + len(PASTE_START)
            elif data.startswith(PASTE_END, i):
                pasting, i = False, i + len(PASTE_END)
            elif data[i : i + 1] == b"\r" and not pasting:
                i += 1
                message = buf.decode()
                buf = bytearray()
                with open(os.environ["FAKE_AGENT_LOG"], "a") as f:
                    f.write(json.dumps({"message": message}) + "\n")
                if message.strip() == "crash":
                    return 3
                if message.strip() == "hang":
                    continue
                os.write(1, b"\r\nworking")
                deadline = time.monotonic() + work
                while time.monotonic() < deadline:
                    time.sleep(0.05)
                    os.write(1, b".")
                os.write(1, b"\r\ndone: " + message.encode()[:60].replace(b"\n", b" ") + b"\r\n> ")
            else:
                buf += data[i : i + 1]
                i += 1


if __name__ == "__main__":
    sys.exit(main())
