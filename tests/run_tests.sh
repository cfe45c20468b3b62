#!/usr/bin/env bash
# The test command: install what the tests need (a .venv from PyPI, the Claude Code CLI from npm into .tools/),
# then run pytest. Extra arguments go to pytest. Exits non-zero when tests fail or none ran.
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=${LONGMEMEVAL_TEST_VENV:-.venv}
CLAUDE_CODE_VERSION=2.1.332

if [ ! -x "$VENV/bin/python" ]; then
  echo "tests: creating $VENV and installing requirements-dev.txt with pip (about a minute the first time) ..." >&2
  python3 -m venv "$VENV" || exit 1
else
  echo "tests: checking $VENV against requirements-dev.txt (pip: a few seconds when nothing changed) ..." >&2
fi
"$VENV/bin/python" -m pip install --disable-pip-version-check -q -r requirements-dev.txt || exit 1

# The pinned CLI in .tools/ (the Claude Code tests drive it; another version on PATH is not used).
if [ "$(.tools/node_modules/.bin/claude --version 2>/dev/null | cut -d' ' -f1)" != "$CLAUDE_CODE_VERSION" ]; then
  if command -v npm >/dev/null 2>&1; then
    echo "tests: installing the Claude Code CLI $CLAUDE_CODE_VERSION into .tools/ with npm (about a minute, once) ..." >&2
    npm install --silent --no-fund --no-audit --prefix .tools "@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}" \
      || echo "warning: could not install the Claude Code CLI; its tests will skip (or fail under CI)"
  else
    echo "warning: npm not found; the Claude Code tests will skip (or fail under CI)"
  fi
fi
export PATH="$PWD/.tools/node_modules/.bin:$PATH"

# The interactive Claude Code test (tests/test_claude_code_unattended.py) reads the CLI's screen through tmux.
if ! command -v tmux >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux >/dev/null 2>&1 \
      || { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux >/dev/null 2>&1; } \
      || echo "warning: could not install tmux; the interactive Claude Code test will skip (or fail under CI)"
  else
    echo "warning: tmux not found (apt-get install tmux); the interactive Claude Code test will skip (or fail under CI)"
  fi
fi

# The report's browser tests (tests/test_report_browser.py) drive Debian's Chromium: install it, as root, when missing.
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    log=$(mktemp)
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >"$log" 2>&1 \
      || { tail -n 5 "$log"; echo "warning: could not install chromium; the browser tests will skip (or fail under CI)"; }
    rm -f "$log"
  else
    echo "warning: chromium not found (apt-get install chromium); the browser tests will skip (or fail under CI)"
  fi
fi

"$VENV/bin/python" -m pytest "$@"
rc=$?
if [ "$rc" -eq 5 ]; then echo "error: pytest collected no tests" >&2; exit 1; fi
exit "$rc"
