"""opencode as an agent: its profile (turn ends and readiness from the reporter plugin
ptysup gives its terminal UI, its screens, its keys) and that plugin. It may import the
shared part of agents/ (events, firstrun, questions, settingsfile), terminal and the
shared modules loose in ptysup/.
"""
