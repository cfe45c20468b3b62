"""Run every benchmark script in this folder, one after another, and print their figures.

    bash tests/venv_python.sh tests/benchmarks/run_all.py [--only NAME[,NAME]]

Each script reads the real LongMemEval copy from ../shared/data/longmemeval (or LONGMEMEVAL_DATA_DIR) and says
"skipped" when it is absent. They are sized for a 2-core machine: the whole set takes a few minutes.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    parser = argparse.ArgumentParser(description="Run every tests/benchmarks/bench_*.py and print their output.")
    parser.add_argument("--only", help="comma-separated script names without bench_ and .py, e.g. run,rag_recall")
    args = parser.parse_args()
    scripts = sorted(HERE.glob("bench_*.py"))
    if args.only:
        wanted = {f"bench_{name}.py" for name in args.only.split(",")}
        scripts = [s for s in scripts if s.name in wanted]
    failed = 0
    for script in scripts:
        print(f"\n=== {script.name}", flush=True)
        t0 = time.monotonic()
        code = subprocess.call([sys.executable, str(script)])
        print(f"=== {script.name}: exit {code}, {time.monotonic() - t0:.1f} s", flush=True)
        failed += code != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
