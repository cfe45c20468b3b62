#!/usr/bin/env bash
# Pre-flight for the LongMemEval iteration loop: one line per check ("ok   ..." or "FAIL ... -> fix"),
# exit 1 when any check fails. Never prints a key's value, only its name.
#
# Usage: bash scripts/check_setup.sh [--project P]
#
# Checks: the venv python exists; the work tree is on the loop branch (config loop.branch, default
# longmemeval-iter); the loop remote exists and accepts a push (git push --dry-run); the API keys the loop
# needs are set; the loop judge is openai:gpt-4o; memory-ref's three symbolic flags are on (memory-ref and its
# copies only: your own system gets no symbolic option, nothing to check). When all of them pass,
# creates history_max_effort.md and .max_effort_round (0) when missing.
set -u

PROJECT="."
while [ $# -gt 0 ]; do
  case "$1" in
    --project) PROJECT="${2:?--project needs a path}"; shift 2 ;;
    --project=*) PROJECT="${1#--project=}"; shift ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "error: unknown argument '$1' (usage: check_setup.sh [--project P])" >&2; exit 2 ;;
  esac
done
# Under Claude Code (the loop's agent holds standing permissions) the project is the working folder or below it.
if [ -n "${CLAUDE_CODE_SESSION_ID:-}" ]; then
  HERE="$(pwd -P)"
  THERE="$(cd "$PROJECT" 2>/dev/null && pwd -P)"
  case "$THERE/" in
    "$HERE"/*|/) ;;
    *) echo "error: --project $PROJECT is outside the working folder $HERE: in a loop session (a loop command under Claude Code) the plugin's scripts read code and write only inside the project they run in (run it from that project's own folder, or yourself in a terminal)" >&2
       exit 2 ;;
  esac
fi
if ! cd "$PROJECT" 2>/dev/null; then
  echo "error: project directory '$PROJECT' does not exist (pass --project <your project root>)" >&2
  exit 2
fi
SCRIPTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
FAILED=0
ok()   { echo "ok   $1"; }
fail() { echo "FAIL $1 -> $2"; FAILED=$((FAILED + 1)); }

# 1. venv python (JSON parsing falls back to python3 so the other checks still report)
if [ -x .longmemeval-venv/bin/python ]; then PY=.longmemeval-venv/bin/python
elif [ -x .longmemeval-venv/Scripts/python.exe ]; then PY=.longmemeval-venv/Scripts/python.exe
else PY=""
fi
if [ -n "$PY" ]; then
  ok "venv python: $PY"
else
  fail "venv python missing (.longmemeval-venv)" "run /longmemeval-setup"
  if command -v python3 >/dev/null 2>&1; then PY=python3; else
    echo "FAIL no python3 either: cannot read the loop configuration -> install Python 3.10+ and run /longmemeval-setup"
    exit 1
  fi
fi

# The loop configuration (config.json "loop" merged over the defaults), one value per call.
if ! CONFIG_JSON="$("$PY" "$SCRIPTS/loop_guard.py" config --project . 2>&1)"; then
  fail "loop configuration unreadable: $CONFIG_JSON" "fix .longmemeval-benchmarks/config.json"
  exit 1
fi
cfg() {
  printf '%s' "$CONFIG_JSON" | "$PY" -c '
import json, sys
value = json.load(sys.stdin)
for part in sys.argv[1].split("."):
    value = value.get(part) if isinstance(value, dict) else None
if isinstance(value, list):
    print(" ".join(str(v) for v in value))
elif isinstance(value, bool):
    print("true" if value else "false")
elif value is not None:
    print(value)
' "$1"
}
BRANCH="$(cfg branch)"
REMOTE="$(cfg remote)"

# 2. loop branch
CURRENT="$(git branch --show-current 2>/dev/null || true)"
if [ -z "$CURRENT" ] && ! git rev-parse --git-dir >/dev/null 2>&1; then
  fail "not a git repository: $(pwd)" "run the loop from the project's git work tree"
elif [ "$CURRENT" = "$BRANCH" ]; then
  ok "on the loop branch $BRANCH"
else
  fail "on branch '${CURRENT:-detached HEAD}', not the loop branch $BRANCH" "git switch $BRANCH (create it once with git switch -c $BRANCH)"
fi

# 3. remote exists and accepts a push of the loop branch
if ! git remote get-url "$REMOTE" >/dev/null 2>&1; then
  fail "git remote '$REMOTE' does not exist" "git remote add $REMOTE <url>, or set loop.remote in .longmemeval-benchmarks/config.json"
elif PUSH_OUT="$(git push --dry-run "$REMOTE" "HEAD:refs/heads/$BRANCH" 2>&1)"; then
  ok "remote $REMOTE accepts a push of $BRANCH (dry run)"
else
  fail "git push --dry-run $REMOTE HEAD:$BRANCH failed: $(printf '%s' "$PUSH_OUT" | tail -n 1)" "fix the remote URL or credentials, or git pull --rebase $REMOTE $BRANCH"
fi

# 4. API keys (names only)
for KEY in $(cfg required_keys); do
  if [ -n "${!KEY:-}" ]; then ok "$KEY is set"; else fail "$KEY is not set" "export $KEY=... in the shell that runs the loop"; fi
done

# 5. judge lock
JUDGE="$(cfg judge)"
if [ "$JUDGE" = "openai:gpt-4o" ] || [ "$JUDGE" = "openai:gpt-4o-2024-08-06" ]; then
  ok "loop judge is $JUDGE"
else
  fail "loop judge is '$JUDGE', not openai:gpt-4o" "set loop.judge to openai:gpt-4o in .longmemeval-benchmarks/config.json"
fi

# 6. memory-ref's symbolic stack on (its copies too; another target gets no symbolic option: one ok line)
SYMBOLIC="$("$PY" "$SCRIPTS/loop_guard.py" symbolic --project . 2>&1)"
printf '%s\n' "$SYMBOLIC"
FAILED=$((FAILED + $(printf '%s\n' "$SYMBOLIC" | grep -c '^FAIL')))

# 7. loop state files: only in a project that passed every check above (never litter a folder that is not one)
if [ "$FAILED" -gt 0 ]; then
  echo "skip loop state files (history_max_effort.md, .max_effort_round): created once the checks above pass"
elif CREATED="$("$PY" "$SCRIPTS/rounds.py" --project . init 2>&1 >/dev/null)"; then
  ok "round counter and history_max_effort.md present ($CREATED)"
else
  fail "cannot create the loop state files: $CREATED" "check write permission in $(pwd)"
fi

if [ "$FAILED" -gt 0 ]; then
  echo "$FAILED check(s) failed: fix them before starting the loop" >&2
  exit 1
fi
echo "all checks passed" >&2
exit 0
