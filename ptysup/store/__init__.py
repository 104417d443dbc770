"""The run on disk: its directory under .ptysup/runs/, its state.json, its locks.

rundir names and finds a run's files and reads its events back; runstate keeps state.json
current from the events; pidlock is the lock that says a run is alive; readback reads a
run's files within bounds (a damaged one never hangs or crashes a reader); listing makes
each run a row; durable fsyncs a file and the folder naming it; pagelink says where
`ptysup serve --control`'s page is, for a run that waits on a person.
It may import agents (what a question is), supervisor's formatting and the shared modules
loose in ptysup/, never the run, the command line or a view: a run writes through it, and
the views (runs, replay, attach, serve) read through it.
"""
