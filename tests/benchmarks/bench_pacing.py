"""Benchmark pacing against a fake server that enforces provider rate limits. Prints figures.

    bash tests/venv_python.sh tests/benchmarks/bench_pacing.py [--only rpm5,rpm20,rpm20-anthropic,tpm,...] [--repeat 2]

The fake server (in this process, so its request log can be read) enforces requests per minute and tokens per
minute per model, answers 429 with Retry-After beyond them, and puts the provider's rate-limit headers on every
reply; its buckets hold ``--burst-s`` seconds of a limit (default 1: a provider that enforces short windows, the
hard case). The driver runs as a real subprocess, as a user runs it; the reader and the judge share one model, so
one budget. Cases:

- ``rpm5``, ``rpm20``: R = 5 and 20 requests/s (OpenAI shape), real oracle items, concurrency 32;
  ``rpm20-anthropic``: the same on the Anthropic shape;
- ``tpm``: tokens-bound, ``_s``-sized prompts (real ``_s`` items when present, else oracle items padded to that
  size) at 2M tokens/min; prints wall / (tokens / TPM);
- ``config``: a proxy that sends no headers, its limit set in the config (``providers.openai.rpm``);
- ``noheaders``: no headers and no config (the concurrency limiter alone, for reference);
- ``oversize``: a tokens-per-minute limit below one prompt: items fail at once with kind ``too_large_for_tpm``.

Per case: the share of the limit achieved (over the driver's whole wall time, and over the span the server saw
requests), the share of requests answered 429, failed items, exit status, and the pacer's status text. Done when
rpm5, rpm20 and tpm show >= 0.90 of the limit, < 5% 429s and 0 failed items. ``--driver DIR`` runs another
checkout's scripts (e.g. an export of main) for a before/after. Needs the LongMemEval copy in
../shared/data/longmemeval (or LONGMEMEVAL_DATA_DIR); skips without it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
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


def drive(project: Path, server: FakeLLMServer, driver: Path, *args: str) -> tuple[float, int, str]:
    env = dict(os.environ)
    env.update(OPENAI_BASE_URL=server.openai_base_url, ANTHROPIC_BASE_URL=server.anthropic_base_url,
               OPENAI_API_KEY="sk-bench-dummy", ANTHROPIC_API_KEY="sk-bench-dummy", LONGMEMEVAL_TIKTOKEN="0")
    cmd = [sys.executable, str(driver / "run_benchmark.py"), "--project", str(project), "--progress", "quiet",
           "--no-scorecard", "--yes", *args]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    drive.started = t0
    return time.monotonic() - t0, proc.returncode, proc.stderr


drive.started = 0.0
def failed_items(project: Path, run_id: str) -> tuple[int, dict[str, int]]:
    root = project / ".longmemeval-benchmarks" / "runs" / run_id
    rows: dict[str, dict] = {}
    for line in (root / "item-results.jsonl").read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            rows[row["question_id"]] = row
    manifest = json.loads((root / "manifest.json").read_text())
    kinds: dict[str, int] = {}
    for row in rows.values():
        if row["status"] != "judged":
            kinds[row["error"]["kind"]] = kinds.get(row["error"]["kind"], 0) + 1
    judged = sum(1 for r in rows.values() if r["status"] == "judged")
    return manifest["n_total"] - judged, kinds


def pacing_text(project: Path, run_id: str) -> str:
    meta = json.loads((project / ".longmemeval-benchmarks" / "runs" / run_id / "run-meta.json").read_text())
    entries = (meta.get("invocations") or [{}])[-1].get("pacing")
    if entries is None:
        return "(no pacing figures: a driver without the pacer)"
    from lme.run.pacing_status import status_text

    return status_text(entries) or "-"


def run_case(name: str, tmp: Path, server: FakeLLMServer, driver: Path, *, items: list[dict[str, Any]],
             rpm: float | None, tpm: float | None, provider: str = "openai", headers: bool = True,
             config_limits: dict[str, float] | None = None, latency: float = 0.02, concurrency: int = 32,
             measure: str = "requests") -> dict[str, Any]:
    data = tmp / f"{name}.json"
    data.write_text(json.dumps(items))
    model = CLAUDE if provider == "anthropic" else MODEL
    providers_cfg = {provider: dict(config_limits)} if config_limits else {}
    project = make_project(tmp / name, dataset=data, variant="_oracle", concurrency=concurrency,
                           cacheEnabled=False, maxAttempts=8, requestTimeoutSeconds=60, targetProvider=provider,
                           targetModel=model, judgeProvider=provider, judgeModel=model, providers=providers_cfg)
    server.reset()
    server.answers = {it["question"]: it["answer"] for it in items}
    server.correct_share = 0.8
    server.latency = latency
    server.rpm, server.tpm, server.rate_headers = rpm, tpm, headers
    seconds, code, err = drive(project, server, driver, "--run-id", name)
    log = [r for r in server.requests if r["path"] in ("/v1/chat/completions", "/v1/messages")]
    server.rpm = server.tpm = None
    ok = [r for r in log if r.get("status") == 200]
    refused = sum(1 for r in log if r.get("status") == 429)
    failed, kinds = failed_items(project, name)
    span = (ok[-1]["t"] - ok[0]["t"]) if len(ok) > 1 else 0.0
    if measure == "tokens":
        amount = sum(int(r.get("cost") or 0) for r in ok)
        limit_per_s = tpm / 60.0
        span_amount = amount - int(ok[0].get("cost") or 0) if ok else 0
    else:
        amount = len(ok)
        limit_per_s = (rpm or 0) / 60.0
        span_amount = amount - 1
    return {
        "case": name, "wall_s": seconds, "exit": code, "failed": failed, "kinds": kinds,
        "requests": len(log), "ok": len(ok), "429": refused, "share_429": refused / len(log) if log else 0.0,
        "share_wall": amount / seconds / limit_per_s if limit_per_s else None,
        "share_span": span_amount / span / limit_per_s if span and limit_per_s else None,
        "ideal_s": amount / limit_per_s if limit_per_s else None, "tokens": amount if measure == "tokens" else None,
        "pacing": pacing_text(project, name), "stderr_tail": err.strip().splitlines()[-1:] if code not in (0,) else [],
        "first_request_s": log[0]["t"] - drive.started if log else None, "span_s": span,
    }


def show(r: dict[str, Any], unit: str) -> None:
    share = "-" if r["share_wall"] is None else f"{r['share_wall']:.3f}"
    span = "-" if r["share_span"] is None else f"{r['share_span']:.3f}"
    line = (f"{r['case']:<16} share_of_{unit}_over_wall={share} over_server_span={span} "
            f"429s={r['429']}/{r['requests']} ({100 * r['share_429']:.1f}%) failed_items={r['failed']} "
            f"exit={r['exit']} "
            f"wall={r['wall_s']:.1f}s")
    if r["tokens"] is not None and r["ideal_s"]:
        line += f" tokens={r['tokens']:,} wall/(tokens/TPM)={r['wall_s'] / r['ideal_s']:.3f}"
    if r["first_request_s"] is not None:
        line += f" first_request_after={r['first_request_s']:.1f}s"
    if r["kinds"]:
        line += f" error_kinds={r['kinds']}"
    print(line, flush=True)
    print(f"{'':<16} pacer: {r['pacing']}", flush=True)
    if r["stderr_tail"]:
        print(f"{'':<16} driver: {r['stderr_tail'][0][:300]}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="rpm5,rpm20,rpm20-anthropic,tpm,config,oversize",
                        help="comma-separated cases (also: noheaders)")
    parser.add_argument("--repeat", type=int, default=1, help="run each case this many times (default 1)")
    parser.add_argument("--burst-s", type=float, default=1.0,
                        help="seconds of a limit the server's buckets hold (default 1; 60 = the whole minute)")
    parser.add_argument("--driver", type=Path, default=REPO / "scripts",
                        help="the scripts/ folder whose run_benchmark.py runs (default: this checkout's)")
    parser.add_argument("--s-items", type=int, default=12, help="_s-sized items in the tpm case (default 12)")
    args = parser.parse_args()
    if not ORACLE.exists():
        print(f"skipped: {ORACLE} not found")
        return 0
    cases = args.only.split(",")
    print(f"# pacing: fake server buckets hold {args.burst_s:g} s of a limit; driver {args.driver}", flush=True)
    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer(log_bodies=False) as server:
        tmp = Path(tmp)
        server.burst_s = args.burst_s
        for rep in range(args.repeat):
            for case in cases:
                name = f"{case}-{rep + 1}"
                if case == "rpm5":
                    show(run_case(name, tmp, server, args.driver, items=oracle_items(100), rpm=300, tpm=None), "R")
                elif case == "rpm20":
                    show(run_case(name, tmp, server, args.driver, items=oracle_items(250), rpm=1200, tpm=None), "R")
                elif case == "rpm20-anthropic":
                    show(run_case(name, tmp, server, args.driver, items=oracle_items(250), rpm=1200, tpm=None,
                                  provider="anthropic"), "R")
                elif case == "config":
                    show(run_case(name, tmp, server, args.driver, items=oracle_items(250), rpm=1200, tpm=None,
                                  headers=False, config_limits={"rpm": 1200}), "R")
                elif case == "noheaders":
                    show(run_case(name, tmp, server, args.driver, items=oracle_items(250), rpm=1200, tpm=None,
                                  headers=False), "R")
                elif case == "tpm":
                    items, what = s_items(args.s_items)
                    print(f"{'':<16} ({len(items)} {what})", flush=True)
                    show(run_case(name, tmp, server, args.driver, items=items, rpm=10_000, tpm=2_000_000,
                                  latency=1.0, concurrency=8, measure="tokens"), "TPM")
                elif case == "oversize":
                    items, _ = s_items(2)
                    show(run_case(name, tmp, server, args.driver, items=items, rpm=10_000, tpm=100_000,
                                  concurrency=2, measure="tokens"), "TPM")
                else:
                    print(f"unknown case {case!r}", file=sys.stderr)
                    return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
