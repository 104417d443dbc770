"""`ptysup attach`: watching a run's terminal live from another terminal, and steering it.

wire.py       the framed messages on the socket
snapshot.py   the screen model re-emitted as bytes that draw it
server.py     the run's side: a Unix socket in a private directory, the output fanned out,
              a steering request handed to the run
client.py     `ptysup attach RUN`: the viewer's side
steerproto.py a steering request (send, budget, stop, approve) and its values, on the wire
steer.py      the steering client the CLI and the control page call
steercli.py   `ptysup send`, `ptysup budget`, `ptysup stop`

It may import store (to find a run), agents (the person's reports), terminal and the
shared modules, never the run or the command line: the run imports its server.
"""
