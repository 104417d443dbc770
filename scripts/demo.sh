#!/usr/bin/env bash
# Sets up the demo's part (scripts/setup.sh demo: ptysup's wheel and the pinned Claude Code, no
# test tools), then runs the main job on the embedded default:
#   ptysup "implement feature X" --max-iter 50
# with the real Claude Code driven by the bundled fake model, on a small sample project
# copied to a temp dir. In a terminal you watch the agent's TUI while ptysup supervises it.
# `--agent codex` runs it with the real Codex CLI as the agent (installed on first use);
# `--agent gemini` and `--agent qwen` with Gemini CLI or Qwen Code as agent and supervisor;
# `--agent opencode` with opencode as both (installed on first use).
set -euo pipefail
cd "$(dirname "$0")/.."
# --help and --clean need nothing installed: they run before any setup, with the
# standard library only. (Without a Python, setup says what is missing.)
py=${PYTHON:-python3}
if command -v "$py" >/dev/null; then
  for arg in "$@"; do
    case $arg in
      -h | --help) exec "$py" -m ptysup.testing.demo --help ;;
    esac
  done
  if [ "$*" = --clean ]; then
    exec "$py" -m ptysup.testing.demo --clean
  fi
fi
bash scripts/setup.sh demo
# The demo runs ptysup as `pip install .` installs it (setup.sh put its wheel in
# .tools/ptysup), isolated (-I) so this checkout's folder never shadows it.
export PTYSUP_TOOLS_DIR="$PWD/.tools"
exec .tools/ptysup/bin/python -I -m ptysup.testing.demo "$@"
