"""The supervisor: the fresh one-shot agent (`claude -p` by default) asked at every turn
end what to do next.

prompt.py builds its bounded prompt, runner.py runs one process per decision (with a warm
spare), parse.py reads its answer into a `Decision`, decide.py retries and backs off, and
judge.py adds ptysup's flags to a supervisor's command line, as the folder of the agent
whose one-shot mode it is says (agents/<name>/judge.py, through the registry).
It may import agents (what the agent reported), terminal and the shared modules loose in
ptysup/, never the run, the store or the command line.
"""
