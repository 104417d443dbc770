#!/usr/bin/env bash
# Sets itself up (scripts/setup.sh test: the demo's part and the test tools), then runs
# lint, types, the import layers, the docs site's strict build and the whole test suite,
# end-to-end tests against the real Claude Code and browser tests in headless Chromium
# included (every marker: no -m here).
# Extra arguments go to pytest (e.g. -k demo, -m "not e2e").
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
# --help answers before anything is set up (the setup installs ~600 MB on a fresh machine).
case ${1:-} in
  -h | --help)
    cat <<'EOF'
Usage: scripts/test.sh [PYTEST-ARGUMENT...]

Sets itself up (scripts/setup.sh test: a venv in .venv with ptysup, its test and docs
tools, and the pinned agents in .tools/; as root also tmux, Chromium and the other
system packages the tests use, with apt-get), then runs ruff, mypy, the import layers,
the docs site's strict build, the Kubernetes files' validation and pytest: every test,
end-to-end ones against the real agents included, then the few that load the machine
themselves (marker `alone`) on their own. Exit code: 0 when all pass.

  PYTEST-ARGUMENT  passed on to pytest, e.g. -m "not e2e" (the fast part),
                   -k demo (tests by name), -x (stop at the first failure);
                   pytest's own help: .venv/bin/python -m pytest --help
  -h, --help       this help (sets nothing up)

  PTYSUP_TEST_WORKERS=N  pytest-xdist workers for the first part (default 0: one
                         process; 2 is faster, but a few tests fail under its load)
EOF
    exit 0
    ;;
esac
# The whole run's time is printed at its end, whatever the outcome (the goal: 20 minutes
# on 2 cores, setup of a fresh clone included), with the slowest tests before it.
started=$SECONDS set_up='' tests_started=''
# shellcheck disable=SC2317  # run by the EXIT trap
took() {
  local total=$((SECONDS - started)) parts=''
  [ -n "$set_up" ] && parts=" (setup $((set_up - started)) s"
  [ -n "$tests_started" ] && parts+=", pytest $((SECONDS - tests_started)) s"
  [ -n "$parts" ] && parts+=")"
  echo "test.sh: took $((total / 60)) min $((total % 60)) s$parts" >&2
}
trap took EXIT
bash scripts/setup.sh test || exit $?
set_up=$SECONDS

.venv/bin/ruff check ptysup tests scripts || exit 1
.venv/bin/ruff format --check ptysup tests scripts || exit 1
.venv/bin/mypy || exit 1
# The layers in pyproject.toml ([tool.importlinter]): no import runs back up.
.venv/bin/lint-imports || exit 1

# The docs site, strictly: a broken link or anchor, or a page missing from mkdocs.yml's
# nav, fails (never --quiet: it hides the warnings that strict mode fails on). Built into a
# temp dir, so the checkout keeps no site/.
site=$(mktemp -d) || exit 1
NO_MKDOCS_2_WARNING=1 PYTHONWARNINGS=ignore::DeprecationWarning \
  .venv/bin/mkdocs build --strict --site-dir "$site"
rc=$?
rm -rf "$site"
if [ "$rc" -ne 0 ]; then
  echo "test.sh: the docs site does not build (mkdocs build --strict)" >&2
  exit 1
fi

# The Kubernetes base as `kubectl kustomize` builds it, strictly valid on every release from
# 1.29 (the oldest a managed cluster may still run) that kubernetes-validate knows. The
# docs' overlay example is built and validated per release by tests/integration.
versions=$(.venv/bin/python -m ptysup.testing.k8s_versions 1.29) || exit 1
manifests=$(.venv/bin/kubectl kustomize deploy/k8s) || exit 1
for version in $versions; do
  if ! printf '%s\n' "$manifests" | .venv/bin/kubernetes-validate --strict --quiet -k "$version" -; then
    echo "test.sh: deploy/k8s is not valid on Kubernetes $version" >&2
    exit 1
  fi
done

# The end-to-end tests run what ships: ptysup from its wheel, installed by setup.sh in
# .tools/ptysup (tests/helpers.py ptysup_argv), not this editable checkout.
export PTYSUP_UNDER_TEST="$PWD/.tools/ptysup/bin/python"
export PTYSUP_TOOLS_DIR="$PWD/.tools"
# Every e2e and browser test must run: a missing Claude Code or Chromium fails the suite
# instead of skipping.
export PTYSUP_REQUIRE_E2E=1
# The soak test's short form; PTYSUP_SOAK_DECISIONS=200 runs the full one.
export PTYSUP_SOAK_DECISIONS=${PTYSUP_SOAK_DECISIONS:-60}
# Two parts: the suite (on PTYSUP_TEST_WORKERS pytest-xdist workers; 0, the default, runs
# it in this process: on 2 workers a few tests fail under load, docs/development.md), then
# the tests marked `alone` on their own (they load the machine or measure it; pytest's
# --alone option, tests/conftest.py). Each part ends with its slowest tests. A failure in
# the first still runs the second. The variable is read here only: no run under test
# inherits it.
workers=${PTYSUP_TEST_WORKERS:-0}
unset PTYSUP_TEST_WORKERS
case $workers in
  '' | *[!0-9]*)
    echo "test.sh: PTYSUP_TEST_WORKERS must be a number of workers (0: none), not '$workers'" >&2
    exit 2
    ;;
esac
parallel=()
[ "$workers" -gt 0 ] && parallel=(-n "$workers" --dist worksteal)
tests_started=$SECONDS
.venv/bin/python -m pytest -p no:cacheprovider --durations=25 --alone=skip \
  "${parallel[@]}" "$@"
rc_suite=$?
.venv/bin/python -m pytest -p no:cacheprovider --durations=10 --alone=only "$@"
rc_alone=$?
# pytest's 5 is "no tests": a part the arguments left empty is fine, both empty is not.
if [ "$rc_suite" -eq 5 ] && [ "$rc_alone" -eq 5 ]; then
  echo "test.sh: pytest collected no tests" >&2
  exit 1
fi
for rc in "$rc_suite" "$rc_alone"; do
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ]; then
    exit "$rc"
  fi
done
exit 0
