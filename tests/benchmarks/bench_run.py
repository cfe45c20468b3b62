"""Benchmark the run driver against the fake model server on the 500 real oracle items. Prints figures.

    bash tests/venv_python.sh tests/benchmarks/bench_run.py [--latency 0.02] [--items 500] [--only throughput,ratelimit,resume,cache]

1. throughput: wall time of a full run at concurrency 1, 8 and 32 vs the ideal (items x 2 calls x latency /
   concurrency); prints actual/ideal. With a short latency the machine's CPU is the bound, so a "ceiling" line
   measures bare SDK calls/s without the driver; with --latency 0.25 --levels 8,32 latency dominates, as with
   real APIs.
2. rate limit: the server allows R requests/s and answers 429 beyond; prints achieved requests/s as a share of R
   and the number of failed items (must be 0).
3. resume: time and peak memory to resume a fully completed run (nothing to do; without and with the scorecard,
   which is reused when nothing changed), and to resume after a kill -9 halfway (then checks one judged row per
   question).
4. cache: a second identical run makes zero model calls.

The server runs in this process (so its request log can be read); the driver runs as a real subprocess, as a
user runs it. Needs ../shared/data/longmemeval/longmemeval_oracle.json (or LONGMEMEVAL_DATA_DIR); skips without it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path[:0] = [str(REPO / "scripts"), str(REPO / "tests")]

from fake_llm_server import FakeLLMServer  # noqa: E402
from run_project import make_project  # noqa: E402

DATA_DIR = Path(os.environ.get("LONGMEMEVAL_DATA_DIR", REPO.parent / "shared" / "data" / "longmemeval"))
PEAK = HERE / "_peak_rss.py"


def subset(n: int, out: Path) -> Path:
    items = json.loads((DATA_DIR / "longmemeval_oracle.json").read_text())[:n]
    out.write_text(json.dumps(items))
    return out


def drive(project: Path, server: FakeLLMServer, *args: str, kill_after: float | None = None,
          scorecard: bool = False) -> tuple[float, int, int]:
    """Run the driver in a subprocess; returns (seconds, exit status, peak RSS in MiB)."""
    env = dict(os.environ)
    env.update(
        OPENAI_BASE_URL=server.openai_base_url,
        ANTHROPIC_BASE_URL=server.anthropic_base_url,
        OPENAI_API_KEY="sk-bench-dummy",
        ANTHROPIC_API_KEY="sk-bench-dummy",
    )
    cmd = [sys.executable, str(PEAK), str(REPO / "scripts" / "run_benchmark.py"), "--project", str(project),
           "--progress", "quiet", *([] if scorecard else ["--no-scorecard"]), *args]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if kill_after is not None:
        time.sleep(kill_after)
        proc.send_signal(signal.SIGKILL)
    out, err = proc.communicate()
    seconds = time.monotonic() - t0
    peak = 0
    for line in err.splitlines():
        if line.startswith("peak_rss_mib="):
            peak = int(float(line.split("=", 1)[1]))
    if proc.returncode not in (0, -9):  # a benchmark of a failed run would print meaningless figures
        sys.exit(f"the driver failed (exit {proc.returncode}):\n{err[-2000:]}")
    return seconds, proc.returncode, peak


CEILING = """
import sys, time, concurrent.futures as cf
sys.path.insert(0, sys.argv[1])
from lme.models import providers
from lme.core.records import ChatRequest
total, threads = int(sys.argv[2]), int(sys.argv[3])
req = ChatRequest(provider="openai", model="gpt-4o-mini", messages=({"role": "user", "content": "ping " * 200},))
t0 = time.monotonic()
with cf.ThreadPoolExecutor(threads) as pool:
    list(pool.map(lambda _: providers.complete(req), range(total)))
