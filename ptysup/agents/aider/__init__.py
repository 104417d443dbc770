"""aider as an agent ("generic plus"): its notifications command for turn ends, its screen
for the prompt and its `(Y)es/(N)o` confirmations, which ptysup never answers yes. It may
import the shared part of agents/ (events, firstrun, questions), terminal and the shared
modules loose in ptysup/.
"""
