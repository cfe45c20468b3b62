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

from lme.cli import run_benchmark
from lme.core.errors import run_main
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
    return make_project(tmp_path / name, dataset=dataset, variant="_oracle",
                        **{"target": "oracle", "batchPollSeconds": 0.01, **cfg})


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


@pytest.mark.background
def test_a_500_item_oracle_run_with_batch_judge_gives_the_sync_labels_and_sends_the_sync_bodies(tmp_path, fake_llm):
    sync = project_with(tmp_path, fake_llm, 500, "sync", concurrency=16)
    assert run(sync, "--run-id", "s") == 0
    sync_judge_bodies = {json.dumps(r["body"], sort_keys=True) for r in fake_llm.requests
                         if r["path"] == "/v1/chat/completions" and r["body"].get("max_tokens") == 10}
    fake_llm.reset()
    batched = project_with(tmp_path, fake_llm, 500, "batch", concurrency=16)
    assert run(batched, "--run-id", "b", "--batch", "judge") == 0
    expected = labels(sync, "s")
    assert len(expected) == 500 and 0 < sum(expected.values()) < 500
    assert labels(batched, "b") == expected
    assert fake_llm.batches.submissions() == {"files_uploaded": 1, "openai_batches": 1, "anthropic_batches": 0,
                                              "requests": 500}
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


