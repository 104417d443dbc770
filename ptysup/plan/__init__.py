"""Plans: what a plan file says, its steps and their own checks, within a file's bounds.

schema.py loads and checks a plan once; `ptysup check` (cli/check.py), the options a plan
may set (cli/planoptions.py) and the run's step driver (run/plandriver.py) all take it.
It may import only userfile and values, so the RunConfig and everything above can hold a
Plan.
"""
