"""Benchmark pacing against a fake server that enforces provider rate limits: each figure beside its goal.

    bash tests/venv_python.sh tests/benchmarks/bench_pacing.py                    # the issue's cases, once (about 4 min)
    bash tests/venv_python.sh tests/benchmarks/bench_pacing.py --repeat 3         # medians of 3 runs
    bash tests/venv_python.sh tests/benchmarks/bench_pacing.py --only all         # also the older cases below
    bash tests/venv_python.sh tests/benchmarks/bench_pacing.py --driver /tmp/main/scripts   # another checkout, for a before

The fake server (in this process, so its request log can be read) enforces requests per minute and tokens per
minute per model and answers 429 with Retry-After beyond them; its buckets hold ``--burst-s`` seconds of a limit
(default 1: a provider that enforces short windows, the hard case). With headers it puts OpenAI's
``x-ratelimit-*`` on every reply; without, a 429 says only when to retry (a proxy or an OpenAI-compatible server).
The driver runs as a real subprocess (``run_benchmark.py``, real SDKs), as a user runs it; the reader and the judge
share one model, so one budget. The issue's cases (100 oracle items, a limit of 10 requests/s per model):

- ``headers-c8``, ``headers-c32``, ``headers-c64``: OpenAI headers, concurrency 8, 32, 64. Goal: >= 0.95 of the
  limit over the server window, < 5% of requests 429, 0 failed items;
- ``noheaders-c8``, ``noheaders-c32``, ``noheaders-c64``: no headers (``Retry-After`` and ``retry-after-ms`` on a
  429 only). Goal: >= 0.90 of the limit, <= 10% 429, 0 failed;
- ``noheaders-c32-seconds``: no headers and a bare ``Retry-After`` in whole seconds (what most proxies send);
- ``noheaders-c32-30items``: a short run (the loop's re-test sets are 20-60 items), where the start is most of it;
- ``noheaders-tpm``: a tokens-per-minute limit only (``TPM_LIMIT``), no headers, concurrency 32; the share is of
  tokens. Same goal as without headers.

Older cases (``--only all`` or by name): ``rpm5``, ``rpm20`` (R = 5 and 20 requests/s, OpenAI shape, concurrency
32), ``rpm20-anthropic``, ``tpm`` (``_s``-sized prompts at 2M tokens/min with headers; prints wall / (tokens /
TPM)), ``config`` (no headers, the limit in the config), ``noheaders`` (R = 20 without headers), ``oversize`` (a
TPM below one prompt: items fail at once as ``too_large_for_tpm``).

"Share of the limit over the server window" is (accepted - 1) / (time from the first to the last accepted request)
/ limit (the provider's bucket starts full, so a run at the limit shows about 1.04: one second of burst in some 20 s);
the share over the driver's wall time (start-up and scoring included) is printed beside it. With
``--repeat N`` the table shows the median of the N runs and every run's value. Needs the LongMemEval copy in
../shared/data/longmemeval (or LONGMEMEVAL_DATA_DIR); skips without it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path[:0] = [str(REPO / "scripts"), str(REPO / "tests")]

from fake_llm_server import FakeLLMServer  # noqa: E402
from run_project import make_project  # noqa: E402

DATA_DIR = Path(os.environ.get("LONGMEMEVAL_DATA_DIR", REPO.parent / "shared" / "data" / "longmemeval"))
ORACLE = DATA_DIR / "longmemeval_oracle.json"
S_FILE = DATA_DIR / "longmemeval_s_cleaned.499of500.json.xz"
MODEL = "gpt-4o-2024-08-06"
CLAUDE = "claude-sonnet-4-5"
S_PROMPT_CHARS = 480_000
"""About the size of an ``_s`` full-context prompt (115k-120k tokens)."""
R10 = 600
"""The issue's limit: 10 requests a second per model."""
TPM_LIMIT = 2_000_000
"""The tokens-only case: 100 oracle items cost about 0.75M tokens (prompts plus ``max_tokens``), some 20 s of it."""


