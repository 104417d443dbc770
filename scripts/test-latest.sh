#!/usr/bin/env bash
# Runs the end-to-end tests against the newest release of every agent ptysup supports
# (npm view PACKAGE version), each installed once into .tools/latest/, instead of the
# pinned releases CI tests. Extra arguments go to pytest (default: -m e2e tests/e2e).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
exec .venv/bin/python -m ptysup.testing.latest "$@"
