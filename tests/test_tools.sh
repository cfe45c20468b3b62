# Where the test command keeps what it installs (sourced by tests/run_tests.sh and tests/venv_python.sh).
# Outside the checkout: `claude plugin install` copies the whole plugin folder into Claude Code's plugin cache, so a
# venv or an npm tree inside the checkout would be installed with the plugin. Each path can be set from outside.
CLAUDE_CODE_VERSION=2.1.332
LONGMEMEVAL_TEST_CACHE=${LONGMEMEVAL_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/longmemeval-benchmarker}
LONGMEMEVAL_TEST_VENV=${LONGMEMEVAL_TEST_VENV:-$LONGMEMEVAL_TEST_CACHE/test-venv}
LONGMEMEVAL_CLAUDE_CODE_DIR=${LONGMEMEVAL_CLAUDE_CODE_DIR:-$LONGMEMEVAL_TEST_CACHE/claude-code-$CLAUDE_CODE_VERSION}
export LONGMEMEVAL_TEST_VENV LONGMEMEVAL_CLAUDE_CODE_DIR  # the tests find the pinned CLI through the latter
