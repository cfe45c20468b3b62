"""Benchmark a run's fixed tax, before (another revision's code, default ``main``) and after (this checkout), side by
side in one run. Prints figures with their goals.

    bash tests/venv_python.sh tests/benchmarks/bench_tax.py [--items 200] [--latency 0.1] [--concurrency 8] [--repeat 3]
        [--before main] [--only run,scorecard,status,hypotheses] [--hyp-items 100] [--hyp-latency 0.5]

1. run: a paid run of ``--items`` real oracle items against the fake server (tests/fake_llm_server.py, real SDKs)
   at ``--latency`` s per call and ``--concurrency``, as a user runs it: no ``--yes`` (the cost gate's estimate),
   the probe, and the scorecard, charts and report.html at the end, at the default request timeout (600 s).
   *Cold*: a new project (no stored dataset scan, no recent probe); *warm*: the next new run in the same project.
   The server answers the official judge's model-list read after ``--latency`` too, as a real API takes a round
   trip for it (before 2026-12-02 it answered at once, so figures from then leave that round trip out).
   Figures: seconds from the process start to the run's first model call (the probe is not one), from the last
   reply to the process's exit, the wall time over the ideal (items x 2 calls x latency / concurrency), peak RSS.
   Goals: first call <= 1.0 s, last reply -> exit <= 1.0 s. Beside the first call, the SDK alone: a bare python
   importing ``openai`` and building one client in the same round, the floor no run starts below.
2. scorecard: ``scorecard.py --run-id`` on the warm run: scoring it again (``--rescore``) and showing it unchanged
   (its outputs reused). Goal: unchanged well under 1 s.
3. status: ``run_status.py --run-id`` on the same run. Goal: <= 1 s.
4. hypotheses: judging ``--hyp-items`` hypotheses as a run (``run_benchmark.py --hypotheses``, its scorecard
   included, as a user runs it) against upstream's ``evaluate_qa.py`` (one call at a time) at ``--hyp-latency`` s
   per call: ours / upstream, goal <= 1/6. Needs the upstream mirror and upstream's packages
   (``bench_hypotheses_judge.py`` says which); skipped without them. Upstream is timed in each round (at most 3),
   beside ours: this machine's speed changes over minutes.

Each figure is the median of ``--repeat`` rounds, before and after alternating in each. Both trees run with their
bytecode cached, as an installed plugin does (``_trees.python_env``). The machine is shared: read the ratios
(after / before, measured side by side), not the absolute seconds. Needs ../shared/data/longmemeval/
longmemeval_oracle.json (or LONGMEMEVAL_DATA_DIR); says "skipped" without it. About 7 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path[:0] = [str(REPO / "scripts"), str(REPO / "tests"), str(HERE)]

from _trees import headline, median, python_env, ratio, trees as find_trees  # noqa: E402
from fake_llm_server import FakeLLMServer  # noqa: E402
from run_project import make_project  # noqa: E402

DATA_DIR = Path(os.environ.get("LONGMEMEVAL_DATA_DIR", REPO.parent / "shared" / "data" / "longmemeval"))
PEAK = HERE / "_peak_rss.py"
GOAL_S = 1.0


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``), None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _peak(stderr: str) -> float:
    return max((float(line.split("=", 1)[1]) for line in stderr.splitlines() if line.startswith("peak_rss_mib=")),
               default=0.0)


class Bench:
    def __init__(self, server: FakeLLMServer, tmp: Path, args: argparse.Namespace) -> None:
        self.server, self.tmp, self.args = server, tmp, args
        self.env = python_env(tmp / "pycache", OPENAI_BASE_URL=server.openai_base_url,
                              ANTHROPIC_BASE_URL=server.anthropic_base_url, OPENAI_API_KEY="sk-bench-dummy",
                              ANTHROPIC_API_KEY="sk-bench-dummy")

    def command(self, tree: Path, script: str, *args: str, cwd: Path | None = None) -> tuple[float, str, str]:
        """Run ``tree``'s ``scripts/<script>`` (peak RSS reported); returns (seconds, stdout, stderr)."""
        t0 = time.monotonic()
        done = subprocess.run([sys.executable, str(PEAK), str(tree / "scripts" / script), *args], env=self.env,
                              cwd=cwd, capture_output=True, text=True)
        seconds = time.monotonic() - t0
        if done.returncode:
            sys.exit(f"{tree.name}: {script} {' '.join(args[:4])} failed (exit {done.returncode}):\n"
                     f"{done.stderr[-2000:]}")
        return seconds, done.stdout, done.stderr

    def sdk_alone(self) -> float:
        """Seconds a bare python takes to import the OpenAI SDK and build one client (the floor of a first call)."""
        code = ("import os, sys, openai; openai.OpenAI(api_key='sk-bench-dummy', base_url='http://127.0.0.1:9/v1'); "
                "sys.stdout.write('ready\\n'); sys.stdout.flush(); os._exit(0)")  # timed to "ready": no teardown
        t0 = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-c", code], env=self.env, stdout=subprocess.PIPE, text=True)
        ready = proc.stdout.readline()
        seconds = time.monotonic() - t0
        proc.stdout.close()
        if proc.wait() or ready != "ready\n":
            sys.exit(f"the SDK alone failed (exit {proc.returncode})")
        return seconds

    def run(self, tree: Path, project: Path, run_id: str) -> dict[str, float]:
        """One run as a user makes it; the server's log gives the first call and the last reply, and the process's
        CPU time is sampled every 10 ms (``/proc/PID/stat``), so each span is also given in CPU seconds: on a
        loaded machine wall time stretches with the load, CPU time much less."""
        self.server.reset()
        cmd = [sys.executable, str(PEAK), str(tree / "scripts" / "run_benchmark.py"), "--project", str(project),
               "--progress", "quiet", "--run-id", run_id]
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        samples: list[tuple[float, float]] = []
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                cpu = _cpu_seconds(proc.pid)
                if cpu is not None:
                    samples.append((time.monotonic(), cpu))
                time.sleep(0.01)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        err = proc.communicate()[1]
        end = time.monotonic()
        done.set()
        sampler.join()
        if proc.returncode:
            sys.exit(f"{tree.name}: run_benchmark.py failed (exit {proc.returncode}):\n{err[-2000:]}")
        calls = [r["t"] for r in self.server.requests]
        first, last = min(calls), max(calls) + self.args.latency
        total_cpu = samples[-1][1] if samples else 0.0

        def cpu_at(t: float) -> float:
            return max((c for at, c in samples if at <= t), default=0.0)

        n = self.args.items
        ideal = n * 2 * self.args.latency / self.args.concurrency
        return {"first_call": first - t0, "first_call_cpu": cpu_at(first),
                "last_reply_to_exit": end - last, "last_reply_to_exit_cpu": total_cpu - cpu_at(last),
                "wall_over_ideal": (end - t0) / ideal, "peak_mib": _peak(err)}


