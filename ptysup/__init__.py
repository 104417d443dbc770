"""ptysup: run an AI coding agent under a PTY and supervise it with a fresh `claude -p`."""

__version__ = "0.1.0"
