"""Running ptysup on engines people already run: GitHub Actions and Kubernetes.

ci.py is `python -m ptysup.engines.ci`: Claude Code's config for an unattended run, the
step's outputs and summary read from the run directory, and git's credential helper for a
pod's push. It may import the store, the run's report, attach's record name, batch's
worktree pathspecs, cli's git token (gitauth), testing's Claude Code setup and the shared
modules, and nothing imports it.
"""
