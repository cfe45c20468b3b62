"""The trap the loop fell into, played on the fake model server through the real SDKs (issue 16's "Done when").

The system under test answers a question right when the question is in ``good`` — but every reader call flips
that at random (10%) and every judge call flips its verdict (4%), seeded per question and call, so runs are
reproducible whatever the concurrency. The dataset is the shipped sample four times over (96 items). Before the
first round the loop measures its noise floor (``parallel_longmemeval.sh --noise-floor``); then three rounds,
each through the loop's own steps (begin, cluster_failures --ids --out, commit-fix, drop_qids --from-file, the
resumed run with --no-cache as a changed prompt would have it, finish):

    (a) an arbitrary change (nothing about the answers changes): not reported as a significant fix;
    (b) a real fix (cluster 1's failing items answered right): KEEP, its net outside the noise band;
    (c) a change that fixes a cluster's failing items and breaks every right item of their type (one that has
        at least twice as many right items as the cluster): REVERT. The control sample (``--control-ratio 2``)
        is what shows it: on the failing items alone it would have been KEEP.

The printed lines are written to ``$LONGMEMEVAL_TRAP_LOG`` when set (the closing note quotes them).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import threading
from pathlib import Path

import pytest

from lme.score import cluster_failures
from lme.cli import cluster_failures as cluster_failures_cli
from lme.score import drop_qids
from lme.cli import drop_qids as drop_qids_cli
from lme.loop import steps as loop_steps
from lme.loop import noise_floor
from lme.store import run_store
from lme.score import trigger_set
from lme.core.errors import run_main
from loop_testing import LOOP_BRANCH, make_loop_project
from fake_llm_server import prompt_text
from run_project import SAMPLE, make_project

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
COPIES = 4
GENERATION_FLIP = 0.10
JUDGE_FLIP = 0.04
LOOP = {
    "branch": LOOP_BRANCH, "run_id": "loop", "target": "full-context", "target_model": "openai:gpt-4o-mini",
    "judge": "openai:gpt-4o", "n_parallel": 4, "fix_paths": ["memory_system/"],
    "targetOptions": {"symbolic_resolver": True, "symbolic_temporal": True, "symbolic_bypass": True},
}


def copies_of_the_sample(path: Path) -> list[dict]:
    items = json.loads(SAMPLE.read_text())
    out = []
    for k in range(COPIES):
        for it in items:
            copy = dict(it, question_id=f"{it['question_id']}_c{k}", question=f"[{k}] {it['question']}")
            out.append(copy)
    path.write_text(json.dumps(out))
    return out


def _draw(*parts: object) -> float:
    return int(hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:8], 16) / 2**32


class NoisySystem:
    """Reader and judge for the fake server: gold for questions in ``good``, each call flipped at random."""

    def __init__(self, items: list[dict]) -> None:
        self.gold = {it["question"]: str(it["answer"]) for it in items}
        self.by_length = sorted(self.gold, key=len, reverse=True)
        self.good: set[str] = set()
        self.calls: dict[tuple[str, str], int] = {}
        self.lock = threading.Lock()

    def question_in(self, text: str) -> str | None:
        return next((q for q in self.by_length if q in text), None)

    def _nth(self, kind: str, question: str) -> int:
        with self.lock:
            n = self.calls.get((kind, question), 0)
            self.calls[(kind, question)] = n + 1
            return n

    def reader(self, body) -> str:
        question = self.question_in(prompt_text(body))
        if question is None:
            return "I don't know."
        right = (question in self.good) != (_draw("gen", question, self._nth("gen", question)) < GENERATION_FLIP)
        return self.gold[question] if right else "I don't know."

    def judge(self, prompt: str) -> str:
        question = self.question_in(prompt)
        if question is None:
            return "no"
        after = prompt[prompt.find(question) + len(question):].lower()
        yes = after.count(self.gold[question].lower()) >= 2
        flipped = _draw("judge", question, self._nth("judge", question)) < JUDGE_FLIP
        return "yes" if yes != flipped else "no"


@pytest.fixture
def trap(tmp_path, fake_llm):
    project = make_loop_project(tmp_path)
    with open(project / ".git" / "info" / "exclude", "a") as fh:
        fh.write("upstream/\n")  # the stand-in upstream checkout is not part of any fix
    items = copies_of_the_sample(tmp_path / "sample_x4.json")
    make_project(project, dataset=tmp_path / "sample_x4.json", loop=LOOP, target="full-context",
                 targetProvider="openai", targetModel="gpt-4o-mini")
    system = NoisySystem(items)
    fake_llm.answer_fn = system.reader
    fake_llm.judge_fn = system.judge
    system.good = {it["question"] for it in items if _draw("good", it["question"]) < 0.65}
    return project, items, system


def full_run(project: Path, *extra: str) -> str:
    quiet = () if "--noise-floor" in extra else ("--progress", "quiet")  # --noise-floor takes no run option
    proc = subprocess.run(
        ["bash", str(SCRIPTS / "parallel_longmemeval.sh"), "4", "133", str(COPIES * 24), *extra, *quiet],
        cwd=project, capture_output=True, text=True, env=dict(os.environ), timeout=180,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def play_round(project: Path, system: NoisySystem, items: list[dict], change, *, ratio: float = 1.0,
               cluster: int = 1) -> dict:
    """One round through the loop's steps; ``change(system, failing, type's right)`` is what the committed fix
    does (failing: the cluster's questions; the type's right: every question of its type judged right now)."""
    round_no = loop_steps.begin(project, "loop")
    out = project / ".longmemeval-benchmarks" / "trigger_set.txt"
    argv = ["--project", str(project), "--run-id", "loop", "--ids", str(cluster), "--out", str(out),
            "--control-ratio", str(ratio)]
    assert run_main(cluster_failures_cli.main, argv) == 0
    chosen = trigger_set.parse(out.read_text())
    assert chosen.failing and chosen.control  # as many control items as the type has right ones, at most
    (project / ".longmemeval-benchmarks" / "proposal.md").write_text(f"round {round_no}: {change.__doc__}\n")
    (project / "memory_system").mkdir(exist_ok=True)
    (project / "memory_system" / f"change_{round_no}.py").write_text(f"ROUND = {round_no}\n")
    loop_steps.commit_fix(project)
    question_of = {it["question_id"]: it["question"] for it in items}
    rows = run_store.load_results(project / ".longmemeval-benchmarks" / "runs" / "loop")
    qtype = rows[chosen.failing[0]].question_type
    right = [question_of[q] for q, row in rows.items() if row.question_type == qtype and row.correct]
    change(system, [question_of[q] for q in chosen.failing], right)
    assert run_main(drop_qids_cli.main, ["--project", str(project), "--run-id", "loop", "--from-file", str(out)]) == 0
    full_run(project, "--no-cache")  # the changed prompts miss the cache; here the prompts stay, so bypass it
    summary = loop_steps.finish(project, "loop")
    record = [json.loads(line) for line in
              (project / ".longmemeval-benchmarks" / "decisions.jsonl").read_text().splitlines()][-1]
    record["printed"] = summary
    return record


def arbitrary(system, failing, control):
    """an arbitrary one-line tweak (the answers do not change)"""


def real_fix(system, failing, control):
    """answer the cluster's questions from their evidence"""
    system.good |= set(failing)


