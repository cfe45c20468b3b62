#!/usr/bin/env bash
# The iteration loop's full run: one resumable run_benchmark.py --loop over the whole set.
#
# Usage: bash scripts/parallel_longmemeval.sh <N_PARALLEL> <BATCH> <TOTAL> [extra run_benchmark.py args]
#        bash scripts/parallel_longmemeval.sh <N_PARALLEL> <BATCH> <TOTAL> --background [--yes]
#        bash scripts/parallel_longmemeval.sh <N_PARALLEL> <BATCH> <TOTAL> --confirm [--yes] [--wait SECONDS]
#   N_PARALLEL  items in flight at once (--concurrency); pick it from references/model-config.md
#   BATCH       accepted for compatibility and ignored: the driver's concurrency and adaptive rate limiter
#               replace shell-level batches, and its checkpoints make any interruption resumable
#   TOTAL       --max; the loop guard refuses anything below the full set (the dataset's size, 500)
#   extra args  passed through last, e.g. --background (start the run detached and return at once; follow it
#               with run_status.py --run-id <id> --wait 100) or --yes (past the confirmCostUsd gate)
#   --noise-floor  the noise floor (noise_floor.py), re-entrant like --confirm: measured for the run's stack
#               already: it says so and exits 0. Else it samples the loop run's judged items (once), drops them,
#               resumes the run with --no-cache in the background and waits up to --wait seconds; still running
#               then: exit 4, run it again. Once every sampled item is re-run it records the flip rates.
#   --confirm   the termination step, re-entrant: run it again until it prints CONFIRMED or NOT CONFIRMED.
#               Below the target (confirm.py check) it says so and exits 0. At the target it records or resumes
#               the confirmation (confirm.py start --resume); while that rerun (the full set, new run id,
#               --no-cache) has not completed it starts or resumes it in the background and waits for it up to
#               --wait seconds (default 90, inside run_status.py: under Claude Code's 120 s Bash limit); still
#               running then: it prints the rerun's id and status line and exits 4. Once the rerun completed it
#               judges it (confirm.py finish --commit): CONFIRMED ends the loop, NOT CONFIRMED adopts its verdicts.
#
# Everything else comes from the loop configuration (.longmemeval-benchmarks/config.json "loop"): run id,
# variant, target, target model, judge, target options. The symbolic flags are passed exactly as configured,
# so a flag that is off makes the driver refuse the run instead of being silently switched on.
# Exit status is the driver's, one code per ending (lme/run/exit_codes.py; the table: skills/run-benchmark/SKILL.md,
# "What the exit status means"): 0 completed (or started, with --background), 1 failed (run this again: it
# resumes), 2 user error (or "BLOCKED: official judge retired" with the user's choices, or the successor baseline
# to take: the loop skill), 3 billing (then: rounds.py blocked --reason billing), 5 the estimate is above
# confirmCostUsd (ask, then add --yes), 6/7/8 paused (cost cap, cancelled batch, code changed), 130 interrupted;
# and 4 while the --confirm or --noise-floor rerun is still running.
set -u

if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0; fi
if [ $# -lt 3 ]; then
  echo "error: usage: parallel_longmemeval.sh <N_PARALLEL> <BATCH> <TOTAL> [extra args] (e.g. 8 133 500)" >&2
  exit 2
fi
N_PARALLEL="$1"; BATCH="$2"; TOTAL="$3"; shift 3
for VALUE in "$N_PARALLEL" "$BATCH" "$TOTAL"; do
  case "$VALUE" in ''|*[!0-9]*) echo "error: '$VALUE' is not a whole number (usage: <N_PARALLEL> <BATCH> <TOTAL>)" >&2; exit 2 ;; esac
done

CONFIRM=0
NOISE=0
CONFIRM_WAIT=90
if [ "${1:-}" = "--confirm" ] || [ "${1:-}" = "--noise-floor" ]; then
  if [ "$1" = "--confirm" ]; then CONFIRM=1; else NOISE=1; fi
  MODE="$1"; shift
  CONFIRM_ARGS=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --yes) CONFIRM_ARGS+=(--yes); shift ;;
      --wait) case "${2:-}" in ''|*[!0-9]*) echo "error: --wait needs whole seconds (e.g. --confirm --wait 90)" >&2; exit 2 ;; esac
              CONFIRM_WAIT="$2"; shift 2 ;;
      *) echo "error: $MODE takes no other argument but --yes and --wait SECONDS (usage: <N_PARALLEL> <BATCH> <TOTAL> $MODE [--yes] [--wait SECONDS])" >&2; exit 2 ;;
    esac
  done
  set -- ${CONFIRM_ARGS[@]+"${CONFIRM_ARGS[@]}"}
fi

SCRIPTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ -n "${LONGMEMEVAL_PYTHON:-}" ]; then PY="$LONGMEMEVAL_PYTHON"
elif [ -x .longmemeval-venv/bin/python ]; then PY=.longmemeval-venv/bin/python
elif [ -x .longmemeval-venv/Scripts/python.exe ]; then PY=.longmemeval-venv/Scripts/python.exe
else echo "error: venv missing (.longmemeval-venv): run /longmemeval-setup" >&2; exit 2
fi

