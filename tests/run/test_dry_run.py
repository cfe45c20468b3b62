"""The dry run prices every target (memory-ref's writer and reader included), says what it assumed, writes nothing."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest

from lme.run import dry_run
from lme.run.estimate_record import Estimate
from lme.cli import run_benchmark
from lme.store import run_store
from run_project import SAMPLE, make_project, register_answers

ITEMS = json.loads(SAMPLE.read_text())
N_SAMPLE = len(ITEMS)


def estimate(project, capsys, *args):
    assert run_benchmark.main(["--project", str(project), "--dry-run", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def files_of(project: Path) -> dict[str, int]:
    state = project / ".longmemeval-benchmarks"
    return {str(p.relative_to(state)): p.stat().st_mtime_ns for p in state.rglob("*") if p.is_file()}


def test_memory_ref_is_priced_per_role_with_repeated_sessions_counted_once(tmp_path, capsys):
    project = make_project(tmp_path / "p", target="memory-ref")
    result = estimate(project, capsys)
    roles = result["generation"]["by_role"]
    assert set(roles) == {"writer", "reader"}
    sessions = [json.dumps(s) for item in ITEMS for s in item["haystack_sessions"]]
    writer = roles["writer"]
    assert writer["calls"] == len(set(sessions)) and writer["calls"] + writer["cached_calls"] == len(sessions)
    assert writer["tokens_out_max"] == 2000 * writer["calls"]  # the writer's max_tokens: an upper bound
    assert roles["reader"]["calls"] == N_SAMPLE and roles["reader"]["usd_max"] > 0
    assert result["total_usd_max"] == pytest.approx(result["generation"]["usd_max"] + result["judge"]["usd"])
    assert "facts block" in result["note"] and "embedding calls are not counted" in result["note"]


def test_memory_ref_sessions_already_in_the_facts_cache_are_free_and_the_dry_run_writes_nothing(
        tmp_path, fake_llm, capsys):
    project = make_project(tmp_path / "p", target="memory-ref", confirmCostUsd=1000)
    register_answers(fake_llm)
    fake_llm.answer_fn = lambda body: "NONE" if "building a memory of a user" in json.dumps(body) else None
    before = estimate(project, capsys)["generation"]["by_role"]["writer"]["calls"]
    assert run_benchmark.main(["--project", str(project), "--progress", "quiet", "--no-scorecard", "--max", "3",
                               "--run-id", "warm"]) == 0
    capsys.readouterr()
    gc.collect()  # connections the run left to the garbage collector close (and checkpoint their logs) now
    files = files_of(project)
    after = estimate(project, capsys)["generation"]["by_role"]["writer"]["calls"]
    warmed = {json.dumps(s) for item in ITEMS[:3] for s in item["haystack_sessions"]}
    assert after == before - len(warmed)
    now = files_of(project)
    assert sorted(now) == sorted(files)  # no new file (no -wal/-shm created beside a cache)
    # no file changed; SQLite's shared-memory index of a log another connection left open may be touched
    assert {k: v for k, v in now.items() if not k.endswith("-shm")} == {
        k: v for k, v in files.items() if not k.endswith("-shm")}


def test_calls_in_the_call_cache_are_free_unless_the_run_will_not_read_it(tmp_path, fake_llm, capsys):
    project = make_project(tmp_path / "p", confirmCostUsd=1000)
    register_answers(fake_llm)
    assert run_benchmark.main(["--project", str(project), "--progress", "quiet", "--no-scorecard", "--max", "3"]) == 0
    capsys.readouterr()
    reader = estimate(project, capsys)["generation"]["by_role"]["reader"]
    assert (reader["calls"], reader["cached_calls"]) == (N_SAMPLE - 3, 3)
    reader = estimate(project, capsys, "--no-cache")["generation"]["by_role"]["reader"]
    assert (reader["calls"], reader["cached_calls"]) == (N_SAMPLE, 0)


def test_a_users_own_system_counts_only_the_judge_and_a_target_without_a_preview_is_unknown(tmp_path, capsys):
    (tmp_path / "mine.py").write_text("def generate(item, ctx):\n    return {'hypothesis': 'x'}\n")
    project = make_project(tmp_path / "p")
    result = estimate(project, capsys, "--target", "python", "--target-option", f"path={tmp_path / 'mine.py'}")
    assert result["generation"]["calls"] == 0 and result["total_usd_max"] == pytest.approx(result["judge"]["usd"])
    assert "makes its own model calls" in result["note"]
    (tmp_path / "bare.py").write_text("from records import Hypothesis\n"
                                      "def generate(item, ctx):\n    return Hypothesis(hypothesis='x')\n")
    result = estimate(project, capsys, "--target", str(tmp_path / "bare.py"))
    assert result["items_without_prompt_preview"] == N_SAMPLE
    assert result["generation"]["usd_max"] is None and result["total_usd_max"] is None
    block = dry_run.format_block(Estimate.from_dict(result))
    assert "dollars unknown" not in block and "unknown for 24 items" in block


def test_the_estimate_covers_the_shard_and_max_of_this_invocation(tmp_path, capsys):
    project = make_project(tmp_path / "p")
    in_shard = [it for it in ITEMS if run_store.in_shard(it["question_id"], (1, 2))]
    assert estimate(project, capsys, "--shard", "1/2")["items"] == len(in_shard)
    assert estimate(project, capsys, "--max", "5")["items"] == 5


def test_the_block_shows_every_stage_the_total_and_the_time(tmp_path, capsys):
    project = make_project(tmp_path / "p", target="memory-ref")
    block = dry_run.format_block(Estimate.from_dict(estimate(project, capsys)))
    lines = block.splitlines()
    assert lines[0] == f"estimate: {N_SAMPLE} items; target memory-ref openai:gpt-4o-mini, judge openai:gpt-4o-2024-08-06"
    assert [line.split()[0] for line in lines[1:4]] == ["writer", "reader", "judge"]
    assert "cached or repeated, free" in lines[1] and lines[4].startswith("  total      <= $")
    assert "at concurrency 4" in lines[4]


def test_the_dry_run_names_each_model_it_could_not_call_and_its_summary_ends_the_output(tmp_path):
    """Run as a user runs it (stdout and stderr on one screen, or one pipe under Claude Code): the summary for
    people comes last, names the key the judge lacks, and no JSON pushes it off; --json prints only the record."""
    import os
    import subprocess
    import sys

    project = make_project(tmp_path / "p")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")} | {"ANTHROPIC_API_KEY": "sk-ant-x"}
    script = [sys.executable, str(Path(run_benchmark.__file__).resolve().parents[2] / "run_benchmark.py"),
              "--project", str(project), "--dry-run", "--max", "2"]
    shown = subprocess.run(script, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert shown.returncode == 0, shown.stdout
    lines = shown.stdout.rstrip().splitlines()
    assert lines[0].startswith("dry run estimate: 2 items") and not shown.stdout.lstrip().startswith("{")
    assert lines[-2].startswith("  NOT READY  the target model openai:gpt-4o-mini cannot be called: OPENAI_API_KEY "
                                "is not set: export it")
    assert lines[-1].startswith("  NOT READY  the judge model openai:gpt-4o-2024-08-06 cannot be called")
    assert lines[-3].startswith("  (tokens ~ chars/4")
    record = subprocess.run([*script, "--json"], env=env, capture_output=True, text=True, timeout=120)
    check = json.loads(record.stdout)["calls_check"]
    assert check["keys"] == {"OPENAI_API_KEY": False} and len(check["problems"]) == 2 and record.stderr == ""
    assert not (project / ".longmemeval-benchmarks" / "runs").exists()


def test_the_estimate_is_a_record_whose_json_is_the_dry_runs(tmp_path, capsys):
    """``--dry-run --json`` prints ``Estimate.to_dict`` (calls check included); the record reads it back whole."""
    project = make_project(tmp_path / "p", target="memory-ref")
    printed = estimate(project, capsys)
    record = Estimate.from_dict(printed)
    assert json.dumps(record.to_dict()) == json.dumps(printed)
    assert record.generation.by_role["writer"].calls == printed["generation"]["by_role"]["writer"]["calls"]
    assert record.total_usd_max == printed["total_usd_max"] and record.calls_check == printed["calls_check"]