def fix_and_break(system, failing, right):
    """answer the cluster's questions, at the price of the type's right answers"""
    system.good |= set(failing)
    system.good -= set(right)


def cluster_of_a_mostly_right_type(project: Path) -> int:
    """The first fixable cluster whose type has at least twice as many right items as the cluster has."""
    run_dir = project / ".longmemeval-benchmarks" / "runs" / "loop"
    rows = run_store.load_results(run_dir)
    result = cluster_failures.cluster_run(run_dir)
    for number, c in enumerate(result["clusters"], 1):
        right = sum(1 for r in rows.values() if r.question_type == c["question_type"] and r.correct)
        if not c["infrastructure"] and right >= 2 * c["count"]:
            return number
    raise AssertionError("no cluster of a mostly right type")


def test_the_loop_tells_noise_from_a_fix_and_catches_a_fix_that_breaks_controls(trap, capsys):
    project, items, system = trap
    full_run(project)  # the baseline
    printed = full_run(project, "--noise-floor")
    floor = noise_floor.load(project)
    assert floor["status"] == "measured" and floor["overall"]["n"] == noise_floor.DEFAULT_SAMPLE
    assert floor["overall"]["generation_flips"] > 0 and floor["overall"]["judge_flips"] > 0
    assert 0.05 < floor["overall"]["rate"] < 0.30  # about 10% + 4% flips, measured

    a = play_round(project, system, items, arbitrary)
    b = play_round(project, system, items, real_fix)
    c = play_round(project, system, items, fix_and_break, ratio=2.0, cluster=cluster_of_a_mostly_right_type(project))
    lines = [next(line for line in printed.splitlines() if line.startswith("noise floor (")),
             a["printed"], b["printed"], c["printed"]]
    print("\n".join(lines))
    if os.environ.get("LONGMEMEVAL_TRAP_LOG"):
        Path(os.environ["LONGMEMEVAL_TRAP_LOG"]).write_text("\n".join(lines) + "\n")

    # (a) noise: never a significant fix
    assert a["label"] in ("keep (within noise)", "revert"), a["printed"]
    assert a["p_value"] > 0.05 and (a["decision"] == "revert" or a["noise"]["within"])
    assert "inside it: not a significant fix" in a["printed"] or a["printed"].startswith("REVERT")
    # (b) a real fix: KEEP, outside the band
    assert b["label"] == "keep" and b["net"] > b["noise"]["high"], b["printed"]
    assert b["retest_set"]["parts"]["failing"]["fixes"] > b["retest_set"]["parts"]["failing"]["n"] / 2
    # (c) fixes the trigger items, breaks the controls: REVERT; the failing part alone would have said KEEP
    assert c["decision"] == "revert" and c["applied"], c["printed"]
    parts = c["retest_set"]["parts"]
    assert parts["failing"]["fixes"] - parts["failing"]["regressions"] >= 1
    assert parts["control"]["regressions"] >= parts["control"]["n"] - 2
    # the history: one row per step, per-type figures kept; the run says it mixes pre-fix and re-tested rows
    history = (project / "history_max_effort.md").read_text()
    assert history.count("| v2 |") == 3 and "decision: keep |" in history and "noise band" in history
    steps = [json.loads(line) for line in (project / ".longmemeval-benchmarks/history.jsonl").read_text().splitlines()]
    assert [s["step"] for s in steps if s["round"] == 3] == ["baseline", "re-test", "decision", "revert"]
    assert all(len(s["per_type"]) == 6 for s in steps)
    card = (project / ".longmemeval-benchmarks/runs/loop/scorecard.md").read_text()
    assert "MIXED ROWS: " in card and "kept fix(es) of v2" in card
