"""The agent side of a run: everything that differs between agents, and the session the loop drives.

profile.py is the interface (`AgentProfile`: the agent's command line and settings, how a
turn end shows, how to type, clear and exit); each agent implements it in its own folder,
claude/ (Claude Code: hooks, its screens and keys) and generic/ (any other CLI agent), and
registry.py has one row per agent: adding an agent is a folder and a row. session.py is
the agent as the loop sees it, person.py the person at the keyboard, waits.py how long an
API error or usage limit waits, saved.py whether an agent saved a message of a
conversation (so a resume can reopen it); questions, firstrun and settle are still shared by the
session (Claude Code's today). release.py says what an agent's folder tells the test kit
(its pinned release, its private test home: each folder's testkit.py).
It may import terminal and the shared modules loose in ptysup/, never the run, the store,
the supervisor or the command line: it reports plain events (events.py) to the loop.
"""
