"""Run by Claude Code for each hook: forwards the hook's JSON to ptysup's private socket.

Started as `python -I -S hook_client.py SOCKET TOKEN` so it imports nothing but the
standard library and starts fast (the C `_socket` module: `import socket` would add
about 10 ms of enum and selectors to every hook, and the Stop hook's is the turn end's
latency). It never fails the hook: if ptysup is gone it exits 0.
"""

import _socket
import sys


def main() -> int:
    """Send `TOKEN\\n` + the hook payload from stdin to the socket."""
    path, token = sys.argv[1], sys.argv[2]
    payload = sys.stdin.buffer.read()
    sock = None
    try:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        sock.settimeout(5)
        sock.connect(path)
        sock.sendall(token.encode() + b"\n" + payload)
        sock.shutdown(_socket.SHUT_WR)
        sock.recv(1)  # wait for ptysup to take it, so hooks arrive in order
    except OSError:
        pass
    finally:
        if sock is not None:
            sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
