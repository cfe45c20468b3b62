#!/usr/bin/env bash
# The iteration loop's full run: one resumable run_benchmark.py --loop over the whole set.
#
# Usage: bash scripts/parallel_longmemeval.sh <N_PARALLEL> <BATCH> <TOTAL> [extra run_benchmark.py args]
#   N_PARALLEL  items in flight at once (--concurrency); pick it from references/model-config.md
#   BATCH       accepted for compatibility and ignored: the driver's concurrency and adaptive rate limiter
#               replace shell-level batches, and its checkpoints make any interruption resumable
#   TOTAL       --max; the loop guard refuses anything below the full set (500, or 499 for the _s copy)
#   extra args  passed through last, e.g. --run-id <confirmation id> --no-cache for the confirmation rerun
#
# Everything else comes from the loop configuration (.longmemeval-benchmarks/config.json "loop"): run id,
# variant, target, target model, judge, target options. The symbolic flags are passed exactly as configured,
# so a flag that is off makes the driver refuse the run instead of being silently switched on.
# Exit status is the driver's: 0 completed, 1 failed (resume by running this again), 2 user error,
# 3 billing (then: rounds.py blocked --reason billing), 130 interrupted.
set -u

if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0; fi
if [ $# -lt 3 ]; then
  echo "error: usage: parallel_longmemeval.sh <N_PARALLEL> <BATCH> <TOTAL> [extra args] (e.g. 8 133 500)" >&2
  exit 2
fi
N_PARALLEL="$1"; BATCH="$2"; TOTAL="$3"; shift 3
for VALUE in "$N_PARALLEL" "$BATCH" "$TOTAL"; do
  case "$VALUE" in ''|*[!0-9]*) echo "error: '$VALUE' is not a whole number (usage: <N_PARALLEL> <BATCH> <TOTAL>)" >&2; exit 2 ;; esac
done

SCRIPTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ -x .longmemeval-venv/bin/python ]; then PY=.longmemeval-venv/bin/python
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

echo "loop run: concurrency $N_PARALLEL, max $TOTAL (batch $BATCH ignored: the driver's concurrency replaces batches)" >&2
"$PY" "$SCRIPTS/run_benchmark.py" "${ARGS[@]}" "$@"
