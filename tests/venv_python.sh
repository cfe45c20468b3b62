#!/usr/bin/env bash
# The tests' python (the venv tests/run_tests.sh installs), for the benchmarks and one-off test runs:
#   bash tests/venv_python.sh tests/benchmarks/run_all.py
#   bash tests/venv_python.sh -m pytest -q tests/score/test_metrics.py
set -u
cd "$(dirname "$0")/.."
. tests/test_tools.sh
if [ ! -x "$LONGMEMEVAL_TEST_VENV/bin/python" ]; then
  echo "error: no test venv at $LONGMEMEVAL_TEST_VENV: run bash tests/run_tests.sh --install-only first" >&2
  exit 2
fi
export PATH="$LONGMEMEVAL_CLAUDE_CODE_DIR/node_modules/.bin:$PATH"
exec "$LONGMEMEVAL_TEST_VENV/bin/python" "$@"
