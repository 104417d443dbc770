"""One supervised run, from its log opening to its exit code.

lifecycle opens the run's files and says its end; app takes the project's start
(startstate: the checks' baseline, a snapshot, the protected files) and starts the agent,
and wiring (the composition root) connects the terminal, the screen model, the supervisor
and the store to the loop, which waits for each turn end and acts on the verdict of the
decision path (decision: evidence → judge → checks → tamper guard → second opinion).
evidence, memory, checks, changes and gitsnap gather what the supervisor is shown; verify,
tamper and protect what a [COMPLETE] must pass; plandriver, heartbeat, outputs and report
are the loop's and the run's helpers. limits holds the budgets as they stand, waiting what
the run waits on a person for, and steering carries out what a person asks from elsewhere
(`ptysup send/budget/stop`, the control page) through the attach socket.
It may import store, attach's server and its steering protocol, plan, supervisor, agents,
terminal and the shared modules loose in ptysup/, never the command line (cli), batch or
the views.
"""