@dataclass(frozen=True)
class Case:
    """One benchmark case: what the server enforces and says, what the run sends, and the goals."""

    name: str
    items: str = "oracle"
    """``oracle`` (real oracle items), ``s`` (``_s``-sized prompts)."""
    n: int = 100
    rpm: float | None = R10
    tpm: float | None = None
    headers: bool = True
    retry_after_seconds: bool = False
    provider: str = "openai"
    config_limits: dict[str, float] = field(default_factory=dict)
    concurrency: int = 32
    latency: float = 0.02
    measure: str = "requests"
    goal_share: float | None = None
    """The share of the limit over the server window must reach this."""
    goal_429: float | None = None
    """The share of requests answered 429 must stay below (``strict_429``) or at this."""
    strict_429: bool = True
    goal_failed: int | None = 0
    issue: bool = False
    """One of the issue's cases (run by default)."""


WITH_HEADERS = dict(goal_share=0.95, goal_429=0.05, strict_429=True, issue=True)
WITHOUT_HEADERS = dict(headers=False, goal_share=0.90, goal_429=0.10, strict_429=False, issue=True)
CASES = [
    Case("headers-c32", concurrency=32, **WITH_HEADERS),
    Case("noheaders-c32", concurrency=32, **WITHOUT_HEADERS),
    Case("headers-c8", concurrency=8, **WITH_HEADERS),
    Case("noheaders-c8", concurrency=8, **WITHOUT_HEADERS),
    Case("headers-c64", concurrency=64, **WITH_HEADERS),
    Case("noheaders-c64", concurrency=64, **WITHOUT_HEADERS),
    Case("noheaders-c32-seconds", concurrency=32, retry_after_seconds=True, **WITHOUT_HEADERS),
    Case("noheaders-c32-30items", n=30, concurrency=32, **WITHOUT_HEADERS),
    Case("noheaders-tpm", rpm=None, tpm=TPM_LIMIT, measure="tokens", **WITHOUT_HEADERS),
    Case("rpm5", rpm=300, goal_share=0.90, goal_429=0.05),
    Case("rpm20", n=250, rpm=1200, goal_share=0.90, goal_429=0.05),
    Case("rpm20-anthropic", n=250, rpm=1200, provider="anthropic", goal_share=0.90, goal_429=0.05),
    Case("tpm", items="s", n=12, rpm=10_000, tpm=2_000_000, latency=1.0, concurrency=8, measure="tokens",
         goal_share=0.90, goal_429=0.05),
    Case("config", n=250, rpm=1200, headers=False, config_limits={"rpm": 1200}, goal_share=0.90, goal_429=0.05),
    Case("noheaders", n=250, rpm=1200, headers=False),
    Case("oversize", items="s", n=2, rpm=10_000, tpm=100_000, concurrency=2, measure="tokens", goal_failed=None),
]
BY_NAME = {c.name: c for c in CASES}


def oracle_items(n: int) -> list[dict[str, Any]]:
    return json.loads(ORACLE.read_text())[:n]


def s_items(n: int) -> tuple[list[dict[str, Any]], str]:
    """``n`` real ``_s`` items (streamed from the xz file), else oracle items padded to an ``_s`` prompt's size."""
    if S_FILE.exists():
        from lme.data import dataset

        items = []
        for raw in dataset.iter_items(S_FILE):
            items.append(raw)
            if len(items) == n:
                break
        return items, "real _s items"
    padded = []
    for item in oracle_items(n):
        sessions, dates = list(item["haystack_sessions"]), list(item["haystack_dates"])
        ids = list(item["haystack_session_ids"])
        filler = [{"role": "user", "content": "Filler chat about the weather and nothing else. " * 40}]
        k = 0
        while sum(len(t["content"]) for s in sessions for t in s) < S_PROMPT_CHARS:
            sessions.insert(0, filler)
            dates.insert(0, dates[0])
            ids.insert(0, f"filler_{k}")
            k += 1
        padded.append({**item, "haystack_sessions": sessions, "haystack_dates": dates, "haystack_session_ids": ids})
    return padded, "oracle items padded to _s size"


