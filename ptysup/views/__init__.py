"""Reading runs back: `ptysup runs` (the listing, `--watch`, `prune`) and `ptysup replay`.

They read the store and the recording and never start or steer a run. `ptysup attach` and
`ptysup serve` are views too, each in its own package beside this one.
It may import store, batch (prune's worktrees), terminal (to replay a recording) and the
shared modules loose in ptysup/, never the run or the command line.
"""