def start(project: Path, server, run_id: str, *extra: str) -> subprocess.Popen:
    env = dict(os.environ, OPENAI_BASE_URL=server.openai_base_url, ANTHROPIC_BASE_URL=server.anthropic_base_url)
    cmd = [sys.executable, str(REPO / "scripts" / "run_benchmark.py"), "--project", str(project), "--run-id", run_id,
           "--progress", "quiet", "--no-scorecard", *extra]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_event(project: Path, run_id: str, event: str, proc: subprocess.Popen, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [e for e in ledger(project, run_id) if e["event"] == event]
        if found:
            return found[-1]
        assert proc.poll() is None, proc.stderr.read()
        time.sleep(0.05)
    raise AssertionError(f"no {event} event within {timeout} s")


@pytest.mark.background
@pytest.mark.kill
def test_kill_9_between_submit_and_collect_then_a_fresh_process_collects_the_same_batch(tmp_path, fake_llm):
    sync = project_with(tmp_path, fake_llm, 30, "sync")
    assert run(sync, "--run-id", "s") == 0
    expected = labels(sync, "s")
    project = project_with(tmp_path, fake_llm, 30, "batch")
    fake_llm.batches.auto_advance_every = None  # the batch waits in validating until the test moves it
    proc = start(project, fake_llm, "k", "--batch", "judge")
    submitted = wait_for_event(project, "k", "submitted", proc)
    time.sleep(0.3)  # a few polls of the held batch
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    before = fake_llm.batches.submissions()
    assert before == {"files_uploaded": 1, "openai_batches": 1, "anthropic_batches": 0, "requests": 30}
    assert not (run_dir(project, "k") / "item-results.jsonl").exists() or not rows(project, "k")
    assert fake_llm.batches.finish(submitted["batch_id"]) == "completed"  # it ran while no process watched
    proc = start(project, fake_llm, "k")  # a resume keeps the run's --batch
    assert proc.wait(timeout=120) == 0, proc.stderr.read()
    assert fake_llm.batches.submissions() == before  # collected, not created again
    assert labels(project, "k") == expected
    assert {r["judgment"]["batch_id"] for r in rows(project, "k")} == {submitted["batch_id"]}


def drop_last_event(project: Path, run_id: str, event: str) -> None:
    """The ledger as a crash between the provider's create and our fsync of ``event`` leaves it."""
    path = run_dir(project, run_id) / "batches.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    last = max(i for i, line in enumerate(lines) if json.loads(line)["event"] == event)
    path.write_text("".join(lines[:last]))


@pytest.mark.background
@pytest.mark.kill
@pytest.mark.parametrize("judge", ["openai:gpt-4o", "anthropic:claude-haiku-4-5"])
def test_a_batch_created_but_not_ledgered_is_adopted_not_created_again(tmp_path, fake_llm, judge):
    sync = project_with(tmp_path, fake_llm, 12, "sync")
    assert run(sync, "--run-id", "s", "--judge-model", judge) == 0
    project = project_with(tmp_path, fake_llm, 12, "batch")
    fake_llm.batches.auto_advance_every = None
    proc = start(project, fake_llm, "a", "--batch", "judge", "--judge-model", judge)
    submitted = wait_for_event(project, "a", "submitted", proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    drop_last_event(project, "a", "submitted")
    drop_last_event(project, "a", "status") if any(e["event"] == "status" for e in ledger(project, "a")) else None
    before = fake_llm.batches.submissions()
    fake_llm.batches.auto_advance_every = 1
    proc = start(project, fake_llm, "a")
    assert proc.wait(timeout=120) == 0, proc.stderr.read()
    assert fake_llm.batches.submissions() == before
    assert [e["batch_id"] for e in ledger(project, "a") if e["event"] == "adopted"] == [submitted["batch_id"]]
    assert labels(project, "a") == labels(sync, "s")


def test_a_crash_after_collect_replays_the_local_results_at_batch_prices(tmp_path, fake_llm):
    project = project_with(tmp_path, fake_llm, 10)
    assert run(project, "--run-id", "c", "--batch", "judge") == 0
    expected = labels(project, "c")
    for name in ("item-results.jsonl", "questions_completed.jsonl"):  # as if killed after `collected`, before rows
        (run_dir(project, "c") / name).unlink()
    downloads = sum(1 for m, p in fake_llm.batches.calls if p.endswith("/content"))
    before = fake_llm.batches.submissions()
    assert run(project, "--run-id", "c") == 0
    assert fake_llm.batches.submissions() == before
    assert sum(1 for m, p in fake_llm.batches.calls if p.endswith("/content")) == downloads  # read locally
    assert labels(project, "c") == expected
    assert all(r["judgment"]["billing"] == "batch" and not r["judgment"]["cached"] for r in rows(project, "c"))


def test_failed_requests_are_resubmitted_or_become_error_rows_never_dropped(tmp_path, fake_llm):
    from lme.store import batch_ledger

    project = project_with(tmp_path, fake_llm, 12, errorThreshold=5)
    qids = [it["question_id"] for it in items(12)]
    fake_llm.batches.fail_requests(batch_ledger.custom_id("f", "judge", qids[0]), status=500)  # retryable
    fake_llm.batches.fail_requests(batch_ledger.custom_id("f", "judge", qids[1]), status=400)  # final
    assert run(project, "--run-id", "f", "--batch", "judge") == 0
    by_qid = {r["question_id"]: r for r in rows(project, "f")}
    assert len(by_qid) == 12
    assert by_qid[qids[0]]["status"] == "judged"
    assert by_qid[qids[0]]["judgment"]["batch_id"] != by_qid[qids[2]]["judgment"]["batch_id"]  # round 2
    assert by_qid[qids[1]]["status"] == "error" and by_qid[qids[1]]["error"]["kind"] == "bad_request"
    assert by_qid[qids[1]]["error"]["stage"] == "judge"
    assert fake_llm.batches.submissions()["openai_batches"] == 2
    attempts = [r["attempt"] for e in ledger(project, "f") if e["event"] == "planned" for r in e["requests"]]
    assert sorted(attempts) == [0] * 12 + [1]


def test_batch_fallback_sync_sends_failed_requests_synchronously(tmp_path, fake_llm):
    from lme.store import batch_ledger

    project = project_with(tmp_path, fake_llm, 6)
    qid = items(6)[0]["question_id"]
    fake_llm.batches.fail_requests(batch_ledger.custom_id("fb", "judge", qid), status=503)
    assert run(project, "--run-id", "fb", "--batch", "judge", "--batch-fallback", "sync") == 0
    by_qid = {r["question_id"]: r for r in rows(project, "fb")}
    assert by_qid[qid]["status"] == "judged" and "billing" not in by_qid[qid]["judgment"]
    assert fake_llm.batches.submissions()["openai_batches"] == 1
    assert len([r for r in fake_llm.requests if r["path"] == "/v1/chat/completions"
                and r["body"].get("max_tokens") == 10]) == 1


def _when_submitted(server, action) -> "threading.Thread":
    import threading

    def watch() -> None:
        for _ in range(2000):
            batches = list(server.batches._openai)
            if batches:
                action(batches[0])
                return
            time.sleep(0.005)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_an_expired_batch_is_resubmitted(tmp_path, fake_llm):
    project = project_with(tmp_path, fake_llm, 8)
    fake_llm.batches.auto_advance_every = None

    def expire_then_let_go(batch_id: str) -> None:
        fake_llm.batches.expire(batch_id)
        fake_llm.batches.auto_advance_every = 1

    thread = _when_submitted(fake_llm, expire_then_let_go)
    assert run(project, "--run-id", "e", "--batch", "judge") == 0
    thread.join(5)
    assert len(labels(project, "e")) == 8
    assert fake_llm.batches.submissions()["openai_batches"] == 2


def test_a_cancelled_batch_is_a_clean_stop_and_the_resume_submits_fresh(tmp_path, fake_llm):
    import openai

    project = project_with(tmp_path, fake_llm, 8)
    fake_llm.batches.auto_advance_every = None
    client = openai.OpenAI(base_url=fake_llm.openai_base_url, api_key="sk-test-DUMMY")

    def cancel(batch_id: str) -> None:
        fake_llm.batches.advance(batch_id)  # in_progress
        fake_llm.batches.process(batch_id, 3)  # three ran before the user cancelled
        client.batches.cancel(batch_id)
        fake_llm.batches.auto_advance_every = 1

    thread = _when_submitted(fake_llm, cancel)
    assert run(project, "--run-id", "x", "--batch", "judge") == 7
    thread.join(5)
    assert len(rows(project, "x")) == 3 and all(r["status"] == "judged" for r in rows(project, "x"))
    meta = json.loads((run_dir(project, "x") / "run-meta.json").read_text())
    assert meta["status"] == "paused" and meta["counts"]["pending"] == 5
    assert run(project, "--run-id", "x") == 0
    assert len(labels(project, "x")) == 8
    assert fake_llm.batches.submissions()["openai_batches"] == 2


def test_a_cached_call_is_never_batched(tmp_path, fake_llm):
    project = project_with(tmp_path, fake_llm, 10)
    assert run(project, "--run-id", "one", "--batch", "judge") == 0
    before = fake_llm.batches.submissions()
    assert run(project, "--run-id", "two", "--batch", "judge") == 0
    assert fake_llm.batches.submissions() == before
    assert labels(project, "two") == labels(project, "one")
    assert all(r["judgment"]["cached"] for r in rows(project, "two"))
    assert run(project, "--run-id", "three", "--batch", "judge", "--no-cache") == 0  # batches everything again
    assert fake_llm.batches.submissions()["requests"] == before["requests"] + 10


def test_batch_all_batches_generation_and_judge_on_anthropic_and_openai(tmp_path, fake_llm):
    sync = project_with(tmp_path, fake_llm, 10, "sync", targetProvider="anthropic", targetModel="claude-haiku-4-5")
    assert run(sync, "--run-id", "s") == 0
    sync_gen = [r["body"] for r in fake_llm.requests if r["path"] == "/v1/messages"]
    project = project_with(tmp_path, fake_llm, 10, "batch", targetProvider="anthropic",
                           targetModel="claude-haiku-4-5")
    fake_llm.reset()
    assert run(project, "--run-id", "b", "--batch", "all") == 0
    assert labels(project, "b") == labels(sync, "s")
    assert not [r for r in fake_llm.requests if r["path"] in ("/v1/messages", "/v1/chat/completions")]
    assert fake_llm.batches.submissions() == {"files_uploaded": 1, "openai_batches": 1, "anthropic_batches": 1,
                                              "requests": 20}
    params = [json.loads(x)["params"] for x in
              (run_dir(project, "b") / "batches" / "g0001.input.jsonl").read_text().splitlines()]
    assert sorted(json.dumps(p, sort_keys=True) for p in params) == sorted(json.dumps(b, sort_keys=True)
                                                                           for b in sync_gen)
    calls = [c for r in rows(project, "b") for c in r["calls"]]
    assert calls and all(c["billing"] == "batch" for c in calls)


@pytest.mark.parametrize("args, says", [
    (["--batch", "judge", "--judge-model", "azure:gpt-4o"], "azure"),
    (["--batch", "judge", "--offline"], "offline"),
    (["--batch", "judge", "--judge-repeat", "3"], "--judge-repeat"),
    (["--batch", "judge", "--max-cost", "5"], "--max-cost"),
    (["--batch", "all", "--target-model", "vllm:llama"], "vllm"),
])
def test_batch_with_what_cannot_batch_is_one_line_exit_2_nothing_written(tmp_path, fake_llm, capsys, args, says):
    project = project_with(tmp_path, fake_llm, 3)
    code = run_main(run_benchmark.main, ["--project", str(project), "--run-id", "z", *args])
    err = capsys.readouterr().err.strip()
    assert code == 2 and says in err and "Traceback" not in err and len(err.splitlines()) == 1, err
    assert not (project / ".longmemeval-benchmarks" / "runs" / "z").exists()


def test_scorecard_status_and_dry_run_say_what_ran_as_batches(tmp_path, fake_llm, capsys):
    from lme.run import status as run_status

    project = project_with(tmp_path, fake_llm, 10)
    assert run_benchmark.main(["--project", str(project), "--dry-run", "--batch", "judge", "--json"]) == 0
    estimate = json.loads(capsys.readouterr().out)
    b = estimate["batch"]
    assert b["batch_usd_max"] == pytest.approx(b["sync_usd_max"] * 0.5)
    assert b["sync_requests"] == 20 and b["stages"]["judge"]["batches"] == 1
    assert estimate["total_usd_max"] == pytest.approx(b["stages"]["generation"]["sync_usd_max"]
                                                     + b["stages"]["judge"]["batch_usd_max"])
    assert run_benchmark.main(["--project", str(project), "--dry-run", "--batch", "judge"]) == 0
    summary = capsys.readouterr().out
    assert "batch API" in summary and "sync " in summary and "24 h" in summary

    assert run_benchmark.main(["--project", str(project), "--progress", "quiet", "--run-id", "sc",
                               "--batch", "judge"]) == 0
    card = (run_dir(project, "sc") / "scorecard.md").read_text()
    assert "- Batch API: generation synchronous (10 calls); judge 10 calls in 1 batch at batch prices" in card
    metrics = json.loads((run_dir(project, "sc") / "metrics.json").read_text())
    assert metrics["batches"]["judge"]["batch_calls"] == 10
    status = run_status.collect(run_dir(project, "sc"), project)
    assert status.batches["totals"] == {"batches": 1, "submitted": 10, "in_progress": 0, "completed": 10,
                                        "failed": 0, "pending": 0}
    line = run_status.format_line(status)
    assert "batches: 10 submitted, 0 in progress, 10 completed, 0 failed" in line and "completed" in line


def test_batch_all_sends_memory_refs_declared_writer_stage_through_batches(tmp_path, fake_llm):
    options = {"embedder": "none"}
    sync = project_with(tmp_path, fake_llm, 6, "sync", target="memory-ref", targetOptions=options)
    assert run(sync, "--run-id", "s") == 0
    sync_bodies = {json.dumps(r["body"], sort_keys=True) for r in fake_llm.requests
                   if r["path"] == "/v1/chat/completions"}
    project = project_with(tmp_path, fake_llm, 6, "batch", target="memory-ref", targetOptions=options)
    assert run(project, "--run-id", "w", "--batch", "all") == 0
    assert labels(project, "w") == labels(sync, "s")
    planned = [e for e in ledger(project, "w") if e["event"] == "planned"]
    assert [e["stage"] for e in planned] == ["writer", "judge"]
    assert len(planned[0]["requests"]) == 7  # one per distinct session: 6 evidence ones + the shared "Hello there."
    assert {r["custom_id"].split("-")[1] for r in planned[0]["requests"]} == {"w"}
    calls = [c for r in rows(project, "w") for c in r["calls"] if c.get("role") == "writer"]
    assert len(calls) >= 7 and all(c["billing"] == "batch" for c in calls)
    lines = (run_dir(project, "w") / "batches" / "w0001.input.jsonl").read_text().splitlines()
    assert {json.dumps(json.loads(x)["body"], sort_keys=True) for x in lines} <= sync_bodies  # the sync writer's


@pytest.mark.background
@pytest.mark.kill
def test_an_adopted_anthropic_batch_with_other_custom_ids_is_abandoned_and_ours_is_found(tmp_path, fake_llm):
    import anthropic

    judge = "anthropic:claude-haiku-4-5"
    project = project_with(tmp_path, fake_llm, 5, "batch")
    fake_llm.batches.auto_advance_every = None
    proc = start(project, fake_llm, "f", "--batch", "judge", "--judge-model", judge)
    ours = wait_for_event(project, "f", "submitted", proc)["batch_id"]
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    drop_last_event(project, "f", "submitted")
    client = anthropic.Anthropic(base_url=fake_llm.anthropic_base_url, api_key="sk-ant-test-DUMMY")
    other = client.messages.batches.create(requests=[  # someone else's batch of the same size, newer than ours
        {"custom_id": f"other-{i}", "params": {"model": "claude-haiku-4-5", "max_tokens": 10,
                                               "messages": [{"role": "user", "content": f"hi {i}"}]}}
        for i in range(5)]).id
    fake_llm.batches.auto_advance_every = 1
    before = fake_llm.batches.submissions()
    proc = start(project, fake_llm, "f")
    assert proc.wait(timeout=120) == 0, proc.stderr.read()
    assert fake_llm.batches.submissions() == before
    events = [(e["event"], e.get("batch_id")) for e in ledger(project, "f") if e["event"] in ("adopted", "abandoned")]
    assert events == [("adopted", other), ("abandoned", other), ("adopted", ours)]
    assert {r["judgment"]["batch_id"] for r in rows(project, "f")} == {ours}


def test_a_batch_that_fails_validation_stops_with_one_line_and_a_resume_submits_again(tmp_path, fake_llm, capsys):
    project = project_with(tmp_path, fake_llm, 5)
    fake_llm.batches.openai_max_requests = 3  # the provider refuses the input file (too_many_tasks)
    code = run_main(run_benchmark.main, ["--project", str(project), "--progress", "quiet",
                                         "--no-scorecard", "--run-id", "v", "--batch", "judge"])
    err = capsys.readouterr().err
    assert code == 1 and "failed validation" in err and "Traceback" not in err
    assert not (run_dir(project, "v") / "item-results.jsonl").exists() or not rows(project, "v")
    fake_llm.batches.openai_max_requests = 50_000
    assert run(project, "--run-id", "v") == 0
    assert len(labels(project, "v")) == 5
    assert fake_llm.batches.submissions()["openai_batches"] == 2


def test_batch_all_with_the_rag_reader(tmp_path, fake_llm):
    sync = project_with(tmp_path, fake_llm, 8, "sync", target="rag")
    assert run(sync, "--run-id", "s") == 0
    project = project_with(tmp_path, fake_llm, 8, "batch", target="rag")
    assert run(project, "--run-id", "r", "--batch", "all") == 0
    assert labels(project, "r") == labels(sync, "s")
    assert [e["stage"] for e in ledger(project, "r") if e["event"] == "planned"] == ["generate", "judge"]


@pytest.mark.background
@pytest.mark.kill
def test_sigterm_while_waiting_for_a_batch_stops_at_once_and_the_resume_collects_it(tmp_path, fake_llm):
    project = project_with(tmp_path, fake_llm, 6, batchPollSeconds=120)  # a nap far longer than any load stretches
    fake_llm.batches.auto_advance_every = None
    proc = start(project, fake_llm, "t", "--batch", "judge")
    submitted = wait_for_event(project, "t", "submitted", proc)
    time.sleep(0.5)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 130
    assert time.monotonic() - t0 < 60  # not the 120 s nap: it wakes on the signal (no tighter bound: a loaded CI)
    meta = json.loads((run_dir(project, "t") / "run-meta.json").read_text())
    assert meta["status"] == "interrupted" and meta["counts"]["pending"] == 6
    fake_llm.batches.finish(submitted["batch_id"])
    proc = start(project, fake_llm, "t")
    assert proc.wait(timeout=60) == 0, proc.stderr.read()
    assert len(labels(project, "t")) == 6 and fake_llm.batches.submissions()["openai_batches"] == 1


def test_a_refused_batch_api_call_stops_in_one_line_and_runs_no_item_synchronously(tmp_path, fake_llm, capsys):
    project = project_with(tmp_path, fake_llm, 4)
    fake_llm.batches.openai_max_file_bytes = 10  # the upload is refused with a 400
    code = run_main(run_benchmark.main, ["--project", str(project), "--progress", "quiet",
                                         "--no-scorecard", "--run-id", "k", "--batch", "judge"])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err and "a Batch API call failed (bad_request)" in err, err
    judge_calls = [r for r in fake_llm.requests if r["path"] == "/v1/chat/completions"
                   and (r.get("body") or {}).get("max_tokens") == 10]
    assert judge_calls == []  # the judge never fell back to synchronous calls behind the user's back
    assert not (run_dir(project, "k") / "item-results.jsonl").exists() or not rows(project, "k")
    fake_llm.batches.openai_max_file_bytes = 200 * 1024 * 1024
    assert run(project, "--run-id", "k") == 0 and len(labels(project, "k")) == 4


def test_two_shards_with_batch_judge_run_at_once_and_give_the_sync_labels(tmp_path, fake_llm):
    """``--shard`` with ``--batch``: each shard plans, submits and collects its own batches (ledger in its shard
    folder, metadata naming it); run at once, the two give the synchronous run's labels and each item once."""
    sync = project_with(tmp_path, fake_llm, 30, "sync")
    assert run(sync, "--run-id", "s") == 0
    expected = labels(sync, "s")
    fake_llm.reset()
    sharded = project_with(tmp_path, fake_llm, 30, "sharded")
    procs = [start(sharded, fake_llm, "b", "--shard", f"{i}/2", "--batch", "judge") for i in (1, 2)]
    for proc in procs:
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
    root = run_dir(sharded, "b")
    merged = {}
    for i in (1, 2):
        shard = root / f"shard-{i}of2"
        events = [json.loads(x) for x in (shard / "batches.jsonl").read_text().splitlines()]
        assert {e["event"] for e in events} >= {"planned", "submitted", "collected"}
        shard_rows = [json.loads(x) for x in (shard / "item-results.jsonl").read_text().splitlines()]
        assert shard_rows and all(r["judgment"]["billing"] == "batch" for r in shard_rows)
        assert not set(merged) & {r["question_id"] for r in shard_rows}  # no item in both shards
        merged.update({r["question_id"]: r["judgment"]["label"] for r in shard_rows})
    assert merged == expected
    assert fake_llm.batches.submissions()["openai_batches"] == 2 and fake_llm.batches.submissions()["requests"] == 30
    meta = json.loads((root / "run-meta.json").read_text())
    assert meta["status"] == "completed" and meta["shards"] == {"1/2": "completed", "2/2": "completed"}