def _row(name: str, before: list[float], after: list[float], goal: str, fmt: str = "{:6.2f}") -> str:
    b, a = median(before), median(after)
    return (f"  {name:<34} before {fmt.format(b)}  after {fmt.format(a)}  after/before {ratio(a, b)}  goal {goal}")


def run_sections(bench: Bench, trees: dict[str, Path], data: Path, sections: set[str]) -> None:
    args = bench.args
    figures: dict[tuple[str, str, str], list[float]] = {}
    last: dict[str, tuple[Path, str]] = {}
    sdk_alone: list[float] = []
    for round_ in range(args.repeat):
        sdk_alone.append(bench.sdk_alone())
        for label, tree in trees.items():
            project = make_project(bench.tmp / f"{label}-{round_}", dataset=data, variant="_oracle",
                                   concurrency=args.concurrency, cacheEnabled=False,
                                   requestTimeoutSeconds=600)  # the user's default (the tests' 5 s hides a client)
            for kind in ("cold", "warm"):
                result = bench.run(tree, project, f"{kind}")
                for key, value in result.items():
                    figures.setdefault((kind, key, label), []).append(value)
            last[label] = (project, "warm")
    have_before = "before" in trees
    for kind in ("cold", "warm"):
        print(f"run, {kind} ({'a new project' if kind == 'cold' else 'the next run in that project'}):")
        for key, goal in (("first_call", f"<= {GOAL_S:.1f} s"), ("first_call_cpu", f"<= {GOAL_S:.1f} s"),
                          ("last_reply_to_exit", f"<= {GOAL_S:.1f} s"), ("last_reply_to_exit_cpu", f"<= {GOAL_S:.1f} s"),
                          ("wall_over_ideal", "-"), ("peak_mib", "-")):
            after = figures[(kind, key, "after")]
            before = figures.get((kind, key, "before"), [])
            name = {"first_call": "start -> first model call (s)", "first_call_cpu": "  the same in CPU seconds",
                    "last_reply_to_exit": "last reply -> exit (s)", "last_reply_to_exit_cpu": "  the same in CPU seconds",
                    "wall_over_ideal": "wall / ideal", "peak_mib": "peak RSS (MiB)"}[key]
            print(_row(name, before, after, goal, "{:6.0f}" if key == "peak_mib" else "{:6.2f}") if have_before
                  else f"  {name:<34} {median(after):6.2f}  goal {goal}")
            if key == "first_call":
                floor = median(sdk_alone)
                print(f"    of which the SDK alone (s)       {floor:6.2f}  (a bare python importing openai and "
                      f"building one client, in each round: the floor at this machine's speed of the moment)")
                over = [a - f for a, f in zip(after, sdk_alone)]
                under = [b - f for b, f in zip(before, sdk_alone)] if before else []
                print(_row("    the rest: our own start (s)", under, over, "-") if have_before
                      else f"    the rest: our own start (s)     {median(over):6.2f}")

    if "scorecard" in sections or "status" in sections:
        timings: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.repeat):
            for label, tree in trees.items():
                project, run_id = last[label]
                base = ["--run-id", run_id, "--project", str(project)]
                if "scorecard" in sections:
                    timings.setdefault(("rescore", label), []).append(
                        bench.command(tree, "scorecard.py", *base, "--rescore")[0])
                    timings.setdefault(("reuse", label), []).append(bench.command(tree, "scorecard.py", *base)[0])
                if "status" in sections:
                    timings.setdefault(("status", label), []).append(
                        bench.command(tree, "run_status.py", *base)[0])
        names = {"rescore": "scorecard.py --rescore (s)", "reuse": "scorecard.py, run unchanged (s)",
                 "status": "run_status.py (s)"}
        goals = {"rescore": "-", "reuse": "well under 1 s", "status": f"<= {GOAL_S:.1f} s"}
        print("a finished run of that size:")
        for key in names:
            if (key, "after") in timings:
                print(_row(names[key], timings.get((key, "before"), []), timings[(key, "after")], goals[key]))


