#!/usr/bin/env bash
# Set up a demo project and run the main job offline on the shipped sample: no API keys, no model calls.
# Usage: bash scripts/quickstart.sh [PROJECT_DIR]   (default: ./longmemeval-demo)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PROJECT=${1:-longmemeval-demo}
python3 "$HERE/setup_project.py" --project "$PROJECT" --sample
if [ -x "$PROJECT/.longmemeval-venv/bin/python" ]; then PY="$PROJECT/.longmemeval-venv/bin/python"; else PY="$PROJECT/.longmemeval-venv/Scripts/python.exe"; fi
"$PY" "$HERE/run_benchmark.py" --project "$PROJECT" --offline --run-id quickstart --progress lines
