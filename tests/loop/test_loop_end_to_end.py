"""The iteration loop played for real: git with a bare remote, the run driver against the fake model server.

Round 1: baseline, a fix that helps (kept, committed, pushed). Round 2: a fix that hurts (reverted with git
revert, snapshot verdicts restored). Round 3: a fix that reaches the target; the clean confirmation rerun also
reaches it, and the final state is committed and pushed.

The fake server decides which questions get their gold answer (``good``): that is how a "fix" changes answers
here. Re-runs pass ``--no-cache`` because the prompts themselves do not change in this test (a real fix changes
the prompts or the pipeline, so its calls miss the cache anyway).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import factories
from lme.score import cluster_failures
from lme.loop import confirm
from lme.loop import decide
from lme.score import drop_qids
from lme.cli import drop_qids as drop_qids_cli
from lme.loop import branch as loop_git
from lme.loop import state as loop_state
from lme.loop import steps as loop_steps
from lme.core.errors import run_main
from loop_testing import LOOP_BRANCH, git, make_loop_project
from run_project import SAMPLE, make_project

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
LOOP = {
    "branch": LOOP_BRANCH,
    "run_id": "loop",
    "target": "full-context",
    "target_model": "openai:gpt-4o-mini",
    "judge": "openai:gpt-4o",
    "n_parallel": 4,
    "targetOptions": {"symbolic_resolver": True, "symbolic_temporal": True, "symbolic_bypass": True},
}


class Answers:
    """Reader policy for the fake server: the gold answer for questions in ``good``, a refusal otherwise."""

    def __init__(self, items):
        self.gold = {it["question"]: str(it["answer"]) for it in items}
        self.good: set[str] = set()

    def __call__(self, body) -> str:
        text = json.dumps(body, ensure_ascii=False)
        for question, gold in self.gold.items():
            if json.dumps(question, ensure_ascii=False)[1:-1] in text:
                return gold if question in self.good else "I don't know."
        return "I don't know."


@pytest.fixture
def loop_project(tmp_path, fake_llm):
    project = make_loop_project(tmp_path)
    make_project(project, loop=LOOP, target="full-context", targetProvider="openai", targetModel="gpt-4o-mini")
    items = json.loads(SAMPLE.read_text())
    answers = Answers(items)
    fake_llm.answer_fn = answers
    return project, items, answers


def full_run(project: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPTS / "parallel_longmemeval.sh"), "4", "133", str(24), "--progress", "quiet", *extra],
        cwd=project, capture_output=True, text=True, env=dict(os.environ), timeout=120,
    )


def ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def correct(project: Path, run_id: str = "loop") -> int:
    return json.loads((project / ".longmemeval-benchmarks/runs" / run_id / "metrics.json").read_text())["correct"]


def remote_log(tmp_path: Path) -> list[str]:
    return git(["log", "--format=%s", LOOP_BRANCH], tmp_path / "remote.git").stdout.splitlines()


def start_round(project: Path, note: str) -> int:
    """Steps 1-4 of a round after the full run: bump, snapshot, log, commit the state, push."""
    round_no = loop_state.bump(project)
    loop_steps.snapshot(project, "loop")
    loop_steps.log(project, "loop", note)
    loop_git.commit(f"round v{round_no}: {note}", loop_git.state_paths(project), project=project)
    loop_git.push(project=project)
    return round_no


def test_two_rounds_keep_then_revert_then_confirmed_target(loop_project, tmp_path):
    project, items, answers = loop_project
    questions = [it["question"] for it in items]
    qid_of = {it["question"]: it["question_id"] for it in items}
    ok(subprocess.run(["bash", str(SCRIPTS / "check_setup.sh")], cwd=project, capture_output=True, text=True))

    # ---- round 1: baseline 18/24
    answers.good = set(questions[:18])
    ok(full_run(project))
    assert correct(project) == 18
    assert confirm.check(project, "loop")["reached"] is False
    r1 = start_round(project, "baseline")
    clusters = cluster_failures.cluster_run(project / ".longmemeval-benchmarks/runs/loop")
    assert clusters["failures"] == 6 and set(clusters["by_mode"]) <= {"refused_should_answer", "abstention_answered", "abstention_refused_judged_wrong"}

    # a fix that helps: 3 of the 6 failures now answered
    (project / "fix_one.py").write_text("HELPS = True\n")
    fix1 = loop_git.commit("fix: answer instead of refusing", ["fix_one.py"], project=project)
    answers.good |= set(questions[18:21])
    failed = drop_qids.failed_ids(project / ".longmemeval-benchmarks/runs/loop")
    assert sorted(failed) == sorted(qid_of[q] for q in questions[18:])
    assert run_main(drop_qids_cli.main, ["--project", str(project), "--run-id", "loop", "--failed"]) == 0
    ok(full_run(project, "--no-cache"))
    assert correct(project) == 21
    kept = decide.run_decision(project, f"v{r1}", "loop", fix_commit=fix1, apply=True)
    assert (kept["decision"], kept["net"]) == ("keep", 3)
    loop_git.commit(f"round v{r1}: kept fix (+3)", loop_git.state_paths(project), project=project)
    loop_git.push(project=project)
    assert "fix: answer instead of refusing" in remote_log(tmp_path)

    # ---- round 2: a fix that hurts 3 right answers is reverted
    ok(full_run(project))  # the baseline run resumes: nothing pending
    r2 = start_round(project, "after v1 fix")
    (project / "fix_two.py").write_text("HURTS = True\n")
    fix2 = loop_git.commit("fix: harmful rewrite", ["fix_two.py"], project=project)
    hurt = questions[:3]
    answers.good -= set(hurt)
    trigger = [qid_of[q] for q in hurt + questions[21:]]
    drop_qids.drop_qids(project / ".longmemeval-benchmarks/runs/loop", trigger)
    ok(full_run(project, "--no-cache"))
    assert correct(project) == 18
    reverted = decide.run_decision(project, f"v{r2}", "loop", fix_commit=fix2, apply=True)
    assert (reverted["decision"], reverted["net"]) == ("revert", -3)
    assert not (project / "fix_two.py").exists() and (project / "fix_one.py").exists()
    snap = project / f".longmemeval-benchmarks/snapshots/v{r2}"
    run_dir = project / ".longmemeval-benchmarks/runs/loop"
    assert factories.load_rows(run_dir) == factories.load_rows(snap)
    assert correct(project) == 21
    answers.good |= set(hurt)  # the code is reverted, so the answers are back
    loop_git.commit(f"round v{r2}: reverted harmful fix (-3)", loop_git.state_paths(project), project=project)
    loop_git.push(project=project)
    assert remote_log(tmp_path)[0] == f"round v{r2}: reverted harmful fix (-3)"
    assert 'Revert "fix: harmful rewrite"' in remote_log(tmp_path)

    # ---- round 3: a fix that reaches the target, then the confirmation rerun
    r3 = start_round(project, "after v2 revert")
    (project / "fix_three.py").write_text("LAST = True\n")
    fix3 = loop_git.commit("fix: the last three", ["fix_three.py"], project=project)
    answers.good = set(questions)
    drop_qids.drop_qids(run_dir, drop_qids.failed_ids(run_dir))
    ok(full_run(project, "--no-cache"))
    assert decide.run_decision(project, f"v{r3}", "loop", fix_commit=fix3, apply=True)["decision"] == "keep"
    status = confirm.check(project, "loop")
    assert status == {"run_id": "loop", "correct": 24, "n_total": 24, "threshold": 23, "reached": True, "status": "completed"}
    record = confirm.start(project, "loop")
    ok(full_run(project, "--run-id", record["confirm_run_id"], "--no-cache"))
    final = confirm.finish(project, commit=True)
    assert final["status"] == "confirmed" and final["confirm_correct"] == 24
    assert final["source_run_id"] == "loop" and final["confirm_run_id"] == record["confirm_run_id"]
    assert remote_log(tmp_path)[0].startswith("FINAL: LongMemEval 24/24 confirmed")
    history = (project / "history_max_effort.md").read_text()
    assert history.count("| v") == 4 and "CONFIRMED" in history
    assert not (project / "history.md").exists()


def test_confirmation_below_target_is_adopted_as_the_new_baseline(loop_project):
    project, items, answers = loop_project
    answers.good = {it["question"] for it in items}
    ok(full_run(project))
    loop_state.init(project)
    record = confirm.start(project, "loop")
    answers.good = {it["question"] for it in items[:20]}  # the clean rerun shows the score does not hold
    ok(full_run(project, "--run-id", record["confirm_run_id"], "--no-cache"))
    final = confirm.finish(project)
    assert final["status"] == "not_confirmed" and final["adopted"] is True
    assert correct(project, "loop") == 20  # the loop goes on from the honest figure


@pytest.mark.parametrize(
    "extra,needle",
    [
        ((), "below the full set"),
        (("--judge-model", "openai:gpt-4o-mini"), "judge is openai:gpt-4o-mini"),
        (("--no-symbolic-bypass",), "--symbolic-bypass is off"),
    ],
)
def test_driver_refuses_loop_runs_that_break_a_rule(loop_project, extra, needle):
    project, _, _ = loop_project
    if "--no-symbolic-bypass" in extra:  # memory-ref's layers: checked for memory-ref (and its copies) only
        config = project / ".longmemeval-benchmarks" / "config.json"
        cfg = json.loads(config.read_text())
        config.write_text(json.dumps({**cfg, "target": "memory-ref", "loop": {**cfg["loop"], "target": "memory-ref"}}))
    total = "10" if not extra else "24"
    proc = subprocess.run(
        ["bash", str(SCRIPTS / "parallel_longmemeval.sh"), "4", "133", total, *extra],
        cwd=project, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 2 and needle in proc.stderr
    assert not (project / ".longmemeval-benchmarks/runs/loop/item-results.jsonl").exists()


def test_driver_refuses_a_loop_run_off_the_loop_branch(loop_project):
    project, _, _ = loop_project
    git(["switch", "-q", "main"], project)
    proc = full_run(project)
    assert proc.returncode == 2 and "not the loop branch" in proc.stderr
