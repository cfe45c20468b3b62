"""Stream the real `_s` copy once: items, sha256, seconds and peak RSS versus the decompressed size.

Not a test (pytest does not collect tests/benchmarks). Run by hand:
    bash tests/venv_python.sh tests/benchmarks/bench_dataset_stream.py [PATH]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

from lme.data import dataset  # noqa: E402

DEFAULT = Path(os.environ.get("LONGMEMEVAL_DATA_DIR", REPO.parent / "shared" / "data" / "longmemeval")) / "longmemeval_s_cleaned.499of500.json.xz"
EXPECTED_DECOMPRESSED = 257_423_532


def peak_rss_bytes() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # Linux reports KiB


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT, help="dataset file (default: the shared _s copy)")
    args = parser.parse_args(argv)
    if not args.path.exists():
        print(f"skipped: {args.path} not present", file=sys.stderr)
        return 0
    rss_before = peak_rss_bytes()
    t0 = time.perf_counter()
    info = dataset.scan(args.path)
    seconds = time.perf_counter() - t0
    peak = peak_rss_bytes()
    print(f"file              {args.path.name}")
    print(f"items             {info.items}")
    print(f"sha256            {info.sha256}")
    print(f"decompressed      {info.decompressed_bytes:,} bytes (expected {EXPECTED_DECOMPRESSED:,})")
    print(f"seconds           {seconds:.1f}")
    print(f"peak RSS          {peak / 2**20:.1f} MiB (before streaming {rss_before / 2**20:.1f} MiB)")
    print(f"peak / data       {peak / max(info.decompressed_bytes, 1):.3f}")
    if dataset._compression(args.path) == "xz":
        print("note              xz's decoder holds the file's dictionary (64 MiB at preset -9) in RSS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
