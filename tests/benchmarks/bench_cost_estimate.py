"""Bench: what the cost gate's estimate costs before a run, and what it says, on the real ``_s`` copy.

A paid run without ``--yes`` builds every prompt of the items it would run (``dry_run.estimate``) before it
starts. Measured side by side with one streaming pass over the dataset (``dataset.scan``, which every new run
already makes): seconds for each, their ratio, and the estimate's figures for full-context and memory-ref
(calls, tokens, dollars per stage). No model is called; nothing is written.

Usage (from the repo root; about a minute on 2 cores):
    bash tests/venv_python.sh tests/benchmarks/bench_cost_estimate.py [--max N]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "scripts"), str(REPO / "tests")]
DATA = Path(os.environ.get("LONGMEMEVAL_DATA_DIR", REPO.parent / "shared" / "data" / "longmemeval"))
S_FILE = DATA / "longmemeval_s_cleaned.499of500.json.xz"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max", type=int, default=500, help="items to estimate (default: all)")
    args = parser.parse_args()
    if not S_FILE.exists():
        print(f"skipped: {S_FILE} not present")
        return 0
    os.environ.setdefault("LONGMEMEVAL_TIKTOKEN", "0")
    from lme.data import dataset
    from lme.run import dry_run
    from run_project import make_project
    from lme.core import config
    from lme.run import settings as run_settings
    from lme.cli.run_benchmark import build_parser

    t0 = time.monotonic()
    dataset.scan(S_FILE)
    scan_s = time.monotonic() - t0
    print(f"dataset scan (sha256 + ids):        {scan_s:6.1f} s")
    with tempfile.TemporaryDirectory() as tmp:
        project = make_project(Path(tmp) / "p", dataset=S_FILE, targetProvider="anthropic",
                               targetModel="claude-sonnet-4-6", concurrency=8)
        for target in ("full-context", "memory-ref"):
            argv = ["--project", str(project), "--target", target, "--max", str(args.max)]
            settings = run_settings.resolve(config.load_config(project), build_parser().parse_args(argv), project)
            t0 = time.monotonic()
            result = dry_run.estimate(settings)
            took = time.monotonic() - t0
            print(f"estimate {target:<12}               {took:6.1f} s  ({took / scan_s:.1f}x the scan)")
            for line in dry_run.format_block(result).splitlines()[1:-1]:
                print("    " + line.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
