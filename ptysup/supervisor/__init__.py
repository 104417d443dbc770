"""The supervisor: the fresh `claude -p` asked at every turn end what to do next.

prompt.py builds its bounded prompt, runner.py runs one process per decision (with a warm
spare), parse.py reads its answer into a `Decision`, decide.py retries and backs off, and
judge.py adds ptysup's flags to a Claude Code supervisor's command line (and to the other
agents' one-shot modes; geminijudge.py writes a `gemini -p` judge's policy and home).
It may import agents (what the agent reported), terminal and the shared modules loose in
ptysup/, never the run, the store or the command line.
"""
