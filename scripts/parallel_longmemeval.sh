#!/usr/bin/env bash
# The iteration loop's full run: one resumable run_benchmark.py --loop over the whole set.
#
# Usage: bash scripts/parallel_longmemeval.sh <N_PARALLEL> <BATCH> <TOTAL> [extra run_benchmark.py args]
#        bash scripts/parallel_longmemeval.sh <N_PARALLEL> <BATCH> <TOTAL> --confirm
#   N_PARALLEL  items in flight at once (--concurrency); pick it from references/model-config.md
#   BATCH       accepted for compatibility and ignored: the driver's concurrency and adaptive rate limiter
#               replace shell-level batches, and its checkpoints make any interruption resumable
#   TOTAL       --max; the loop guard refuses anything below the full set (the dataset's size, 500)
#   extra args  passed through last, e.g. --run-id <confirmation id> --no-cache for the confirmation rerun
#   --confirm   the termination step instead: when the loop run reached the target (confirm.py check), start or
#               resume the confirmation (confirm.py start --resume), run the full set under its new run id with
#               --no-cache, and judge it (confirm.py finish --commit). Below the target it says so and exits 0.
#
# Everything else comes from the loop configuration (.longmemeval-benchmarks/config.json "loop"): run id,
# variant, target, target model, judge, target options. The symbolic flags are passed exactly as configured,
# so a flag that is off makes the driver refuse the run instead of being silently switched on.
# Exit status is the driver's: 0 completed, 1 failed (resume by running this again), 2 user error,
# 3 billing (then: rounds.py blocked --reason billing), 130 interrupted.
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
if [ "${1:-}" = "--confirm" ]; then
  if [ $# -ne 1 ]; then echo "error: --confirm takes no other argument (usage: <N_PARALLEL> <BATCH> <TOTAL> --confirm)" >&2; exit 2; fi
  CONFIRM=1; shift
fi

SCRIPTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ -n "${LONGMEMEVAL_PYTHON:-}" ]; then PY="$LONGMEMEVAL_PYTHON"
elif [ -x .longmemeval-venv/bin/python ]; then PY=.longmemeval-venv/bin/python
elif [ -x .longmemeval-venv/Scripts/python.exe ]; then PY=.longmemeval-venv/Scripts/python.exe
else echo "error: venv missing (.longmemeval-venv): run /longmemeval-benchmarker:longmemeval-setup" >&2; exit 2
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
  echo "confirmation rerun $CONFIRM_ID: the full set, --no-cache" >&2
  "$PY" "$SCRIPTS/run_benchmark.py" "${ARGS[@]}" "$@" --run-id "$CONFIRM_ID" --no-cache || exit $?
  exec "$PY" "$SCRIPTS/confirm.py" --project . finish --commit
fi

echo "loop run: concurrency $N_PARALLEL, max $TOTAL (batch $BATCH ignored: the driver's concurrency replaces batches)" >&2
"$PY" "$SCRIPTS/run_benchmark.py" "${ARGS[@]}" "$@"
