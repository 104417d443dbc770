"""Any other CLI agent: no hooks, a turn ends when its screen has been quiet a while.
It may import the shared part of agents/ (events, firstrun), terminal and the shared modules.
"""
