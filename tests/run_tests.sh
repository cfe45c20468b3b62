#!/usr/bin/env bash
# The test command: install what the tests need (a venv from PyPI, the pinned Claude Code CLI from npm, Chromium
# and tmux from apt when missing), then run pytest, one process per core. Extra arguments go to pytest;
# --install-only stops after the install step; --fast (first) runs the tests a developer runs while working: all
# but the slow kinds pytest.ini lists (real Claude Code CLI, browser, background and batch runs, kill and resume),
# after installing only the venv (no CLI, Chromium or tmux), with two pytest processes per core. The venv and the
# CLI live outside the checkout (tests/test_tools.sh: under ${XDG_CACHE_HOME:-~/.cache}/longmemeval-benchmarker/, or
# LONGMEMEVAL_TEST_VENV / LONGMEMEVAL_CLAUDE_CODE_DIR), so installing the plugin from this checkout installs only the
# plugin.
# Exits non-zero when the install or the tests fail, or no test ran.
set -uo pipefail
cd "$(dirname "$0")/.."
. tests/test_tools.sh
VENV=$LONGMEMEVAL_TEST_VENV
INSTALL_ONLY=0
FAST=0
if [ "${1:-}" = "--install-only" ]; then INSTALL_ONLY=1; shift; fi
if [ "${1:-}" = "--fast" ]; then FAST=1; shift; fi

for old in .venv .tools; do  # what an older test command left in the checkout: it would be installed as plugin files
  if [ -d "$old" ] && [ ! -L "$old" ]; then
    echo "note: $old/ in this checkout is from an older test command and is no longer used; claude plugin install" \
         "would copy it with the plugin: delete it (rm -rf $old)" >&2
  fi
done

# pip takes ~2 s even when nothing changed: it is skipped while the requirement files are the ones it last installed
# (their sha256 in $STAMP; delete that file to make it check again).
STAMP=$VENV/.longmemeval-test-requirements.sha256
wanted=$(cat requirements-dev.txt scripts/requirements.txt | sha256sum | cut -d' ' -f1)
if [ ! -x "$VENV/bin/python" ]; then
  echo "tests: creating $VENV and installing requirements-dev.txt with pip (about a minute the first time) ..." >&2
  mkdir -p "$(dirname "$VENV")" && python3 -m venv "$VENV" || exit 1
elif [ "$(cat "$STAMP" 2>/dev/null)" != "$wanted" ]; then
  echo "tests: checking $VENV against requirements-dev.txt (pip: a few seconds when nothing changed) ..." >&2
fi
if [ "$(cat "$STAMP" 2>/dev/null)" != "$wanted" ]; then
  "$VENV/bin/python" -m pip install --disable-pip-version-check -q -r requirements-dev.txt || exit 1
  echo "$wanted" >"$STAMP.$$" && mv "$STAMP.$$" "$STAMP"
fi

# One test process per core (pytest-xdist): in one process the suite kept one core of two busy and took over 10
# minutes. Work done once for many tests is shared between the processes (tests/shared_work.py).
# LONGMEMEVAL_TEST_WORKERS=0 runs everything in this process.
run_pytest() {
  "$VENV/bin/python" -m pytest -n "${LONGMEMEVAL_TEST_WORKERS:-auto}" "$@"
  local rc=$?
  if [ "$rc" -eq 5 ]; then echo "error: pytest collected no tests" >&2; exit 1; fi
  exit "$rc"
}

if [ "$FAST" = 1 ]; then
  # the markers pytest.ini lists as slow ("name: slow: ..."), each left out
  slow=$(sed -n 's/^ *\([a-z_]*\): slow:.*/\1/p' pytest.ini | paste -sd' ')
  [ -n "$slow" ] || { echo "error: pytest.ini lists no slow marker" >&2; exit 1; }
  # Two workers per core: with one, the fast set kept 1.4 cores of 2 busy (its tests wait on the commands they
  # start); on 2 cores, quiet, it took 214-218 s with 2 workers, 205 s with 3, 163-173 s with 4, 181 s with 6.
  : "${LONGMEMEVAL_TEST_WORKERS:=$(( 2 * $(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1) ))}"
  run_pytest -m "not (${slow// / or })" "$@"
fi

# The pinned CLI (the Claude Code tests drive it; another version on PATH is not used).
TOOLS=$LONGMEMEVAL_CLAUDE_CODE_DIR
if [ "$("$TOOLS/node_modules/.bin/claude" --version 2>/dev/null | cut -d' ' -f1)" != "$CLAUDE_CODE_VERSION" ]; then
  if command -v npm >/dev/null 2>&1; then
    echo "tests: installing the Claude Code CLI $CLAUDE_CODE_VERSION into $TOOLS with npm (about a minute, once) ..." >&2
    mkdir -p "$TOOLS" && npm install --silent --no-fund --no-audit --prefix "$TOOLS" \
      "@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}" \
      || echo "warning: could not install the Claude Code CLI; its tests will skip (or fail under CI)"
  else
    echo "warning: npm not found; the Claude Code tests will skip (or fail under CI)"
  fi
fi
export PATH="$TOOLS/node_modules/.bin:$PATH"

# The report's browser tests drive Debian's Chromium, the interactive Claude Code tests drive tmux: install them,
# as root, when missing.
missing=""
command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
command -v tmux >/dev/null 2>&1 || missing="$missing tmux"
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    log=$(mktemp)
    # shellcheck disable=SC2086  # one word per package
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing; } >"$log" 2>&1 \
      || { tail -n 5 "$log"; echo "warning: could not install$missing; their tests will skip (or fail under CI)"; }
    rm -f "$log"
  else
    echo "warning:$missing not found (apt-get install$missing); the tests that need them will skip (or fail under CI)"
  fi
fi

if [ "$INSTALL_ONLY" = 1 ]; then
  echo "tests: installed (venv $VENV, Claude Code CLI $TOOLS)" >&2
  exit 0
fi
run_pytest "$@"
