"""The command line: a person's words become a `RunConfig` and a run's outcome an exit code.

It owns the run's options and their checks (commandline, optioncheck, planoptions), the
config files (configfile) and the task text (tasktext), `--help` (help), shell completion
(completion), the small subcommands `ptysup doctor`, `ptysup check` and `ptysup resume`, and
the git token a pod's push is given, taken out of the environment as ptysup starts (gitauth).
It may import everything below it (run, store, plan, supervisor, agents, terminal and the
shared modules loose in ptysup/); nothing but `__main__`, `batch`, `engines` and `views`
imports it.
Subcommands are named by string in commandline.SUBCOMMANDS and imported only when used,
so `ptysup --help` loads none of the run.
"""
