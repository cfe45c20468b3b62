"""Judge one hypotheses file three ways, side by side, against the fake judge at 500 ms a call. Prints figures.

    bash tests/venv_python.sh tests/benchmarks/bench_hypotheses_judge.py [--items 100] [--latency 0.5] [--concurrency 8]

1. upstream: ``evaluate_qa.py gpt-4o HYP REF`` from the LongMemEval mirror's own files (exported into a temp dir,
   run there with OPENAI_BASE_URL at the fake server; nothing of it enters this repository): one call at a time.
2. ours, the file flow: ``judge_shim.py --hyp-file HYP --ref-file REF --concurrency 8``.
3. ours, as a run: ``run_benchmark.py --hypotheses HYP --concurrency 8`` (checkpoints, scorecard, resume).
Then a kill -9 of the run mid-way and a resume by run id, which must end with one row per question. Prints each
wall time, ours / upstream (the goal: <= 1/6), whether the labels of all three are identical, and whether
judge_shim's output file holds upstream's bytes (``cmp``).

The fake server (tests/fake_llm_server.py) runs as a subprocess with ``--latency``; the judge prompt is upstream's
own (our judge reads ``get_anscheck_prompt`` from the same exported checkout). Needs the upstream mirror at
/work/.mirror/xiaowu0162+LongMemEval/repo (or LONGMEMEVAL_MIRROR) and the real oracle file in
../shared/data/longmemeval (or LONGMEMEVAL_DATA_DIR); says "skipped" when either is absent.
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

from run_project import make_project  # noqa: E402

DATA_DIR = Path(os.environ.get("LONGMEMEVAL_DATA_DIR", REPO.parent / "shared" / "data" / "longmemeval"))
MIRROR = Path(os.environ.get("LONGMEMEVAL_MIRROR", "/work/.mirror/xiaowu0162+LongMemEval/repo"))
NON_ASCII = ("I don't know.", "Je ne sais pas — désolé.", "不知道 🤷", 'No "idea" \\ at all.\nSorry.')
"""Every fourth hypothesis (wrong answers): non-ASCII text, so the outputs' bytes show upstream's escaping."""
UPSTREAM_NEEDS = ("openai", "backoff", "tqdm", "numpy")
"""What upstream's evaluate_qa.py imports."""


def skip_reason() -> str | None:
    if not (DATA_DIR / "longmemeval_oracle.json").is_file():
        return f"{DATA_DIR}/longmemeval_oracle.json not found"
    if not MIRROR.exists():
        return f"the upstream mirror {MIRROR} is absent"
    probe = subprocess.run([sys.executable, "-c", "import " + ", ".join(UPSTREAM_NEEDS)], capture_output=True)
    if probe.returncode:
        return f"upstream's evaluate_qa.py needs {', '.join(UPSTREAM_NEEDS)} in {sys.executable}"
    return None


