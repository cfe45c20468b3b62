"""A run's items are chosen once, when it starts (``--max N``: the dataset's first N), and every printed resume line
finishes exactly those, saying how many: after a failed item, after Ctrl-C, with the user's own memory system (a
Python file written from plugins/README.md alone, whose model calls the cost gate does not count) and with
memory-ref."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lme.cli import run_benchmark
from lme.core.errors import run_main
from test_run_crash_resume import wait_for_a_row
from run_project import REPO, SAMPLE, make_project, register_answers, run_dir

ITEMS = json.loads(SAMPLE.read_text())
N_SAMPLE = len(ITEMS)
OFFLINE_ROUTES = {"targetProvider": "offline", "targetModel": "extractive", "judgeProvider": "offline",
                  "judgeModel": "offline-containment-v1"}

USERS_SYSTEM = '''
"""A memory system as plugins/README.md describes one: generate(item, ctx) -> {{"hypothesis": ...}}."""
import time

def generate(item, ctx):
    if item["question"] == {failing!r}:
        raise RuntimeError("my system cannot answer this one yet")
    time.sleep({sleep})
    words = set(item["question"].lower().split())
    best, best_score = "not enough information", 0
    for session in item["sessions"]:
        for turn in session["turns"]:
            score = len(words & set(turn["content"].lower().split()))
            if turn["role"] == "user" and score > best_score:
                best, best_score = turn["content"], score
    return {{"hypothesis": best}}
'''


def users_project(tmp_path: Path, *, failing: str = "", sleep: float = 0.0) -> tuple[Path, list[str]]:
    system = tmp_path / "memsys.py"
    system.write_text(USERS_SYSTEM.format(failing=failing, sleep=sleep))
    project = make_project(tmp_path / "p", concurrency=1, **OFFLINE_ROUTES)
    return project, ["--target", "python", "--target-option", f"path={system}"]


def completed(project: Path, run_id: str) -> list[str]:
    path = run_dir(project, run_id) / "questions_completed.jsonl"
    return [json.loads(x)["question_id"] for x in path.read_text().splitlines() if x.strip()]


def result_ids(project: Path, run_id: str) -> set[str]:
    path = run_dir(project, run_id) / "item-results.jsonl"
    return {json.loads(x)["question_id"] for x in path.read_text().splitlines() if x.strip()}


def printed_resume(err: str) -> list[str]:
    """The argv of the printed ``resume with:`` command, without the interpreter and the script."""
    line = next(x for x in err.splitlines() if "resume with: " in x)
    words = shlex.split(line.split("resume with: ", 1)[1])
    assert Path(words[1]).name == "run_benchmark.py"
    return words[2:]


def test_a_max_run_with_a_failed_item_resumes_only_its_own_items(tmp_path, capsys):
    project, target = users_project(tmp_path, failing=ITEMS[2]["question"])
    argv = ["--project", str(project), "--progress", "quiet", "--no-scorecard", "--run-id", "ten", *target]
    assert run_main(run_benchmark.main, [*argv, "--max", "10"]) == 1  # the third item fails
    err = capsys.readouterr().err
    pending = 10 - len(completed(project, "ten"))  # the failed item and those not started (the 14 others: never)
    assert pending >= 7 and f"{pending} of this run's 10 items pending; resume with: " in err
    manifest = json.loads((run_dir(project, "ten") / "manifest.json").read_text())
    assert manifest["n_total"] == 10 and [i["question_id"] for i in manifest["items"]] == \
        [it["question_id"] for it in ITEMS[:10]]

    (tmp_path / "memsys.py").write_text(USERS_SYSTEM.format(failing="", sleep=0.0))  # the user fixed it
    assert run_main(run_benchmark.main, [*printed_resume(err), "--progress", "quiet", "--no-scorecard"]) == 0
    assert sorted(completed(project, "ten")) == sorted(it["question_id"] for it in ITEMS[:10])
    assert result_ids(project, "ten") == {it["question_id"] for it in ITEMS[:10]}  # never the other 14
    meta = json.loads((run_dir(project, "ten") / "run-meta.json").read_text())
    assert meta["counts"] == {"n_total": 10, "planned": 10, "completed": 10, "pending": 0}
    assert meta["invocations"][-1]["planned_now"] == pending


def test_ctrl_c_of_a_max_run_prints_a_resume_that_finishes_its_items(tmp_path):
    project, target = users_project(tmp_path, sleep=0.15)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LONGMEMEVAL_LOOP")}
    cmd = [sys.executable, str(REPO / "scripts" / "run_benchmark.py"), "--project", str(project), "--run-id", "cut",
           "--progress", "quiet", "--no-scorecard", "--max", "8", *target]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_a_row(run_dir(project, "cut"))  # past its start-up: the signal lands in the run itself
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    done = len(completed(project, "cut"))
    assert 1 <= done < 8
    assert f"{8 - done} of this run's 8 items pending; resume with: " in err

    resume = subprocess.run([sys.executable, str(REPO / "scripts" / "run_benchmark.py"), *printed_resume(err)],
                            env=env, capture_output=True, text=True, timeout=120)
    assert resume.returncode == 0, resume.stderr
    assert sorted(completed(project, "cut")) == sorted(it["question_id"] for it in ITEMS[:8])
    meta = json.loads((run_dir(project, "cut") / "run-meta.json").read_text())
    assert meta["invocations"][-1]["planned_now"] == 8 - done  # not the dataset's other 16


@pytest.mark.parametrize("given, refused", [("6", True), ("50", True), ("5", False)])
def test_a_resume_naming_another_max_is_refused_in_one_line_and_writes_nothing(tmp_path, capsys, given, refused):
    project, target = users_project(tmp_path, failing=ITEMS[1]["question"])
    argv = ["--project", str(project), "--progress", "quiet", "--no-scorecard", "--run-id", "five",
            "--error-threshold", "9", *target]
    assert run_main(run_benchmark.main, [*argv, "--max", "5"]) == 0
    assert len(completed(project, "five")) == 4
    capsys.readouterr()
    meta_before = (run_dir(project, "five") / "run-meta.json").read_text()
    for extra in ([], ["--dry-run"]):
        code = run_main(run_benchmark.main, [*argv, "--max", given, *extra])
        err = capsys.readouterr().err
        if refused:
            assert code == 2 and err.count("\n") == 1, err
            assert f"cannot resume run five: --max {given}" in err and "the 5 chosen when it started" in err
            assert "drop --max to finish this run's items" in err
            assert (run_dir(project, "five") / "run-meta.json").read_text() == meta_before
    if not refused:  # the same item set: resumed (the second item failed again), nothing added
        assert code == 0 and result_ids(project, "five") == {it["question_id"] for it in ITEMS[:5]}


def test_a_dry_run_of_a_resume_counts_only_the_runs_pending_items(tmp_path, capsys):
    project, target = users_project(tmp_path, failing=ITEMS[0]["question"])
    argv = ["--project", str(project), "--progress", "quiet", "--no-scorecard", "--run-id", "d", *target]
    assert run_main(run_benchmark.main, [*argv, "--max", "4"]) == 1
    capsys.readouterr()
    assert run_main(run_benchmark.main, [*argv, "--dry-run", "--json"]) == 0
    pending = 4 - len(completed(project, "d"))  # the failed first item and those not started
    assert pending >= 2 and json.loads(capsys.readouterr().out)["items"] == pending  # not the dataset's 20 others


def test_a_memory_ref_max_run_with_a_failed_item_resumes_only_its_items(tmp_path, capsys, fake_llm):
    register_answers(fake_llm)
    project = make_project(tmp_path / "p", concurrency=1, target="memory-ref", targetOptions={"embedder": "none"})
    fake_llm.fail_next("400")  # not retryable: the first item's first call fails
    argv = ["--project", str(project), "--progress", "quiet", "--no-scorecard", "--run-id", "mr"]
    assert run_main(run_benchmark.main, [*argv, "--max", "3"]) == 1
    err = capsys.readouterr().err
    pending = 3 - len(completed(project, "mr"))
    assert pending >= 2 and f"{pending} of this run's 3 items pending; resume with: " in err
    assert run_main(run_benchmark.main, [*printed_resume(err), "--progress", "quiet", "--no-scorecard"]) == 0
    assert result_ids(project, "mr") == {it["question_id"] for it in ITEMS[:3]}
    assert sorted(completed(project, "mr")) == sorted(it["question_id"] for it in ITEMS[:3])


def test_a_ten_item_run_and_a_twenty_item_run_of_the_same_code_compare_on_their_ten(tmp_path, capsys):
    """The finding: a 40-item run compared with a 20-item run of the same code printed fixes and a small McNemar p,
    the items the smaller run never ran counted as wrong there."""
    from lme.cli import scorecard

    project, target = users_project(tmp_path)
    argv = ["--project", str(project), "--progress", "quiet", *target]
    assert run_main(run_benchmark.main, [*argv, "--no-scorecard", "--run-id", "small", "--max", "10"]) == 0
    assert run_main(run_benchmark.main, [*argv, "--no-scorecard", "--run-id", "large", "--max", "20"]) == 0
    capsys.readouterr()
    assert scorecard.main(["--project", str(project), "--run-id", "large", "--no-charts", "--compare", "small"]) == 0
    line = capsys.readouterr().err.rstrip().splitlines()[-1]
    assert line == ("compare small (before) -> large (after), 10 items judged in both: fixes 0, regressions 0, net "
                    "+0, exact McNemar p 1; not compared: 10 judged only in after; same target, models, options "
                    "and code")
