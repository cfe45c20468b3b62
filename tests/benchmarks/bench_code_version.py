"""Benchmark what code provenance costs a run: the fingerprint an invocation makes once at its start, and the stat
check before each item, for the loop's copy of memory-ref in a git work tree and for a user's one-file system.
Prints figures.

    bash tests/venv_python.sh tests/benchmarks/bench_code_version.py [--checks 2000] [--repeat 5]

Needs no data; the machine is shared, so read the order of magnitude, not the digits.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path[:0] = [str(REPO / "scripts")]

from lme.run import code_version  # noqa: E402
from lme.run.settings import RunSettings  # noqa: E402

GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b"}


def settings(project: Path, target: str, **options: str) -> RunSettings:
    return RunSettings(project=str(project), dataset_path="d.json", variant="_s", runs_dir=str(project / "runs"),
                       longmemeval_root=None, target=target, target_provider="offline", target_model="m",
                       target_options=options, judge_provider="offline", judge_model="m", max_evals=1, concurrency=1,
                       cache_enabled=False, cache_read=False, cache_dir=str(project / "cache"), error_threshold=0,
                       timeout_s=1, max_attempts=1)


def measure(name: str, run_settings: RunSettings, checks: int, repeat: int) -> None:
    starts, version, watch = [], None, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        version, watch = code_version.fingerprint(run_settings)
        starts.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    for _ in range(checks):
        watch.changed()
    per_check = (time.perf_counter() - t0) / checks
    print(f"{name:<34} {len(version.files):>5} files  fingerprint {statistics.median(starts) * 1000:7.1f} ms "
          f"(once per invocation)  check {per_check * 1e6:6.1f} us (before each item)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checks", type=int, default=2000, help="stat checks timed (default 2000)")
    parser.add_argument("--repeat", type=int, default=5, help="fingerprints timed, median shown (default 5)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "project"
        shutil.copytree(REPO / "plugins" / "memory_ref", project / "memory_system",
                        ignore=shutil.ignore_patterns("__pycache__"))
        (project / "memsys.py").write_text("def generate(item, ctx):\n    return {'hypothesis': 'x'}\n")
        for git in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "copy"]):
            subprocess.run(["git", "-C", str(project), *git], check=True, capture_output=True, env=GIT_ENV)
        measure("memory-ref copy in git", settings(project, str(project / "memory_system")),
                args.checks, args.repeat)
        measure("a user's python file (in git)", settings(project, "python", path=str(project / "memsys.py")),
                args.checks, args.repeat)
        measure("built-in memory-ref (plugin files)", settings(project, "memory-ref"), args.checks, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
