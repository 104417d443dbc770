"""`ptysup attach`: watching a run's terminal live from another terminal.

wire.py      the framed messages on the socket
snapshot.py  the screen model re-emitted as bytes that draw it
server.py    the run's side: a Unix socket in a private directory, the output fanned out
client.py    `ptysup attach RUN`: the viewer's side

It may import store (to find a run), agents (the person's reports), terminal and the
shared modules, never the run or the command line: the run imports its server.
"""