# The driver's arguments from the loop configuration, one per line.
if ! LOOP_ARGS="$("$PY" "$SCRIPTS/loop_guard.py" config --project . | "$PY" -c '
import json, sys
cfg = json.load(sys.stdin)
print("--run-id"); print(cfg["run_id"])
print("--variant"); print(cfg["variant"])
print("--target"); print(cfg["target"])
if cfg.get("target_model"):
    print("--target-model"); print(cfg["target_model"])
print("--judge-model"); print(cfg["judge"])
for key, value in sorted(cfg["targetOptions"].items()):
    if key in ("symbolic_resolver", "symbolic_temporal", "symbolic_bypass"):
        print(("--" if value is True else "--no-") + key.replace("_", "-"))
    else:
        print("--target-option"); print(key + "=" + json.dumps(value))
')"; then
  echo "error: cannot read the loop configuration (run scripts/check_setup.sh)" >&2
  exit 2
fi
set --  --project . --loop --max "$TOTAL" --concurrency "$N_PARALLEL" "$@"
ARGS=()
while IFS= read -r LINE; do ARGS+=("$LINE"); done <<EOF
$LOOP_ARGS
EOF

if [ "$NOISE" = 1 ]; then
  RUN_ID="${ARGS[1]}"
  "$PY" "$SCRIPTS/noise_floor.py" --project . check --run-id "$RUN_ID"
  STATUS=$?
  if [ "$STATUS" -eq 0 ]; then echo "noise floor measured for this stack: go on with step 4"; exit 0; fi
  if [ "$STATUS" -ne 1 ]; then exit "$STATUS"; fi
  "$PY" "$SCRIPTS/noise_floor.py" --project . start --run-id "$RUN_ID" || exit $?
  if ! "$PY" "$SCRIPTS/noise_floor.py" --project . pending --run-id "$RUN_ID" >/dev/null; then
    RUN_STATE=0
    "$PY" "$SCRIPTS/run_status.py" --project . --run-id "$RUN_ID" >/dev/null 2>&1 || RUN_STATE=$?
    if [ "$RUN_STATE" -ne 4 ]; then
      echo "noise floor: the unchanged system re-runs the sample, --no-cache, in the background" >&2
      "$PY" "$SCRIPTS/run_benchmark.py" "${ARGS[@]}" "$@" --no-cache --background || exit $?
    fi
    RUN_STATE=0
    "$PY" "$SCRIPTS/run_status.py" --project . --run-id "$RUN_ID" --wait "$CONFIRM_WAIT" || RUN_STATE=$?
    case "$RUN_STATE" in
      0) ;;
      4) echo "noise floor: the re-run is still running: run this command again (it waits up to $CONFIRM_WAIT s)"
         exit 4 ;;
      *) exit "$RUN_STATE" ;;
    esac
  fi
  exec "$PY" "$SCRIPTS/noise_floor.py" --project . finish --run-id "$RUN_ID"
fi

if [ "$CONFIRM" = 1 ]; then
  "$PY" "$SCRIPTS/confirm.py" --project . check --exit-status
  STATUS=$?
  if [ "$STATUS" -eq 1 ]; then
    echo "below the target: no confirmation yet; go on with step 4"
    exit 0
  elif [ "$STATUS" -ne 0 ]; then
    exit "$STATUS"
  fi
  CONFIRM_ID="$("$PY" "$SCRIPTS/confirm.py" --project . start --resume)" || exit $?
  RUN_STATE=0
  "$PY" "$SCRIPTS/run_status.py" --project . --run-id "$CONFIRM_ID" >/dev/null 2>&1 || RUN_STATE=$?
  case "$RUN_STATE" in
    0|4) ;;
    3) "$PY" "$SCRIPTS/run_status.py" --project . --run-id "$CONFIRM_ID"; exit 3 ;;
    *) echo "confirmation rerun $CONFIRM_ID: the full set, --no-cache, in the background" >&2
       "$PY" "$SCRIPTS/run_benchmark.py" "${ARGS[@]}" "$@" --run-id "$CONFIRM_ID" --no-cache --background || exit $? ;;
  esac
  RUN_STATE=0
  "$PY" "$SCRIPTS/run_status.py" --project . --run-id "$CONFIRM_ID" --wait "$CONFIRM_WAIT" || RUN_STATE=$?
  case "$RUN_STATE" in
    0) exec "$PY" "$SCRIPTS/confirm.py" --project . finish --commit ;;
    4) echo "confirmation rerun $CONFIRM_ID is still running: run this command again (it waits up to $CONFIRM_WAIT s)"
       exit 4 ;;
    *) exit "$RUN_STATE" ;;
  esac
fi

echo "loop run: concurrency $N_PARALLEL, max $TOTAL (batch $BATCH ignored: the driver's concurrency replaces batches)" >&2
"$PY" "$SCRIPTS/run_benchmark.py" "${ARGS[@]}" "$@"
