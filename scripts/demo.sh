#!/usr/bin/env bash
# Sets itself up, then runs the main job on the embedded default:
#   ptysup "implement feature X" --max-iter 50
# with the real Claude Code driven by the bundled fake model, on a small sample project
# copied to a temp dir. In a terminal you watch the agent's TUI while ptysup supervises it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m ptysup.testing.demo "$@"
