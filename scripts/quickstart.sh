#!/usr/bin/env bash
# Set up a demo project and run the main job offline on the shipped sample: no API keys, no model calls.
# Usage: bash scripts/quickstart.sh [PROJECT_DIR]   (default: $HOME/longmemeval-demo)
# The demo lives outside this checkout: the checkout is the plugin, and Claude Code copies a plugin's whole
# folder into its cache when it is added as a marketplace (a demo inside it would be copied too, ~300 MB).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(python3 -c 'import os, sys; print(os.path.realpath(sys.argv[1]))' "$(dirname "$HERE")")
: "${HOME:?set HOME or pass PROJECT_DIR}"
PROJECT=${1:-$HOME/longmemeval-demo}
PROJECT=$(python3 -c 'import os, sys; print(os.path.realpath(sys.argv[1]))' "$PROJECT")
case "$PROJECT/" in
  "$REPO"/*) echo "error: $PROJECT is inside the plugin checkout $REPO (Claude Code would copy it with the plugin): pass a folder outside it, e.g. bash scripts/quickstart.sh \$HOME/longmemeval-demo" >&2; exit 2 ;;
esac
echo "quickstart: 1/2 setting up $PROJECT: a venv with the toolkit's packages (pip: about 1-3 minutes the first time, seconds after), a config and the 24-item synthetic sample"
# setup's own "next:" line is this script's second step: leave it out here.
python3 "$HERE/setup_project.py" --project "$PROJECT" --sample | { grep -v '^next:' || true; }
if [ -x "$PROJECT/.longmemeval-venv/bin/python" ]; then PY="$PROJECT/.longmemeval-venv/bin/python"; else PY="$PROJECT/.longmemeval-venv/Scripts/python.exe"; fi
echo "quickstart: 2/2 running the offline target and judge on the sample (no keys, no model calls; a few seconds)"
"$PY" "$HERE/run_benchmark.py" --project "$PROJECT" --offline --run-id quickstart --progress lines
REPORT="$PROJECT/.longmemeval-benchmarks/runs/quickstart/report.html"
cat <<NEXT

quickstart: done. Open the report in a browser (one self-contained file):
  $REPORT
Next: a real run, in your own project (see README.md, "Real use"). From a shell, in that project's root:
  python3 "$HERE/setup_project.py" --download _s --clone-upstream
  .longmemeval-venv/bin/python "$HERE/run_benchmark.py" --dry-run
Or in Claude Code: add this checkout as a plugin marketplace and install the plugin
  claude plugin marketplace add $REPO
  claude plugin install longmemeval-benchmarker@longmemeval-benchmarker
then, in your project: /longmemeval-setup --download _s --clone-upstream, then /longmemeval-run --dry-run
NEXT
