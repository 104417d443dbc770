"""The agent side of a run: everything that differs between agents, and the session the loop drives.

profile.py is the interface (`AgentProfile`: the agent's command line and settings, how a
turn end shows, how to type, clear and exit); claude.py (Claude Code: hooks, first-run
screens, questions, the final frame) and generic.py (any other CLI agent) implement it;
session.py is the agent as the loop sees it, person.py the person at the keyboard.
It may import terminal and the shared modules loose in ptysup/, never the run, the store,
the supervisor or the command line: it reports plain events (events.py) to the loop.
"""
