"""Benchmark the target endpoint: a user's own memory system, written here in its two forms (a command, one process
per item; a Python file, run in long-lived workers that build their ``openai.OpenAI()`` once at import), that makes
one model call per item, side by side through the run's target endpoint and straight to the provider (the same
system given ``base_url=`` of the provider, as every run made it before the endpoint existed).

    bash tests/venv_python.sh tests/benchmarks/bench_target_endpoint.py              # about 1.5 minutes
    bash tests/venv_python.sh tests/benchmarks/bench_target_endpoint.py --items 12 --rpm 60

Two figures, for each form with and without the endpoint:

- (a) the cache: the provider calls of a run of N items, then of an identical re-run (through the endpoint the
  re-run is served from the run's call cache: 0 calls; without it, N again);
- (b) pacing: the same N items at concurrency 8 against a provider that enforces ``--rpm`` requests per minute per
  model (a bucket holding 1 s of it, OpenAI's rate-limit headers on every reply): the share of the system's requests
  answered 429, the items that failed (the SDK's own 2 retries gave up) and the wall time.

"own call in row" counts the rows that carry exactly one call whose reply is the row's own answer (the fake answers
each question with its gold), so a call put in a neighbour's row by concurrent workers would show as fewer.

The fake provider (tests/fake_llm_server.py) runs in this process; the run is the real command (``run_benchmark``,
real SDKs) with the offline judge, so every request the provider sees is the memory system's. Prints the figures;
asserts nothing about time.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path[:0] = [str(REPO / "scripts"), str(REPO / "tests")]

from fake_llm_server import FakeLLMServer  # noqa: E402
from run_project import make_project, register_answers  # noqa: E402

MODEL = "gpt-4o-mini"
SYSTEM = """\
import json, os, sys
import openai

item = json.load(sys.stdin)
direct = sys.argv[1] if len(sys.argv) > 1 else None  # the provider's URL: the call bypasses the endpoint
client = openai.OpenAI(base_url=direct) if direct else openai.OpenAI()
reply = client.chat.completions.create(model=os.environ["LONGMEMEVAL_TARGET_MODEL"], max_tokens=64,
                                       messages=[{"role": "user", "content": item["question"]}])
print(json.dumps({"hypothesis": reply.choices[0].message.content}))
"""
PYTHON_SYSTEM = """\
import openai

DIRECT = {direct!r}  # the provider's URL: the calls bypass the endpoint (None: they go through it)
client = openai.OpenAI(base_url=DIRECT) if DIRECT else openai.OpenAI()  # once per worker, at import


def generate(item, ctx):
    reply = client.chat.completions.create(model=ctx["model"], max_tokens=64,
                                           messages=[{{"role": "user", "content": item["question"]}}])
    return {{"hypothesis": reply.choices[0].message.content}}
"""
FORMS = ("command", "python file")


def system_requests(server: FakeLLMServer) -> list[dict[str, Any]]:
    return [r for r in server.requests if r["path"] == "/v1/chat/completions"]


def target_of(work: Path, name: str, form: str, direct_url: str | None) -> dict[str, Any]:
    """The config's target and options for the system in ``form`` (calling ``direct_url`` when given)."""
    if form == "command":
        script = work / "memory_system.py"
        script.write_text(SYSTEM)
        command = [sys.executable, str(script)] + ([direct_url] if direct_url else [])
        return {"target": "command", "targetOptions": {"command": command, "timeout_s": 300}}
    path = work / f"{name}.py"
    path.write_text(PYTHON_SYSTEM.format(direct=direct_url))
    return {"target": "python", "targetOptions": {"path": str(path), "timeout_s": 300}}