def drive(project: Path, server: FakeLLMServer, driver: Path, *args: str) -> tuple[float, float, int, str]:
    """Run the driver as a user would; ``(started, seconds, exit status, stderr)``."""
    env = dict(os.environ)
    env.update(OPENAI_BASE_URL=server.openai_base_url, ANTHROPIC_BASE_URL=server.anthropic_base_url,
               OPENAI_API_KEY="sk-bench-dummy", ANTHROPIC_API_KEY="sk-bench-dummy", LONGMEMEVAL_TIKTOKEN="0")
    cmd = [sys.executable, str(driver / "run_benchmark.py"), "--project", str(project), "--progress", "quiet",
           "--no-scorecard", "--yes", *args]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    return t0, time.monotonic() - t0, proc.returncode, proc.stderr


def failed_items(project: Path, run_id: str) -> tuple[int, dict[str, int]]:
    root = project / ".longmemeval-benchmarks" / "runs" / run_id
    rows: dict[str, dict] = {}
    results = root / "item-results.jsonl"
    for line in (results.read_text().splitlines() if results.exists() else []):
        if line.strip():
            row = json.loads(line)
            rows[row["question_id"]] = row
    if not (root / "manifest.json").exists():
        return -1, {"no run (see the driver's line)": 1}
    manifest = json.loads((root / "manifest.json").read_text())
    kinds: dict[str, int] = {}
    for row in rows.values():
        if row["status"] != "judged":
            kinds[row["error"]["kind"]] = kinds.get(row["error"]["kind"], 0) + 1
    judged = sum(1 for r in rows.values() if r["status"] == "judged")
    return manifest["n_total"] - judged, kinds


def pacing_text(project: Path, run_id: str) -> str:
    path = project / ".longmemeval-benchmarks" / "runs" / run_id / "run-meta.json"
    if not path.exists():
        return "(no run-meta.json)"
    entries = (json.loads(path.read_text()).get("invocations") or [{}])[-1].get("pacing")
    if entries is None:
        return "(no pacing figures: a driver without the pacer)"
    from lme.run.pacing_status import status_text

    return status_text(entries) or "-"


