"""Run by Claude Code for each hook: forwards the hook's JSON to ptysup's private socket.

Started as `python -I -S hook_client.py SOCKET TOKEN` so it imports nothing but the
standard library and starts fast. It never fails the hook: if ptysup is gone it exits 0.
"""

import socket
import sys


def main() -> int:
    """Send `TOKEN\\n` + the hook payload from stdin to the socket."""
    path, token = sys.argv[1], sys.argv[2]
    payload = sys.stdin.buffer.read()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(path)
            sock.sendall(token.encode() + b"\n" + payload)
            sock.shutdown(socket.SHUT_WR)
            sock.recv(1)  # wait for ptysup to take it, so hooks arrive in order
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