def run(server: FakeLLMServer, work: Path, name: str, *, form: str, direct: bool, items: int, concurrency: int,
        run_ids: tuple[str, ...]) -> list[dict[str, Any]]:
    """Run ``items`` items once per run id in one project; the provider's figures of each run."""
    from lme.cli import run_benchmark

    target = target_of(work, name, form, server.openai_base_url if direct else None)
    project = make_project(work / name, targetProvider="openai", targetModel=MODEL, judgeProvider="offline",
                           judgeModel="offline-containment-v1", concurrency=concurrency, maxAttempts=8, **target)
    figures = []
    for run_id in run_ids:
        before = len(system_requests(server))
        t0 = time.monotonic()
        with contextlib.redirect_stderr(io.StringIO()):  # the run's own lines (resume hints of failed items)
            run_benchmark.main(["--project", str(project), "--progress", "quiet", "--no-scorecard", "--yes",
                                "--max", str(items), "--run-id", run_id])
        wall = time.monotonic() - t0
        sent = system_requests(server)[before:]
        rows_file = project / ".longmemeval-benchmarks" / "runs" / run_id / "item-results.jsonl"
        rows = [json.loads(line) for line in rows_file.read_text().splitlines() if line.strip()]
        figures.append({"calls": len(sent), "429": sum(1 for r in sent if r.get("status") == 429),
                        "failed": sum(1 for r in rows if r["status"] != "judged"), "wall_s": wall,
                        "rows_with_calls": sum(1 for r in rows if own_call(r))})
    return figures


def own_call(row: dict[str, Any]) -> bool:
    """The row carries exactly one call, its item's: the fake answers a registered question with its gold, so
    the call's reply is the row's answer only when the call asked this row's question."""
    calls = row.get("calls") or []
    return len(calls) == 1 and calls[0].get("text") == row["hypothesis"] and bool(row["hypothesis"])


CASES = tuple((form, name, direct) for form in FORMS
              for name, direct in (("through the endpoint", False), ("without it", True)))
"""Each form of the system, through the endpoint and without it."""


def cache_case(server: FakeLLMServer, work: Path, items: int) -> None:
    print(f"(a) the cache: {items} items at concurrency 4, then an identical re-run (provider calls of the system)")
    print(f"    {'':<12}{'':<22}{'first run':>10}{'re-run':>10}{'own call in row':>17}")
    for form, name, direct in CASES:
        first, again = run(server, work, f"cache-{form[:3]}-{direct}", form=form, direct=direct, items=items,
                           concurrency=4, run_ids=("first", "again"))
        print(f"    {form:<12}{name:<22}{first['calls']:>10}{again['calls']:>10}{first['rows_with_calls']:>13}/{items}")


def pacing_case(server: FakeLLMServer, work: Path, items: int, rpm: float) -> None:
    print(f"(b) pacing: {items} items at concurrency 8, the provider limits {rpm:g} requests/min per model")
    print(f"    {'':<12}{'':<22}{'requests':>10}{'429s':>8}{'429 share':>11}{'failed':>8}{'wall':>9}")
    for form, name, direct in CASES:
        server.reset()
        server.rpm, server.burst_s = rpm, 1.0
        (figures,) = run(server, work, f"pacing-{form[:3]}-{direct}", form=form, direct=direct, items=items,
                         concurrency=8, run_ids=("paced",))
        share = figures["429"] / figures["calls"] if figures["calls"] else 0.0
        print(f"    {form:<12}{name:<22}{figures['calls']:>10}{figures['429']:>8}{share:>11.1%}{figures['failed']:>8}"
              f"{figures['wall_s']:>8.1f}s")
    server.rpm = None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=16, help="items per run (the sample has 24; default 16)")
    parser.add_argument("--rpm", type=float, default=120.0, help="the provider's requests per minute (default 120)")
    args = parser.parse_args()
    server = FakeLLMServer(log_bodies=False).start()
    server.latency = 0.05
    os.environ.update(OPENAI_BASE_URL=server.openai_base_url, OPENAI_API_KEY="sk-bench-DUMMY-0000")
    os.environ["LONGMEMEVAL_TIKTOKEN"] = "0"
    register_answers(server, correct_share=1.0)  # each item's call is answered with its own gold (own_call)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            cache_case(server, Path(tmp), args.items)
            pacing_case(server, Path(tmp), args.items, args.rpm)
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