def export_upstream(dest: Path) -> Path:
    """The mirror's src/evaluation, as files in ``dest`` (a checkout the judge and the script both read)."""
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(MIRROR), "archive", "HEAD", "src/evaluation"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def start_server(latency: float, answers: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, str(REPO / "tests" / "fake_llm_server.py"), "--port", "0",
                             "--latency", str(latency), "--answers", str(answers)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return proc, proc.stdout.readline().strip()


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    t0 = time.monotonic()
    done = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.monotonic() - t0
    if done.returncode:
        sys.exit(f"{' '.join(cmd[:3])} ... failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return seconds


def labels_of_file(path: Path) -> dict[str, bool]:
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return {x["question_id"]: bool(x["autoeval_label"]["label"]) for x in lines}


def run_rows(project: Path, run_id: str) -> list[dict]:
    path = project / ".longmemeval-benchmarks" / "runs" / run_id / "item-results.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100, help="hypotheses to judge (default 100)")
    parser.add_argument("--latency", type=float, default=0.5, help="fake judge seconds per call (default 0.5)")
    parser.add_argument("--concurrency", type=int, default=8, help="our judge calls in flight (default 8)")
    args = parser.parse_args()
    reason = skip_reason()
    if reason:
        print(f"skipped: {reason}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        upstream = export_upstream(tmp / "LongMemEval")
        items = json.loads((DATA_DIR / "longmemeval_oracle.json").read_text())[: args.items]
        ref = tmp / "ref.json"
        ref.write_text(json.dumps(items))
        hyps = [{"question_id": it["question_id"],
                 "hypothesis": NON_ASCII[i // 4 % len(NON_ASCII)] if i % 4 == 0 else f"The answer is {it['answer']}."}
                for i, it in enumerate(items)]
        body = "".join(json.dumps(h, ensure_ascii=False) + "\n" for h in hyps)  # raw UTF-8, as many scripts write
        for name in ("upstream", "shim", "run"):
            (tmp / name).mkdir()
            (tmp / name / "hyps.jsonl").write_text(body)
        server, url = start_server(args.latency, ref)
        try:
            env = {**os.environ, "OPENAI_BASE_URL": f"{url}/v1", "OPENAI_API_KEY": "sk-bench-dummy"}
            n = len(items)
            print(f"# judging {n} hypotheses (real oracle items) with upstream's prompt; fake judge "
                  f"{args.latency * 1000:.0f} ms/call; ours at concurrency {args.concurrency}")

            up = timed([sys.executable, str(upstream / "src" / "evaluation" / "evaluate_qa.py"), "gpt-4o",
                        "hyps.jsonl", str(ref)], env, tmp / "upstream")
            print(f"upstream evaluate_qa.py (sequential)        wall={up:6.2f}s")

            shim_project = tmp / "shim"
            shim = timed([sys.executable, str(REPO / "scripts" / "judge_shim.py"), "--longmemeval-root",
                          str(upstream), "--hyp-file", "hyps.jsonl", "--ref-file", str(ref), "--concurrency",
                          str(args.concurrency), "--project", str(shim_project)], env, shim_project)
            print(f"ours judge_shim.py --hyp-file --concurrency {args.concurrency}  wall={shim:6.2f}s  "
                  f"ours/upstream={shim / up:5.3f} (goal <= {1 / 6:.3f})")

            def project(name: str) -> Path:
                return make_project(tmp / name / "project", dataset=ref, variant="_oracle",
                                    longmemeval_root=str(upstream), concurrency=args.concurrency, maxAttempts=8,
                                    requestTimeoutSeconds=30)

            driver = [sys.executable, str(REPO / "scripts" / "run_benchmark.py"), "--progress", "quiet",
                      "--hypotheses", str(tmp / "run" / "hyps.jsonl")]
            run_project = project("run")
            ours = timed([*driver, "--project", str(run_project), "--run-id", "bench", "--no-scorecard"], env,
                         run_project)
            print(f"ours run_benchmark.py --hypotheses          wall={ours:6.2f}s  "
                  f"ours/upstream={ours / up:5.3f} (goal <= {1 / 6:.3f})")
            t0 = time.monotonic()
            subprocess.run([sys.executable, str(REPO / "scripts" / "scorecard.py"), "--run-id", "bench",
                            "--project", str(run_project)], cwd=run_project, capture_output=True, check=True)
            print(f"  then its scorecard, charts and report.html: {time.monotonic() - t0:5.2f}s (no model call)")

            upstream_labels = labels_of_file(tmp / "upstream" / "hyps.jsonl.eval-results-gpt-4o")
            shim_labels = labels_of_file(tmp / "shim" / "hyps.jsonl.eval-results-gpt-4o")
            run_labels = {r["question_id"]: r["judgment"]["label"] for r in run_rows(run_project, "bench")
                          if r["status"] == "judged"}
            same = upstream_labels == shim_labels == run_labels and len(upstream_labels) == n
            print(f"labels identical (upstream, judge_shim, run): {same}; {sum(upstream_labels.values())} of "
                  f"{len(upstream_labels)} correct")
            same_bytes = ((tmp / "upstream" / "hyps.jsonl.eval-results-gpt-4o").read_bytes()
                          == (tmp / "shim" / "hyps.jsonl.eval-results-gpt-4o").read_bytes())
            print(f"judge_shim's output file byte for byte upstream's (cmp): {same_bytes}")

            crash = project("crash")
            cmd = [*driver, "--project", str(crash), "--run-id", "crash", "--no-scorecard"]
            proc = subprocess.Popen(cmd, env=env, cwd=crash, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            while len(run_rows(crash, "crash")) < n // 3 and proc.poll() is None:
                time.sleep(0.05)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            before = len(run_rows(crash, "crash"))
            resume = timed([sys.executable, str(REPO / "scripts" / "run_benchmark.py"), "--progress", "quiet",
                            "--project", str(crash), "--run-id", "crash", "--no-scorecard"], env, crash)  # its own settings
            rows = run_rows(crash, "crash")
            ids = [r["question_id"] for r in rows]
            crash_labels = {r["question_id"]: r["judgment"]["label"] for r in rows if r["status"] == "judged"}
            print(f"kill -9 after {before} rows, resume by run id: wall={resume:6.2f}s rows={len(rows)} "
                  f"unique={len(set(ids))} (must both be {n}); labels identical to upstream's: "
                  f"{crash_labels == upstream_labels}")
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
