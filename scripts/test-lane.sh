#!/usr/bin/env bash
# Runs the end-to-end tests against other releases of the agents than the pinned ones CI
# tests, each installed once into .tools/lanes/:
#   scripts/test-lane.sh previous [PYTEST ARGS]   the compatibility lane: the pins before
#                                                 the current ones (Release.previous)
#   scripts/test-lane.sh latest [PYTEST ARGS]     every agent's newest release (npm view)
# Extra arguments go to pytest (default: -m e2e tests/e2e).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
exec .venv/bin/python -m ptysup.testing.lanes "$@"
