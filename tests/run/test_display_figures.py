"""Figures shown to people stay sane at the edges: a run of milliseconds has no items/min, a cent is not $0.00."""

from __future__ import annotations

import time

from lme.run import cost_gate
from lme.run import dry_run
from lme.run import status as run_status
from lme.run.progress import Progress


def test_a_run_of_a_few_milliseconds_shows_no_rate_instead_of_hundreds_of_millions_per_minute():
    progress = Progress("quiet", 3, run_id="r", run_total=3)
    progress.done = 3
    progress._started = time.monotonic() + 3600  # no time has passed (deterministic, whatever the machine's load)
    status = progress.status("running")
    assert status.items_per_min is None and status.eta_seconds is None
    assert "items/min" not in run_status.format_line(status)
    progress._started = time.monotonic() - 60.0
    assert progress.status("running").items_per_min == 3.0


def test_small_dollar_amounts_keep_their_digits():
    assert dry_run.dollars(0.001) == "$0.0010" and dry_run.dollars(12.5) == "$12.50"
    cap = cost_gate.CostCap.__new__(cost_gate.CostCap)
    cap.spent, cap.cap, cap.refused_estimate = 0.0, 0.001, None
    assert "--max-cost $0.0010" in cap.message()


def test_a_cache_that_cannot_be_written_keeps_the_paid_reply(tmp_path, capsys):
    import sqlite3

    from lme.core.records import ChatRequest, Completion
    from lme.models.run_gateway import RunGateway

    class FullCache:
        def get(self, request, host=None):
            return None

        def put(self, request, completion):
            raise sqlite3.OperationalError("database or disk is full")

    gateway = RunGateway(cache=FullCache())
    reply = Completion(text="paid answer", tokensIn=1, tokensOut=1, latencyMs=1.0, provider="openai", model="m")
    gateway._call = lambda request: reply
    request = ChatRequest(provider="openai", model="m", messages=({"role": "user", "content": "q"},))
    assert gateway.complete(request) is reply and gateway.complete(request) is reply
    err = capsys.readouterr().err
    assert err.count("warning: the call cache cannot be written") == 1 and "disk is full" in err


def test_an_items_generation_latency_is_its_calls_time_not_its_wait_for_a_warm_start(tmp_path, fake_llm):
    """The first items of a run used to count the tokenizer load and first connections as latency."""
    import json

    from lme.cli import run_benchmark
    from run_project import judged_rows, make_project

    fake_llm.latency = 0.05
    project = make_project(tmp_path / "p", concurrency=8)
    assert run_benchmark.main(["--project", str(project), "--progress", "quiet", "--no-scorecard", "--yes",
                               "--max", "8", "--run-id", "lat"]) == 0
    rows = judged_rows(project, "lat")
    assert len(rows) == 8
    for row in rows:
        calls = [c for c in row["calls"] if c.get("role") == "reader"]
        assert calls and abs(row["latencyMs"] - sum(c["latencyMs"] for c in calls)) < 0.01, json.dumps(row)[:300]
