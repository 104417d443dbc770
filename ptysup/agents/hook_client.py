"""Run by the agent for each hook: forwards the hook's JSON to ptysup's private socket.

Started as `python -I -S hook_client.py ADDRESS [WAIT]` so it imports nothing but the
standard library and starts fast (the C `_socket` module: `import socket` would add
about 10 ms of enum and selectors to every hook, and the Stop hook's is the turn end's
latency). With WAIT (seconds) the hook is a request: ptysup's reply is printed on stdout
for the agent to read (e.g. the answer to a question). ADDRESS is a file in the run's
0700 directory holding the socket's path and the run's token, so that neither is on a
command line an agent prints. It never fails the hook: if ptysup is gone, or says
nothing, it prints nothing and exits 0.
"""

import _socket
import sys


def main() -> int:
    """Send `TOKEN[ reply]\\n` + the hook payload from stdin; print what ptysup answers."""
    wait = float(sys.argv[2]) if len(sys.argv) > 2 else None
    payload = sys.stdin.buffer.read()
    sock = None
    answer = []
    try:
        with open(sys.argv[1], encoding="utf-8") as address:
            path, token = address.read().split("\n")[:2]
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        sock.settimeout(5)
        sock.connect(path)
        head = token.encode() + (b" reply\n" if wait is not None else b"\n")
        sock.sendall(head + payload)
        sock.shutdown(_socket.SHUT_WR)
        if wait is not None:
            sock.settimeout(wait)
        # The first byte acknowledges (so hooks arrive in order); a reply may follow.
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer.append(chunk)
    except (OSError, ValueError):  # ptysup gone (its directory with it), or a torn file
        pass
    finally:
        if sock is not None:
            sock.close()
    reply = b"".join(answer)[1:]
    if reply:
        sys.stdout.buffer.write(reply)
        sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
