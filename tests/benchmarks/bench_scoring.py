"""Benchmark scoring a full ``_s`` run, before (another revision's code, default ``main``) and after (this checkout):
scoring it (``scorecard.py --rescore``: metrics.json, scorecard.md, charts, report.html) and showing it unchanged
(its outputs reused), wall time and peak RSS side by side. Prints figures with their goals.

    bash tests/venv_python.sh tests/benchmarks/bench_scoring.py [--before main] [--repeat 2] [--keep DIR]

The run is built once: an offline run of every ``_s`` item (rows with retrieval ids), and the same rows naming the
prompt a full-context reader sends for each item, stored through prompt_store as a run's writer does (the heavy
case: ~200 MB of distinct session text; bench_report_html.py builds it the same way). Goals: scoring under 250 MB
peak RSS; showing an unchanged run well under a second.

Needs ../shared/data/longmemeval/longmemeval_s_cleaned.499of500.json.xz (or LONGMEMEVAL_DATA_DIR); says "skipped"
without it. Building the run takes a few minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path[:0] = [str(REPO / "scripts"), str(REPO / "tests"), str(HERE)]

from _trees import headline, median, python_env, ratio, trees as find_trees  # noqa: E402
from bench_report_html import S_FILE, offline_run, with_full_context_prompts  # noqa: E402

GOAL_MB = 250


def score(tree: Path, project: Path, run_id: str, env: dict[str, str], *extra: str) -> tuple[float, float]:
    """(seconds, peak RSS MiB) of ``scorecard.py --run-id RUN_ID --project P`` from ``tree``, as a user runs it."""
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, str(HERE / "_peak_rss.py"), str(tree / "scripts" / "scorecard.py"),
                           "--run-id", run_id, "--project", str(project), *extra], env=env, capture_output=True,
                          text=True, cwd=project)
    seconds = time.monotonic() - t0
    if done.returncode:
        sys.exit(f"{tree}: scorecard.py failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    peak = max((float(x.split("=")[1]) for x in done.stderr.splitlines() if x.startswith("peak_rss_mib=")),
               default=0.0)
    return seconds, peak


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="main", help="the revision to compare with (default main; '' for none)")
    parser.add_argument("--repeat", type=int, default=2, help="rounds; each figure is their median (default 2)")
    parser.add_argument("--keep", type=Path, help="build the run here and keep it (default: a temp dir)")
    args = parser.parse_args()
    if not S_FILE.exists():
        print(f"skipped: {S_FILE} not found")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        env = python_env(Path(tmp) / "pycache")
        offline = root / "p" / ".longmemeval-benchmarks" / "runs" / "s-offline"
        heavy = offline.parent / "s-full-context"  # in the project's runs/, as a user's run is
        if not (heavy / "item-results.jsonl").exists():
            shutil.rmtree(heavy, ignore_errors=True)
            with_full_context_prompts(offline if (offline / "item-results.jsonl").exists() else offline_run(root),
                                      heavy)
        project = root / "p"
        trees = find_trees(args.before, Path(tmp))
        print(f"# scoring a full _s run (499 items, full-context prompts stored); {headline(args.before, trees)}; "
              f"median of {args.repeat}")
        figures: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.repeat):
            for label, tree in trees.items():
                seconds, peak = score(tree, project, heavy.name, env, "--rescore")
                figures.setdefault(("rescore_s", label), []).append(seconds)
                figures.setdefault(("rescore_mib", label), []).append(peak)
                seconds, peak = score(tree, project, heavy.name, env)
                figures.setdefault(("reuse_s", label), []).append(seconds)
                figures.setdefault(("reuse_mib", label), []).append(peak)
        rows = (("rescore_s", "scoring it (s)", "-"), ("rescore_mib", "scoring it: peak RSS (MiB)", f"< {GOAL_MB} MB"),
                ("reuse_s", "showing it unchanged (s)", "well under 1 s"),
                ("reuse_mib", "showing it unchanged: peak RSS (MiB)", "-"))
        for key, name, goal in rows:
            a = median(figures[(key, "after")])
            if "before" in trees:
                b = median(figures[(key, "before")])
                print(f"  {name:<38} before {b:7.2f}  after {a:7.2f}  after/before {ratio(a, b)}  goal {goal}")
            else:
                print(f"  {name:<38} {a:7.2f}  goal {goal}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
