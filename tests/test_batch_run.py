"""``run_benchmark.py --batch``: the judge (and single-call generation) through the Batch APIs of both providers,
against the fake server's Files/Batches endpoints and the real SDKs; labels equal the synchronous run's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import run_benchmark
from helpers_data import make_item, write_dataset
from run_project import REPO, make_project, run_dir

COLOURS = ("blue", "red", "green", "amber", "violet", "teal", "ochre", "grey")


def items(n: int) -> list[dict]:
    """``n`` items with their own question and answer (every judge prompt differs); every 7th is abstention."""
    made = []
    for i in range(n):
        qid = f"b{i:04d}" + ("_abs" if i % 7 == 3 else "")
        item = make_item(qid, ("single-session-user", "multi-session", "temporal-reasoning")[i % 3],
                         answer=f"{COLOURS[i % len(COLOURS)]}{i}")
        item["question"] = f"What colour is bike number {i}?"
        made.append(item)
    return made


def project_with(tmp_path: Path, server, n: int, name: str = "p", **cfg) -> Path:
    data = items(n)
    dataset = write_dataset(tmp_path / f"{name}-oracle.json", data)
    server.answers = {it["question"]: it["answer"] for it in data}
    server.correct_share = 0.5
    return make_project(tmp_path / name, dataset=dataset, variant="_oracle", target="oracle",
                        batchPollSeconds=0.01, **cfg)


def run(project: Path, *args: str) -> int:
    return run_benchmark.main(["--project", str(project), "--progress", "quiet", "--no-scorecard", *args])


def rows(project: Path, run_id: str) -> list[dict]:
    path = run_dir(project, run_id) / "item-results.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def labels(project: Path, run_id: str) -> dict[str, bool]:
    judged = [r for r in rows(project, run_id) if r["status"] == "judged"]
    assert len(judged) == len({r["question_id"] for r in judged})
    return {r["question_id"]: r["judgment"]["label"] for r in judged}


def ledger(project: Path, run_id: str) -> list[dict]:
    path = run_dir(project, run_id) / "batches.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def test_batch_judge_gives_the_sync_labels_and_sends_the_sync_bodies(tmp_path, fake_llm):
    sync = project_with(tmp_path, fake_llm, 40, "sync")
    assert run(sync, "--run-id", "s") == 0
    sync_judge_bodies = {json.dumps(r["body"], sort_keys=True) for r in fake_llm.requests
                         if r["path"] == "/v1/chat/completions" and r["body"].get("max_tokens") == 10}
    fake_llm.reset()
    batched = project_with(tmp_path, fake_llm, 40, "batch")
    assert run(batched, "--run-id", "b", "--batch", "judge") == 0
    assert labels(batched, "b") == labels(sync, "s")
    assert fake_llm.batches.submissions() == {"files_uploaded": 1, "openai_batches": 1, "anthropic_batches": 0,
                                              "requests": 40}
    assert not [r for r in fake_llm.requests if r["path"] == "/v1/chat/completions" and r["body"].get("max_tokens") == 10]
    input_file = run_dir(batched, "b") / "batches" / "j0001.input.jsonl"
    lines = [json.loads(x) for x in input_file.read_text().splitlines()]
    assert {json.dumps(x["body"], sort_keys=True) for x in lines} == sync_judge_bodies
    by_qid = {r["question_id"]: r for r in rows(batched, "b")}
    sync_rows = {r["question_id"]: r for r in rows(sync, "s")}
    for qid, row in by_qid.items():
        assert row["judgment"]["prompt_sha256"] == sync_rows[qid]["judgment"]["prompt_sha256"]
        assert row["judgment"]["billing"] == "batch" and row["judgment"]["batch_id"].startswith("batch_")
        assert row["cost"]["judge_usd"] == pytest.approx(sync_rows[qid]["cost"]["judge_usd"] * 0.5)
