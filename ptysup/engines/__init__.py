"""Running ptysup on engines people already run: GitHub Actions and Kubernetes.

ci.py is `python -m ptysup.engines.ci`: Claude Code's config for an unattended run and the
step's outputs and summary read from the run directory.
It may import the store, the run's report, attach's record name, batch's worktree pathspecs,
testing's Claude Code setup and the shared modules, and nothing imports it.
"""
