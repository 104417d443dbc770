"""`ptysup batch`: many tasks at once, each its own headless run on its own git worktree.

schema.py       TASKS.yaml: the tasks, their options, checked strictly
concurrency.py  how many runs at once by default (CPUs, memory)
taskrun.py      one task as a run: its command line, and `ptysup batch run`
worktrees.py    git: the pinned base, a worktree and branch per task, commits, diff stats
result.py       what became of one task (TaskResult and its states), as all the others read it
scheduler.py    runs the tasks N at a time, stops them all on a signal
livestate.py    each running task's state from its run directory (describe(), cached)
display.py      what a person or a CI log sees while the batch runs
summary.py      the end: table, --summary-json, GitHub's step summary
pullrequest.py  --on-complete pr: push the branch, open a pull request with gh
remote.py       `batch run --push`: the remote read up front, the pod's token kept for the push
prune.py        `ptysup runs prune`: remove worktrees nothing needs any more
state.py        the batch's own state file: which task is where, so a rerun finishes it
command.py      `ptysup batch ...`: options → the pieces above → an exit code

It may import the command line (a task's options are a run's), the run, the store, plan
and the shared modules; views import its worktrees (`ptysup runs prune`) and its state (a
batch's row in `ptysup runs` and on `serve`'s page).
"""
