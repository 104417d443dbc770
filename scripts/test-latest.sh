#!/usr/bin/env bash
# The end-to-end tests against the newest release of every agent: scripts/test-lane.sh
# latest (kept for the name people know).
set -euo pipefail
exec bash "$(dirname "$0")/test-lane.sh" latest "$@"
