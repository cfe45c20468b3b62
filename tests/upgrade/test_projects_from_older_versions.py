"""A project made by an older version of the product is carried on by today's (issue 38).

Each fixture under ``tests/fixtures/upgrade/`` is a project an older commit made by its own commands
(``make_fixture.py``): a completed offline run of the 24-item sample, a run killed with ``kill -9`` after a few rows,
and one loop round on ``memory_system/`` (``loop_target.py use-copy``). It is unpacked at a new path, so every
absolute path it recorded is the old machine's. Today's scripts then run as a user runs them: ``python
scripts/<x>.py`` from the project's root with its venv.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from older_projects import SCRIPTS, OldProject, fixture_dirs, git, rows, unpack

FIXTURES = fixture_dirs()
LOOP_RUN = "longmemeval-iter"


@pytest.fixture(params=FIXTURES, ids=[p.name for p in FIXTURES])
def old(request, tmp_path) -> OldProject:
    return unpack(request.param, tmp_path / "moved-here")


def ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def ids_of(run_dir: Path) -> list[str]:
    return [json.loads(line)["question_id"] for line in rows(run_dir)]


def manifest_ids(run_dir: Path) -> list[str]:
    return [it["question_id"] for it in json.loads((run_dir / "manifest.json").read_text())["items"]]


def resume_command(status_out: str) -> list[str]:
    [line] = [ln for ln in status_out.splitlines() if "resume with: " in ln]
    return shlex.split(line.split("resume with: ", 1)[1])


def test_run_status_reads_an_older_versions_completed_run_and_its_killed_one(old):
    n = old.record["n_items"]
    completed = old.script("run_status.py", "--run-id", old.record["runs"]["completed"])
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert completed.stdout.startswith("completed") and f"{n}/{n} done ({n} judged, 0 errors)" in completed.stdout

    killed = old.script("run_status.py", "--run-id", old.record["runs"]["killed"])
    assert killed.returncode == 1, killed.stdout + killed.stderr
    assert killed.stdout.startswith("dead"), killed.stdout
    done = len(set(ids_of(old.run_dir("killed"))))
    assert f" {done}/{n} done" in killed.stdout
    # the kill landed after a row and before its completion mark: what is done and what is pending add up
    assert f"{n - done} of this run's {n} items pending; resume with: " in killed.stdout, killed.stdout
    assert str(old.path) in killed.stdout and old.record["old_project_path"] not in killed.stdout


def test_the_killed_run_resumes_by_the_printed_command_keeping_its_rows_and_compares_with_the_completed_one(old):
    run_dir = old.run_dir(old.record["runs"]["killed"])
    before = rows(run_dir)
    assert 0 < len(before) < old.record["n_items"]
    status = old.script("run_status.py", "--run-id", run_dir.name)
    resumed = subprocess.run(resume_command(status.stdout), cwd=old.path, capture_output=True, text=True,
                             env=dict(os.environ), timeout=120)
    ok(resumed)

    after = rows(run_dir)
    assert after[:len(before)] == before  # the old rows byte for byte
    ids = ids_of(run_dir)
    assert len(ids) == len(set(ids)) and sorted(ids) == sorted(manifest_ids(run_dir))
    final = ok(old.script("run_status.py", "--run-id", run_dir.name))
    n = old.record["n_items"]
    assert final.startswith("completed") and f"{n}/{n} done ({n} judged, 0 errors)" in final
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert (metrics["n_total"], metrics["judged"], metrics["errors"], metrics["not_run"]) == (n, n, 0, 0)

    completed = old.run_dir(old.record["runs"]["completed"])
    compared = json.loads(ok(old.script("compare_runs.py", str(completed), str(run_dir), "--json")))
    # the offline target and judge are deterministic: the same answers, the same verdicts
    assert (compared["fixes"], compared["regressions"], compared["net"]) == (0, 0, 0), compared


OFFICIAL_FIGURES = {
    "overall": ("n", "judged", "correct", "accuracy_strict", "accuracy_judged"),
    "task_averaged": ("accuracy_strict", "accuracy_judged", "types_strict", "types_judged"),
    "abstention": ("n", "judged", "correct", "accuracy_strict", "accuracy_judged"),
}


@pytest.mark.parametrize("which", ["completed", "loop"])
def test_scorecard_gives_an_older_runs_figures_as_that_version_recorded_them(old, which):
    run_id = old.record["runs"]["completed"] if which == "completed" else old.record["loop_run"]
    run_dir = old.run_dir(run_id)
    recorded = json.loads((run_dir / "metrics.json").read_text())
    ok(old.script("scorecard.py", "--run-id", run_id, "--rescore", "--no-charts"))
    today = json.loads((run_dir / "metrics.json").read_text())
    for block, keys in OFFICIAL_FIGURES.items():
        assert {k: today[block][k] for k in keys} == {k: recorded[block][k] for k in keys}, block
    assert (today["n_total"], today["correct"], today["judged"]) == (
        recorded["n_total"], recorded["correct"], recorded["judged"])


def decisions(project: Path) -> list[dict]:
    path = project / ".longmemeval-benchmarks" / "decisions.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_the_loop_goes_on_from_an_older_versions_round(old):
    """The round the old version decided reads back the same; its next round begins, is logged, committed and
    pushed: everything of the loop that does not run the copied memory system."""
    status = ok(old.script("rounds.py", "status"))
    assert "round: v1" in status and "decision for v1: keep" in status and "next: step 1" in status, status
    [decided] = decisions(old.path)
    ok(old.script("rounds.py", "finish", "--run-id", LOOP_RUN))  # run again: it does not decide twice
    assert decisions(old.path) == [decided]
    again = json.loads(ok(old.script("decide.py", "--snapshot", "v1", "--run-id", LOOP_RUN, "--json")))
    assert (again["decision"], again["net"], again["fixes"], again["regressions"]) == (
        decided["decision"], decided["net"], decided["fixes"], decided["regressions"])

    noise = subprocess.run(["bash", str(SCRIPTS / "parallel_longmemeval.sh"), "4", "133", str(old.record["n_items"]),
                            "--noise-floor"], cwd=old.path, capture_output=True, text=True, timeout=120)
    assert "noise floor measured" in ok(noise)
    assert ok(old.script("rounds.py", "begin", "--run-id", LOOP_RUN)).strip().splitlines()[-1] == "2"
    assert (old.path / ".longmemeval-benchmarks" / "snapshots" / "v2" / "item-results.jsonl").exists()
    assert git(["log", "-1", "--format=%s", LOOP_RUN], old.remote).strip() == "round v2: baseline"
    clusters = ok(old.script("cluster_failures.py", "--run-id", LOOP_RUN))
    assert "Failure clusters" in clusters


def test_the_older_memory_system_copy_runs_with_todays_plugin_after_update_copy(old, fake_llm):
    """The loop's next re-test runs items through ``memory_system/``, the copy the old version made of its
    memory-ref: ``loop_target.py update-copy`` brings today's memory-ref into it, and the run completes."""
    from markdown_harness import writer_aware
    from run_project import register_answers

    register_answers(fake_llm, old.path / ".longmemeval-benchmarks" / "data" / "longmemeval_sample.json")
    fake_llm.answer_fn = writer_aware()
    ok(old.script("loop_target.py", "update-copy"))
    run_dir = old.run_dir(LOOP_RUN)
    ok(old.script("drop_qids.py", "--run-id", LOOP_RUN, "--failed"))
    rerun = subprocess.run(["bash", str(SCRIPTS / "parallel_longmemeval.sh"), "4", "133", str(old.record["n_items"])],
                           cwd=old.path, capture_output=True, text=True, env=dict(os.environ), timeout=180)
    ok(rerun)
    ids = [json.loads(line)["question_id"] for line in rows(run_dir)]
    assert set(ids) == set(manifest_ids(run_dir))
    assert ok(old.script("run_status.py", "--run-id", LOOP_RUN)).startswith("completed")