print(total, time.monotonic() - t0)
"""


def sdk_ceiling(server: FakeLLMServer, total: int, threads: int) -> tuple[int, float]:
    """Bare SDK calls (no driver) in a subprocess: how many calls/s this machine can push through at all."""
    env = dict(os.environ, OPENAI_BASE_URL=server.openai_base_url, OPENAI_API_KEY="sk-bench-dummy")
    out = subprocess.run([sys.executable, "-c", CEILING, str(REPO / "scripts"), str(total), str(threads)],
                         env=env, capture_output=True, text=True, check=True).stdout.split()
    return int(out[0]), float(out[1])


def count_judged(project: Path, run_id: str) -> tuple[int, int]:
    path = project / ".longmemeval-benchmarks" / "runs" / run_id / "item-results.jsonl"
    if not path.is_file():  # the kill landed before the first row was written: nothing judged yet
        return 0, 0
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    judged = [r for r in rows if r["status"] == "judged"]
    return len(judged), len({r["question_id"] for r in judged})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.02, help="fake server seconds per call (default 0.02)")
    parser.add_argument("--items", type=int, default=500, help="oracle items to use (default 500)")
    parser.add_argument("--only", default="throughput,ceiling,ratelimit,resume,cache", help="comma-separated sections")
    parser.add_argument("--levels", default="1,8,32", help="concurrency levels for throughput (default 1,8,32)")
    args = parser.parse_args()
    if not (DATA_DIR / "longmemeval_oracle.json").exists():
        print(f"skipped: {DATA_DIR}/longmemeval_oracle.json not found")
        return 0
    sections = set(args.only.split(","))
    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer(log_bodies=False) as server:
        tmp = Path(tmp)
        data = subset(args.items, tmp / "oracle_subset.json")
        items = json.loads(data.read_text())
        server.answers = {it["question"]: it["answer"] for it in items}
        server.correct_share = 0.8
        n = len(items)
        print(f"# run benchmarks: {n} real oracle items, fake server latency {args.latency * 1000:.0f} ms/call, 2 calls/item")

        if "throughput" in sections:
            server.latency = args.latency
            for conc in (int(c) for c in args.levels.split(",")):
                project = make_project(tmp / f"tp{conc}", dataset=data, variant="_oracle", concurrency=conc, cacheEnabled=False)
                seconds, code, peak = drive(project, server, "--run-id", "tp")
                ideal = n * 2 * args.latency / conc
                print(f"throughput  concurrency={conc:<3} wall={seconds:7.2f}s ideal={ideal:7.2f}s actual/ideal={seconds / ideal:5.2f} exit={code} peak_rss={peak} MiB")

        if "ceiling" in sections:
            server.latency = args.latency
            calls, seconds = sdk_ceiling(server, 2 * n, threads=32)
            print(f"ceiling     bare providers.complete, 32 threads, no driver: {calls / seconds:6.1f} calls/s "
                  f"({calls} calls in {seconds:.2f}s): the CPU bound of SDK + fake server on this machine")

        if "ratelimit" in sections:
            rps = 40.0
            server.latency = args.latency
            server.rate_limit_rps = rps
            server.reset()
            project = make_project(tmp / "rl", dataset=data, variant="_oracle", concurrency=32, cacheEnabled=False, maxAttempts=12)
            seconds, code, _ = drive(project, server, "--run-id", "rl")
            total = len(server.requests)
            judged, unique = count_judged(project, "rl")
            achieved = (2 * judged) / seconds
            meta = json.loads((project / ".longmemeval-benchmarks/runs/rl/run-meta.json").read_text())
            refused = sum(o.get("rate_limit", 0) for o in meta["limiter"]["outcomes"].values())
            print(f"rate-limit  R={rps:.0f}/s successful_calls/s={achieved:5.1f} share_of_R={achieved / rps:5.2f} "
                  f"requests_sent={total} retries={meta.get('retries')} rate_limited={refused} "
                  f"failed_items={n - unique} exit={code}")
            server.rate_limit_rps = None

        if "resume" in sections:
            server.latency = args.latency
            project = make_project(tmp / "rs", dataset=data, variant="_oracle", concurrency=16, cacheEnabled=False)
            drive(project, server, "--run-id", "done")
            seconds, code, peak = drive(project, server, "--run-id", "done")
            print(f"resume      completed run, nothing to do: {seconds:6.2f}s peak_rss={peak} MiB exit={code}")
            first, _, _ = drive(project, server, "--run-id", "done", scorecard=True)
            seconds, code, peak = drive(project, server, "--run-id", "done", scorecard=True)
            print(f"resume      completed run with its scorecard (as a user runs it): first scoring {first:6.2f}s, "
                  f"then {seconds:6.2f}s (scorecard reused) peak_rss={peak} MiB exit={code}")
            full = n * 2 * args.latency / 16
            _, code, _ = drive(project, server, "--run-id", "half", kill_after=1.0 + full / 2)
            before = count_judged(project, "half")
            seconds, code, peak = drive(project, server, "--run-id", "half")
            judged, unique = count_judged(project, "half")
            print(f"resume      after kill -9 with {before[1]} judged: {seconds:6.2f}s peak_rss={peak} MiB exit={code} "
                  f"judged_rows={judged} unique={unique} (must both be {n})")

        if "cache" in sections:
            server.latency = args.latency
            project = make_project(tmp / "cache", dataset=data, variant="_oracle", concurrency=16)
            drive(project, server, "--run-id", "c1")
            server.reset()
            server.latency = args.latency
            server.answers = {it["question"]: it["answer"] for it in items}
            seconds, code, _ = drive(project, server, "--run-id", "c2")
            print(f"cache       second identical run: model calls={len(server.requests)} (must be 0) wall={seconds:.2f}s exit={code}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
