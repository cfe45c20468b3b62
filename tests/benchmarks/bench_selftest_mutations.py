"""Benchmark the scoring self-test and its mutation test: the command's time, and the forking mutation runner
against one fresh interpreter per mutation, side by side on the same mutations. Prints figures.

    bash tests/venv_python.sh tests/benchmarks/bench_selftest_mutations.py [--sample 8] [--repeat 3]

1. ``python scripts/selftest_scoring.py`` as a user runs it: median wall time of ``--repeat`` runs.
2. The mutation test as tests/score/test_selftest_scoring.py runs it: one runner subprocess, a fork per mutation
   (``selftest_mutations.run_mutations``) over every mutation in the table; wall time, and seconds per mutation.
3. The same ``--sample`` mutations both ways: the runner, and a fresh ``python scripts/selftest_scoring.py`` on
   the mutated copy per mutation (what a plain subprocess-per-mutation test would pay); the ratio.

Needs no data; the machine is shared, so read the ratio, not the seconds.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path[:0] = [str(REPO / "tests")]

import selftest_mutations  # noqa: E402


def _wall(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=8, help="mutations timed both ways (default 8)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of the command for its median (default 3)")
    args = parser.parse_args()
    names = [m.name for m in selftest_mutations.MUTATIONS]
    sample = names[:: max(1, len(names) // args.sample)][: args.sample]
    command = [sys.executable, str(REPO / "scripts" / "selftest_scoring.py")]

    times = [_wall(lambda: subprocess.run(command, capture_output=True, check=True)) for _ in range(args.repeat)]
    print(f"selftest_scoring.py: median {statistics.median(times):.2f} s over {args.repeat} runs")

    with tempfile.TemporaryDirectory() as tmp:
        copy = selftest_mutations.make_copy(Path(tmp) / "copy")
        results: dict = {}
        full = _wall(lambda: results.update(selftest_mutations.run_mutations(copy, [None, *names])))
        killed = sum(1 for n in names if results[n]["status"] == "killed")
        print(f"mutation runner, all {len(names)} mutations + the unmutated copy: {full:.1f} s "
              f"({full / (len(names) + 1):.2f} s each), {killed}/{len(names)} killed")

        forked = _wall(lambda: selftest_mutations.run_mutations(copy, sample))

        def fresh_interpreters() -> None:
            table = selftest_mutations.by_name()
            for name in sample:
                with selftest_mutations.planted(copy, table[name]):
                    subprocess.run([sys.executable, str(copy / "scripts" / "selftest_scoring.py")],
                                   capture_output=True, cwd=copy)

        fresh = _wall(fresh_interpreters)
        print(f"the same {len(sample)} mutations: runner {forked:.1f} s, a fresh interpreter each {fresh:.1f} s "
              f"(ratio {fresh / forked:.1f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