def run_case(case: Case, run_id: str, tmp: Path, server: FakeLLMServer, driver: Path, burst_s: float,
             s_count: int) -> dict[str, Any]:
    if case.items == "s":
        items, what = s_items(s_count if case.name == "tpm" else case.n)
        print(f"{'':<24} ({len(items)} {what})", flush=True)
    else:
        items = oracle_items(case.n)
    data = tmp / f"{run_id}.json"
    data.write_text(json.dumps(items))
    model = CLAUDE if case.provider == "anthropic" else MODEL
    providers_cfg = {case.provider: dict(case.config_limits)} if case.config_limits else {}
    project = make_project(tmp / run_id, dataset=data, variant="_oracle", concurrency=case.concurrency,
                           cacheEnabled=False, maxAttempts=8, requestTimeoutSeconds=60, targetProvider=case.provider,
                           targetModel=model, judgeProvider=case.provider, judgeModel=model, providers=providers_cfg)
    server.reset()
    server.answers = {it["question"]: it["answer"] for it in items}
    server.correct_share = 0.8
    server.latency = case.latency
    server.burst_s = burst_s
    server.rpm, server.tpm, server.rate_headers = case.rpm, case.tpm, case.headers
    server.retry_after_seconds = case.retry_after_seconds
    started, seconds, code, err = drive(project, server, driver, "--run-id", run_id)
    log = [r for r in server.requests if r["path"] in ("/v1/chat/completions", "/v1/messages")]
    server.rpm = server.tpm = None
    server.retry_after_seconds = False
    ok = [r for r in log if r.get("status") == 200]
    refused = sum(1 for r in log if r.get("status") == 429)
    failed, kinds = failed_items(project, run_id)
    span = (ok[-1]["t"] - ok[0]["t"]) if len(ok) > 1 else 0.0
    if case.measure == "tokens":
        amount = sum(int(r.get("cost") or 0) for r in ok)
        limit_per_s = (case.tpm or 0) / 60.0
        span_amount = amount - int(ok[0].get("cost") or 0) if ok else 0
    else:
        amount = len(ok)
        limit_per_s = (case.rpm or 0) / 60.0
        span_amount = amount - 1
    # 429s among the requests of the first 10 s the server saw: the learning phase
    early = [r for r in log if log and r["t"] - log[0]["t"] < 10.0]
    seconds_seen: dict[int, list[int]] = {}
    for r in log:
        counts = seconds_seen.setdefault(int(r["t"] - log[0]["t"]), [0, 0])
        counts[r.get("status") != 200] += 1
    return {
        "timeline": " ".join(f"{ok}/{no}" for _, (ok, no) in sorted(seconds_seen.items())),
        "case": case.name, "wall_s": seconds, "exit": code, "failed": failed, "kinds": kinds,
        "requests": len(log), "ok": len(ok), "429": refused, "share_429": refused / len(log) if log else 0.0,
        "early_429": sum(1 for r in early if r.get("status") == 429), "early": len(early),
        "share_wall": amount / seconds / limit_per_s if limit_per_s and seconds else None,
        "share_span": span_amount / span / limit_per_s if span and limit_per_s else None,
        "ideal_s": amount / limit_per_s if limit_per_s else None,
        "tokens": amount if case.measure == "tokens" else None,
        "pacing": pacing_text(project, run_id),
        "stderr_tail": err.strip().splitlines()[-1:] if code not in (0,) else [],
        "first_request_s": log[0]["t"] - started if log else None, "span_s": span,
    }


def show_run(r: dict[str, Any], unit: str) -> None:
    share = "-" if r["share_wall"] is None else f"{r['share_wall']:.3f}"
    span = "-" if r["share_span"] is None else f"{r['share_span']:.3f}"
    line = (f"{r['case']:<24} share_of_{unit}_over_server_window={span} over_wall={share} "
            f"429s={r['429']}/{r['requests']} ({100 * r['share_429']:.1f}%; first 10 s: {r['early_429']}/"
            f"{r['early']}) failed_items={r['failed']} exit={r['exit']} wall={r['wall_s']:.1f}s "
            f"server_window={r['span_s']:.1f}s")
    if r["tokens"] is not None and r["ideal_s"]:
        line += f" tokens={r['tokens']:,} wall/(tokens/limit)={r['wall_s'] / r['ideal_s']:.3f}"
    if r["first_request_s"] is not None:
        line += f" first_request_after={r['first_request_s']:.1f}s"
    if r["kinds"]:
        line += f" error_kinds={r['kinds']}"
    print(line, flush=True)
    print(f"{'':<24} pacer: {r['pacing']}", flush=True)
    if show_run.timeline:
        print(f"{'':<24} accepted/refused per second: {r['timeline']}", flush=True)
    if r["stderr_tail"]:
        print(f"{'':<24} driver: {r['stderr_tail'][0][:300]}", flush=True)


show_run.timeline = False


def _figure(values: list[float | None], fmt: str) -> tuple[float | None, str]:
    known = [v for v in values if v is not None]
    if not known:
        return None, "-"
    median = statistics.median(known)
    runs = ", ".join(fmt.format(v) for v in known)
    return median, fmt.format(median) + (f" ({runs})" if len(known) > 1 else "")


