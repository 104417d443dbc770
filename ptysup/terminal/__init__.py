"""The terminal: the agent's PTY, the person's tty, the hot relay between them and the screen model.

pty_, tty_ and relay move bytes (bytes out before any parsing); screen (with reflow, its
lines rewrapped at a resize), modes, cursor and probes read them; inject and keys type
into the agent and read ptysup's escape key; status and ticker draw the status row;
record, castwriter and castread keep the recording.
It may import only the shared modules loose in ptysup/ (events, logread); one import runs
back up, allowed by name in pyproject.toml: the status row formats elapsed time as the
supervisor's prompt does.
"""
