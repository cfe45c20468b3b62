"""Hostile JSON: a 580 KB dataset holding one 200,000-deep nested array, streamed the old way (``ijson.items``) and
the way ``dataset`` streams now (``bounded_json.items`` over ``ijson.basic_parse``); then both ways over the real
``_s`` copy, side by side, for the price of the bounds.

Not a test (pytest does not collect tests/benchmarks). Run by hand:
    bash tests/venv_python.sh tests/benchmarks/bench_hostile_json.py [--cap-gib 3] [--repeats 3]

Each bomb scan runs in its own process under an address-space cap (RLIMIT_AS, default 3 GiB), so the old way
dies of MemoryError instead of taking the machine (it grew to 22.9 GB uncapped): seconds, peak RSS and how it ended
are printed for each. The ``_s`` figures are the parse alone (no hashing, no schema), best of ``--repeats``,
alternated so both see the same machine load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "sample" / "longmemeval_sample.json"
REAL_S = Path(os.environ.get("LONGMEMEVAL_DATA_DIR", REPO.parent / "shared" / "data" / "longmemeval")) / \
    "longmemeval_s_cleaned.499of500.json.xz"
DEPTH = 200_000

_CHILD = r"""
import resource, sys, time
sys.path.insert(0, sys.argv[3])
import ijson
from lme.core import bounded_json
cap = int(sys.argv[4])
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
path, way = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
try:
    with open(path, "rb") as fh:
        if way == "old":
            n = sum(1 for _ in ijson.items(fh, "item", use_float=True))
        else:
            n = sum(1 for _ in bounded_json.items(ijson.basic_parse(fh, use_float=True), path))
    ended = f"read {n} items"
except MemoryError:
    ended = "MemoryError (a traceback for the user)"
except bounded_json.JsonRefused as err:
    ended = "refused in one line: " + str(err).split(": ", 1)[1][:90]
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{time.perf_counter() - t0:.2f}\t{peak:.0f}\t{ended}")
"""


def make_bomb(folder: Path) -> Path:
    items = json.loads(SAMPLE.read_text(encoding="utf-8"))
    head = json.dumps(items[:3])[:-1]
    bomb = json.dumps(items[3])[:-1] + ', "extra": ' + "[" * DEPTH + "]" * DEPTH + "}"
    path = folder / "bomb.json"
    path.write_text(f"{head}, {bomb}, {json.dumps(items[4:])[1:]}", encoding="utf-8")
    return path


def scan_in_a_capped_process(path: Path, way: str, cap: int) -> str:
    done = subprocess.run([sys.executable, "-c", _CHILD, str(path), way, str(REPO / "scripts"), str(cap)],
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return f"?\t?\tcrashed: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}"
    return done.stdout.strip()


def parse_real(path: Path, repeats: int) -> tuple[float, float]:
    sys.path.insert(0, str(REPO / "scripts"))
    import ijson
    import lzma

    from lme.core import bounded_json

    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / "s.json"
        with lzma.open(path, "rb") as src, open(plain, "wb") as dst:
            while block := src.read(1 << 20):
                dst.write(block)
        best = {"old": float("inf"), "new": float("inf")}
        for _ in range(repeats):
            for way in ("old", "new"):
                t0 = time.perf_counter()
                with open(plain, "rb") as fh:
                    if way == "old":
                        for _ in ijson.items(fh, "item", use_float=True):
                            pass
                    else:
                        for _ in bounded_json.items(ijson.basic_parse(fh, use_float=True), str(plain)):
                            pass
                best[way] = min(best[way], time.perf_counter() - t0)
    return best["old"], best["new"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cap-gib", type=float, default=3.0, help="address-space cap of each bomb scan (GiB)")
    parser.add_argument("--repeats", type=int, default=3, help="parses of the real _s file per way (best kept)")
    args = parser.parse_args(argv)
    cap = int(args.cap_gib * (1 << 30))
    with tempfile.TemporaryDirectory() as tmp:
        bomb = make_bomb(Path(tmp))
        print(f"bomb              {bomb.stat().st_size:,} bytes, one {DEPTH:,}-deep array in item 3")
        print("way               seconds  peak RSS MiB  ended")
        for way, label in (("old", "ijson.items"), ("new", "bounded_json.items")):
            seconds, peak, ended = scan_in_a_capped_process(bomb, way, cap).split("\t")
            print(f"{label:<18}{seconds:>7}  {peak:>12}  {ended}")
    if not REAL_S.exists():
        print(f"real _s            skipped: {REAL_S} not present", file=sys.stderr)
        return 0
    old, new = parse_real(REAL_S, args.repeats)
    print(f"real _s parse     ijson.items {old:.2f} s, bounded_json.items {new:.2f} s (best of {args.repeats}), "
          f"ratio {new / old:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