def summary(case: Case, runs: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    """Rows ``(figure, measured, goal, met)`` for one case over its runs (medians)."""
    unit = "tokens" if case.measure == "tokens" else "requests"
    rows = []
    share, text = _figure([r["share_span"] for r in runs], "{:.3f}")
    if case.goal_share is not None:
        met = share is not None and share >= case.goal_share
        rows.append((f"share of the {unit} limit, server window", text, f">= {case.goal_share:.2f}", _yes(met)))
    else:
        rows.append((f"share of the {unit} limit, server window", text, "-", "-"))
    wall, text = _figure([r["share_wall"] for r in runs], "{:.3f}")
    rows.append((f"share of the {unit} limit, driver wall", text, "-", "-"))
    refused, text = _figure([r["share_429"] for r in runs], "{:.1%}")
    if case.goal_429 is not None:
        met = refused is not None and (refused < case.goal_429 if case.strict_429 else refused <= case.goal_429)
        rows.append(("share of requests answered 429", text,
                     f"{'<' if case.strict_429 else '<='} {case.goal_429:.0%}", _yes(met)))
    else:
        rows.append(("share of requests answered 429", text, "-", "-"))
    early, text = _figure([float(r["early_429"]) for r in runs], "{:.0f}")
    rows.append(("429s in the first 10 s", text, "-", "-"))
    failed, text = _figure([float(r["failed"]) for r in runs], "{:.0f}")
    if case.goal_failed is not None:
        rows.append(("failed items", text, f"{case.goal_failed}", _yes(max(r["failed"] for r in runs) <= case.goal_failed)))
    else:
        rows.append(("failed items", text, "(all, too_large_for_tpm)", "-"))
    return rows


def _yes(met: bool) -> str:
    return "yes" if met else "NO"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(c.name for c in CASES if c.issue),
                        help="comma-separated cases, or 'all' (default: the issue's cases)")
    parser.add_argument("--repeat", type=int, default=1, help="run each case this many times; medians (default 1)")
    parser.add_argument("--burst-s", type=float, default=1.0,
                        help="seconds of a limit the server's buckets hold (default 1; 60 = the whole minute)")
    parser.add_argument("--driver", type=Path, default=REPO / "scripts",
                        help="the scripts/ folder whose run_benchmark.py runs (default: this checkout's)")
    parser.add_argument("--s-items", type=int, default=12, help="_s-sized items in the tpm case (default 12)")
    parser.add_argument("--timeline", action="store_true", help="print each run's accepted/refused per second")
    args = parser.parse_args()
    show_run.timeline = args.timeline
    if not ORACLE.exists():
        print(f"skipped: {ORACLE} not found")
        return 0
    names = [c.name for c in CASES] if args.only == "all" else list(dict.fromkeys(args.only.split(",")))
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        print(f"error: unknown case {unknown[0]!r}; known: {', '.join(BY_NAME)}", file=sys.stderr)
        return 2
    cases = [BY_NAME[n] for n in names]
    print(f"# pacing: fake server buckets hold {args.burst_s:g} s of a limit; driver {args.driver}; "
          f"{args.repeat} run(s) per case", flush=True)
    results: dict[str, list[dict[str, Any]]] = {c.name: [] for c in cases}
    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer(log_bodies=False) as server:
        for rep in range(args.repeat):
            for case in cases:
                r = run_case(case, f"{case.name}-{rep + 1}", Path(tmp), server, args.driver, args.burst_s,
                             args.s_items)
                results[case.name].append(r)
                show_run(r, "TPM" if case.measure == "tokens" else "R")
    print(f"\n# each figure beside its goal ({'median of ' + str(args.repeat) + ' runs' if args.repeat > 1 else 'one run'})")
    print(f"{'case':<24} {'figure':<40} {'measured':<32} {'goal':<12} met")
    misses = 0
    for case in cases:
        for i, (figure, measured, goal, met) in enumerate(summary(case, results[case.name])):
            print(f"{case.name if i == 0 else '':<24} {figure:<40} {measured:<32} {goal:<12} {met}")
            misses += met == "NO"
    print(f"# goals missed: {misses}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
