"""Benchmark what the sweep for killed writes' temps (``fileio.clean_leftovers``) costs each run start and scorecard,
in a project of 50 runs and 10 loop snapshots (each with a run's files and a charts folder). Prints figures.

    bash tests/venv_python.sh tests/benchmarks/bench_leftovers.py [--runs 50] [--repeat 20]

Needs no data; the machine is shared, so read the order of magnitude, not the digits.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent.parent / "scripts")]

from lme.core import fileio  # noqa: E402

RUN_FILES = ("run-meta.json", "item-results.jsonl", "questions_completed.jsonl", "manifest.json", "metrics.json",
             "scorecard.md", "report.html", "run.log", "events.jsonl", "labels.jsonl", "summary.json", ".lock",
             "progress.json", "failures.md", "scored.json")
CHARTS = tuple(f"chart-{i}.svg" for i in range(10))


def make_run(folder: Path) -> None:
    (folder / "charts").mkdir(parents=True)
    for name in RUN_FILES:
        (folder / name).write_bytes(b"{}\n")
    for name in CHARTS:
        (folder / "charts" / name).write_bytes(b"<svg/>")


def make_project(root: Path, runs: int, snapshots: int) -> Path:
    state = root / ".longmemeval-benchmarks"
    for i in range(runs):
        make_run(state / "runs" / f"run-{i:03d}")
    for i in range(snapshots):
        make_run(state / "snapshots" / f"v{i}")
    (state / "cache").mkdir(parents=True)
    (state / "cache" / "calls.sqlite").write_bytes(b"")
    return root


def plant_stale(root: Path, count: int) -> None:
    old = time.time() - 2 * fileio.STALE_TEMP_AGE_S
    runs = sorted((root / ".longmemeval-benchmarks" / "runs").iterdir())
    for i in range(count):
        path = runs[i % len(runs)] / f".report.html.{i:08d}.tmp"
        path.write_bytes(b"x" * 4096)
        os.utime(path, (old, old))


def time_ms(root: Path, repeat: int, stale: int) -> float:
    times = []
    for _ in range(repeat):
        plant_stale(root, stale)
        start = time.perf_counter()
        fileio.clean_leftovers(root)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = make_project(Path(tmp), args.runs, 10)
        entries = sum(1 for _ in root.rglob("*"))
        print(f"project: {args.runs} runs + 10 snapshots, {entries} files and folders")
        print(f"  sweep, nothing to remove : {time_ms(root, args.repeat, 0):7.2f} ms (median of {args.repeat})")
        devnull = open(os.devnull, "w")
        sys.stderr, real = devnull, sys.stderr
        try:
            ms = time_ms(root, args.repeat, 50)
        finally:
            sys.stderr = real
            devnull.close()
        print(f"  sweep, 50 stale temps    : {ms:7.2f} ms (median of {args.repeat}, planting not counted)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
