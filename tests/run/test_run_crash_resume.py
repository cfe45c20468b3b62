"""Killing a concurrent run at random moments, then resuming, gives exactly the uninterrupted result."""

from __future__ import annotations

import json
import os
import random
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from run_project import REPO, SAMPLE, make_project, register_answers, run_dir

N_SAMPLE = len(json.loads(SAMPLE.read_text()))


def start_driver(project: Path, server, run_id: str, *extra: str) -> subprocess.Popen:
    env = dict(os.environ)
    env.update(OPENAI_BASE_URL=server.openai_base_url, ANTHROPIC_BASE_URL=server.anthropic_base_url)
    cmd = [sys.executable, str(REPO / "scripts" / "run_benchmark.py"), "--project", str(project), "--run-id", run_id,
           "--progress", "quiet", "--no-scorecard", *extra]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_a_row(directory: Path, timeout: float = 60.0) -> None:
    """Until the run (or shard) ``directory`` has written a row: its driver is past its start-up checks (the
    provider probe, the SDK imports), whatever the machine's load, so a signal now lands in the run itself."""
    path = directory / "item-results.jsonl"
    deadline = time.monotonic() + timeout
    while not (path.is_file() and path.stat().st_size > 0):
        assert time.monotonic() < deadline, f"no row in {path} after {timeout:.0f} s"
        time.sleep(0.05)


def labels(project: Path, run_id: str) -> dict[str, bool]:
    rows = [json.loads(x) for x in (run_dir(project, run_id) / "item-results.jsonl").read_text().splitlines() if x.strip()]
    judged = [r for r in rows if r["status"] == "judged"]
    assert len(judged) == len({r["question_id"] for r in judged}), "a question has two judged rows"
    return {r["question_id"]: r["judgment"]["label"] for r in judged}


@pytest.mark.kill
def test_kill_9_at_random_moments_then_resume_matches_an_uninterrupted_run(tmp_path, fake_llm):
    register_answers(fake_llm, correct_share=0.5)
    fake_llm.latency = 0.02
    reference = make_project(tmp_path / "ref", concurrency=8, cacheEnabled=False)
    proc = start_driver(reference, fake_llm, "ref")
    assert proc.wait(timeout=120) == 0, proc.stderr.read()
    expected = labels(reference, "ref")
    assert len(expected) == N_SAMPLE

    project = make_project(tmp_path / "p", concurrency=8, cacheEnabled=False)
    rng = random.Random(7)
    kills = 0
    for _ in range(6):
        proc = start_driver(project, fake_llm, "crashy")
        time.sleep(rng.uniform(0.3, 1.2))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait(timeout=60)
    proc = start_driver(project, fake_llm, "crashy")
    assert proc.wait(timeout=120) == 0, proc.stderr.read()
    assert kills >= 1
    assert labels(project, "crashy") == expected
    done = [json.loads(x)["question_id"] for x in (run_dir(project, "crashy") / "questions_completed.jsonl").read_text().splitlines() if x.strip()]
    assert sorted(set(done)) == sorted(expected)


@pytest.mark.kill
def test_sigterm_finishes_in_flight_items_marks_interrupted_and_resume_completes(tmp_path, fake_llm):
    register_answers(fake_llm)
    fake_llm.latency = 0.05
    project = make_project(tmp_path / "p", concurrency=2, cacheEnabled=False)
    proc = start_driver(project, fake_llm, "term")
    wait_for_a_row(run_dir(project, "term"))
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    meta = json.loads((run_dir(project, "term") / "run-meta.json").read_text())
    assert meta["status"] == "interrupted" and meta["finished_at"] and meta["duration_seconds"] > 0
    assert 0 < len(labels(project, "term")) < N_SAMPLE
    assert "resume with:" in err and "--run-id term" in err
    hint = err.split("resume with: ", 1)[1].splitlines()[0]
    proc = subprocess.Popen(shlex.split(hint) + ["--progress", "quiet", "--no-scorecard"],
                            env={**os.environ, "OPENAI_BASE_URL": fake_llm.openai_base_url,
                                 "ANTHROPIC_BASE_URL": fake_llm.anthropic_base_url},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.wait(timeout=120) == 0, proc.stderr.read()  # the printed command itself resumes the run
    assert len(labels(project, "term")) == N_SAMPLE


def test_a_second_driver_on_the_same_run_is_refused(tmp_path, fake_llm):
    register_answers(fake_llm)
    fake_llm.latency = 0.2
    project = make_project(tmp_path / "p", concurrency=1, cacheEnabled=False)
    first = start_driver(project, fake_llm, "locked")
    wait_for_a_row(run_dir(project, "locked"))
    second = start_driver(project, fake_llm, "locked")
    _, err = second.communicate(timeout=60)
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert second.returncode == 2
    assert f"pid {first.pid}" in err and "Traceback" not in err


def test_two_shards_run_concurrently_and_a_whole_run_writer_is_refused_meanwhile(tmp_path, fake_llm):
    register_answers(fake_llm)
    fake_llm.latency = 0.1
    project = make_project(tmp_path / "p", concurrency=2, cacheEnabled=False)
    one = start_driver(project, fake_llm, "sh", "--shard", "1/2")
    two = start_driver(project, fake_llm, "sh", "--shard", "2/2")
    for i in (1, 2):
        wait_for_a_row(run_dir(project, "sh") / f"shard-{i}of2")
    whole = start_driver(project, fake_llm, "sh")
    _, err = whole.communicate(timeout=60)
    # refused by the run's layout, checked before any lock is taken (it would be refused later by the lock too)
    assert whole.returncode == 2 and "the run is sharded" in err and "--shard i/n" in err
    assert one.wait(timeout=120) == 0 and two.wait(timeout=120) == 0
    import factories

    rows = factories.load_rows(run_dir(project, "sh"))
    assert len(rows) == N_SAMPLE and all(r["status"] == "judged" for r in rows.values())
    meta = json.loads((run_dir(project, "sh") / "run-meta.json").read_text())
    assert meta["status"] == "completed" and meta["counts"]["completed"] == N_SAMPLE
