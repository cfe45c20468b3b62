"""Bench: what the Batch APIs save on a full ``_s`` run, from the dry run, and what the synchronous path faces.

For full-context and memory-ref on the real ``_s`` copy (``dry_run.estimate`` under ``--batch all``: no model is
called, nothing is written), per stage: synchronous dollars, batch dollars, their ratio and the batches needed
(the providers' request and size limits); then the whole run's batch/sync cost ratio, and the number of requests
the synchronous path would send against a rate limit of ``--rpm`` requests (and ``--tpm`` input tokens) per
minute, with the least wall time that limit allows. A stage a target does not declare batchable stays at
synchronous prices (memory-ref declares its writer batchable: its reader and reranker stay synchronous).

Usage (from the repo root; about a minute on 2 cores):
    bash tests/venv_python.sh tests/benchmarks/bench_batch.py [--rpm 500] [--tpm 30000000] [--max N]
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


def _usd(value: float | None) -> str:
    return "unknown" if value is None else f"${value:,.2f}"


def _ratio(batch: float | None, sync: float | None) -> str:
    return "-" if not sync or batch is None else f"{batch / sync:.2f}"


def _minutes(value: float) -> str:
    return f"{value:,.1f} min" if value < 120 else f"{value / 60:,.1f} h"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rpm", type=float, default=500.0, help="requests per minute the sync path may send")
    parser.add_argument("--tpm", type=float, default=None, help="input tokens per minute it may send (optional)")
    parser.add_argument("--max", type=int, default=500, help="items to estimate (default: all)")
    args = parser.parse_args()
    if not S_FILE.exists():
        print(f"skipped: {S_FILE} not present")
        return 0
    os.environ.setdefault("LONGMEMEVAL_TIKTOKEN", "0")
    from lme.core import config
    from lme.run import dry_run
    from lme.run import settings as run_settings
    from lme.cli.run_benchmark import build_parser
    from run_project import make_project

    with tempfile.TemporaryDirectory() as tmp:
        project = make_project(Path(tmp) / "p", dataset=S_FILE, targetProvider="anthropic",
                               targetModel="claude-sonnet-4-6", concurrency=8)
        for target in ("full-context", "memory-ref"):
            argv = ["--project", str(project), "--target", target, "--max", str(args.max), "--batch", "all"]
            settings = run_settings.resolve(config.load_config(project), build_parser().parse_args(argv), project)
            t0 = time.monotonic()
            result = dry_run.estimate(settings)
            took = time.monotonic() - t0
            b = result["batch"]
            print(f"{target} on _s ({result['items']} items, target {result['target']}, judge "
                  f"{result['judge_model']}; estimate {took:.1f} s)")
            for name, stage in b["stages"].items():
                print(f"  {name:<10} {stage['calls']:>7,} calls  sync {_usd(stage['sync_usd_max']):>10}  batch "
                      f"{_usd(stage['batch_usd_max']):>10}  ratio {_ratio(stage['batch_usd_max'], stage['sync_usd_max'])}"
                      f"  batches {stage['batches'] if stage['batchable'] else 'not batchable'}"
                      + (f" (roles {', '.join(stage['batchable'])})" if isinstance(stage['batchable'], list) else ""))
            print(f"  whole run  batch/sync cost ratio {_ratio(b['batch_usd_max'], b['sync_usd_max'])} "
                  f"({_usd(b['batch_usd_max'])} vs {_usd(b['sync_usd_max'])})")
            tokens = result["generation"]["tokens_in"] + result["judge"]["tokens_in"]
            wall = b["sync_requests"] / args.rpm
            limit = f"{args.rpm:,.0f} rpm"
            if args.tpm:
                wall = max(wall, tokens / args.tpm)
                limit += f" and {args.tpm:,.0f} tpm"
            print(f"  sync path  {b['sync_requests']:,} requests ({tokens:,} input tokens): at least "
                  f"{_minutes(wall)} at {limit}; batches: {b['batch_time']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
