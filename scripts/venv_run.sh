#!/usr/bin/env bash
# Run one of this plugin's scripts with the project's .longmemeval-venv python, from the project root.
#
# Usage: bash venv_run.sh SCRIPT.py [ARGS...]     (run from the project root)
#        bash venv_run.sh SCRIPT.sh [ARGS...]     (run with bash; LONGMEMEVAL_PYTHON names the venv python)
#
# SCRIPT is a file name in this script's own folder (scripts/ of the plugin), e.g. run_benchmark.py.
# The venv python is .longmemeval-venv/bin/python (POSIX) or .longmemeval-venv/Scripts/python.exe (Windows).
# One command per use, so a Claude Code permission rule such as
#   Bash(bash "${CLAUDE_PLUGIN_ROOT}/scripts/venv_run.sh" run_benchmark.py:*)
# matches it. Exit status: the script's; 2 when the venv is missing or SCRIPT is not one of ours.
set -u

if [ $# -lt 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
  sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
  if [ $# -lt 1 ]; then exit 2; fi
  exit 0
fi
NAME="$1"; shift
SCRIPTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
case "$NAME" in
  */*|*\\*|'') echo "error: '$NAME' is not a script name: pass a file name from $SCRIPTS (e.g. run_benchmark.py)" >&2; exit 2 ;;
  *.py|*.sh) ;;
  *) echo "error: '$NAME' is neither a .py nor a .sh script (usage: venv_run.sh SCRIPT.py [ARGS...])" >&2; exit 2 ;;
esac
if [ ! -f "$SCRIPTS/$NAME" ]; then
  echo "error: no script $NAME in $SCRIPTS: check the name (ls \"$SCRIPTS\")" >&2
  exit 2
fi

if [ -x .longmemeval-venv/bin/python ]; then PY=.longmemeval-venv/bin/python
elif [ -x .longmemeval-venv/Scripts/python.exe ]; then PY=.longmemeval-venv/Scripts/python.exe
else
  # what to run: the slash command in Claude Code, the shell command first in a shell (command_names.py says)
  SETUP_STEP=$(python3 "$SCRIPTS/command_names.py" --step SETUP 2>/dev/null) || SETUP_STEP=/longmemeval-setup
  echo "error: .longmemeval-venv not found in $(pwd): run setup first: $SETUP_STEP" >&2
  exit 2
fi

case "$NAME" in
  *.py) exec "$PY" "$SCRIPTS/$NAME" "$@" ;;
  *.sh) LONGMEMEVAL_PYTHON="$PY" exec bash "$SCRIPTS/$NAME" "$@" ;;
esac
