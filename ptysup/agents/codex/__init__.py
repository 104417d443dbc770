"""Codex CLI as an agent: its profile (ptysup's hooks on its command line, its in-band
OSC 7501 state, its screens and keys, `codex resume`). It may import the shared part of
agents/ (events, firstrun, questions), terminal and the shared modules loose in ptysup/.
"""
