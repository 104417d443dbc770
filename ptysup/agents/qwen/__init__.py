"""Qwen Code as an agent: its profile (turn ends from its Stop hook, its screens, its keys,
its hook payloads in ptysup's vocabulary) and the system settings file that wires its hooks
in without touching the person's own settings. It may import the shared part of agents/
(events, firstrun, questions, settingsfile), terminal and the shared modules loose in
ptysup/.
"""
