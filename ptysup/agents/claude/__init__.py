"""Claude Code as an agent: its profile (turn ends from its hooks, its screens, its keys),
the private hook channel and the hook client Claude Code runs (as a file, with `-I -S`:
it imports nothing of ptysup). It may import the shared part of agents/ (events,
firstrun, questions), terminal and the shared modules loose in ptysup/.
"""