def hypotheses_section(bench: Bench, trees: dict[str, Path], items: list[dict[str, Any]]) -> None:
    import bench_hypotheses_judge as hyp

    reason = hyp.skip_reason()
    if reason:
        print(f"hypotheses: skipped: {reason}")
        return
    args = bench.args
    tmp = bench.tmp / "hyp"
    upstream = hyp.export_upstream(tmp / "LongMemEval")
    chosen = items[: args.hyp_items]
    ref = tmp / "ref.json"
    ref.write_text(json.dumps(chosen))
    lines = "".join(json.dumps({"question_id": it["question_id"], "hypothesis": f"The answer is {it['answer']}."})
                    + "\n" for it in chosen)
    bench.server.latency = args.hyp_latency
    (tmp / "upstream").mkdir()
    (tmp / "upstream" / "hyps.jsonl").write_text(lines)
    ours: dict[str, list[float]] = {}
    ups: list[float] = []
    for round_ in range(min(args.repeat, 3)):  # upstream takes a minute a round: at most 3
        t0 = time.monotonic()  # upstream in every round, beside ours: the machine's speed changes over minutes
        subprocess.run([sys.executable, str(upstream / "src" / "evaluation" / "evaluate_qa.py"), "gpt-4o",
                        "hyps.jsonl", str(ref)], env=bench.env, cwd=tmp / "upstream", check=True, capture_output=True)
        up = time.monotonic() - t0
        ups.append(up)
        for label, tree in trees.items():
            project = make_project(tmp / f"{label}-{round_}", dataset=ref, variant="_oracle",
                                   longmemeval_root=str(upstream), concurrency=args.concurrency, cacheEnabled=False,
                                   requestTimeoutSeconds=600)
            (project / "hyps.jsonl").write_text(lines)
            seconds, _, _ = bench.command(tree, "run_benchmark.py", "--project", str(project), "--progress", "quiet",
                                          "--hypotheses", str(project / "hyps.jsonl"))
            ours.setdefault(label, []).append(seconds / up)
    print(f"hypotheses: {len(chosen)} judged as a run (scorecard included) at {args.hyp_latency * 1000:.0f} ms/call, "
          f"concurrency {args.concurrency}; upstream evaluate_qa.py (sequential, timed in each round) "
          f"{median(ups):.1f} s")
    print(_row("ours / upstream", ours.get("before", []), ours["after"], f"<= {1 / 6:.3f}", "{:6.3f}"))
    bench.server.latency = args.latency


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=200, help="oracle items per run (default 200)")
    parser.add_argument("--latency", type=float, default=0.1, help="fake server seconds per call (default 0.1)")
    parser.add_argument("--concurrency", type=int, default=8, help="the runs' concurrency (default 8)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; each figure is their median (default 3)")
    parser.add_argument("--before", default="main", help="the revision to compare with (default main; '' for none)")
    parser.add_argument("--only", default="run,scorecard,status,hypotheses", help="comma-separated sections")
    parser.add_argument("--hyp-items", type=int, default=100, help="hypotheses to judge (default 100)")
    parser.add_argument("--hyp-latency", type=float, default=0.5, help="judge seconds per call there (default 0.5)")
    args = parser.parse_args()
    source = DATA_DIR / "longmemeval_oracle.json"
    if not source.exists():
        print(f"skipped: {source} not found")
        return 0
    sections = set(args.only.split(","))
    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer(log_bodies=False) as server:
        tmp = Path(tmp)
        items = json.loads(source.read_text())
        data = tmp / "oracle.json"
        data.write_text(json.dumps(items[: args.items]))
        server.answers = {it["question"]: it["answer"] for it in items}
        server.correct_share = 0.8
        server.latency = args.latency
        trees = find_trees(args.before, tmp)
        print(f"# the tax of a run: {args.items} real oracle items, fake server {args.latency * 1000:.0f} ms/call, "
              f"concurrency {args.concurrency}, median of {args.repeat}; {headline(args.before, trees)}")
        bench = Bench(server, tmp, args)
        for tree in trees.values():  # compile each tree's bytecode once, as a first run after install does
            bench.command(tree, "run_benchmark.py", "--help")
        if sections & {"run", "scorecard", "status"}:
            run_sections(bench, trees, data, sections)
        if "hypotheses" in sections:
            hypotheses_section(bench, trees, items)
    return 0


if __name__ == "__main__":
    sys.exit(main())
