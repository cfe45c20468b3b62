"""kill -9 in the middle of appends, many times: resume always ends with one judged row per question.

Each round starts a writer process (lock, reconcile, append row + mark for each pending question), SIGKILLs it at
a random moment, sometimes also tears the last line by hand (what a crash mid-write can leave), checks that every
complete line survived and that readers do not crash, and goes again. A final writer runs to the end.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import factories
from lme.store import run_store

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGKILL semantics are POSIX")

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
TESTS = Path(__file__).resolve().parents[1]
N_QUESTIONS = 200
ROUNDS = 22

WRITER = f"""
import sys
sys.path[:0] = [{str(SCRIPTS)!r}, {str(TESTS)!r}]
import factories
from lme.core import schemas
from lme.store import run_store
from helpers_data import judged_row
run_dir = sys.argv[1]
qids = [f"q{{i:03d}}" for i in range({N_QUESTIONS})]
with run_store.RunLock(run_dir):
    run_store.reconcile(run_dir)
    done = run_store.load_completed(run_dir)
    schemas.validate("item-result", judged_row("q000"), where="warm-up")  # validators are built on first use:
    schemas.validate("completed", {{"question_id": "q000"}}, where="warm-up")  # before "ready", not in the window
    print("ready", flush=True)
    for qid in run_store.filter_pending([{{"question_id": q}} for q in qids], done):
        row = judged_row(qid["question_id"])
        row["hypothesis"] = "h" * 8000
        factories.append_unmarked(run_dir, row)
        run_store.mark_completed(run_dir, qid["question_id"])
print("finished", flush=True)
"""


def complete_lines(path: Path) -> list[bytes]:
    if not path.exists():
        return []
    data = path.read_bytes()
    return data[: data.rfind(b"\n") + 1].splitlines(keepends=True) if b"\n" in data else []


def tear_last_line(path: Path, rng: random.Random) -> None:
    """Cut the file inside its last line, as a crash mid-append can leave it."""
    data = path.read_bytes()
    start = data.rstrip(b"\n").rfind(b"\n") + 1
    if len(data) - start > 2:
        path.write_bytes(data[: rng.randrange(start + 1, len(data) - 1)])


def run_writer(run_dir: Path, kill_after: float | None) -> str:
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(run_dir)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    if kill_after is None:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        return out
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
    time.sleep(kill_after)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    proc.stdout.close()
    proc.stderr.close()
    return ""


@pytest.mark.kill
def test_sigkill_during_appends_then_resume_keeps_exactly_one_judged_row_per_question(tmp_path):
    rng = random.Random(20261129)
    results, completed = tmp_path / run_store.RESULTS_FILE, tmp_path / run_store.COMPLETED_FILE
    torn_seen = 0
    kept_rows: list[bytes] = []
    kept_marks: list[bytes] = []
    for _ in range(ROUNDS):
        run_writer(tmp_path, kill_after=rng.uniform(0.0, 0.02))  # resumes the previous round, then dies
        assert complete_lines(results)[: len(kept_rows)] == kept_rows  # every complete row kept, in place
        assert complete_lines(completed)[: len(kept_marks)] == kept_marks

        if completed.exists() and rng.random() < 0.5:
            tear_last_line(completed, rng)  # the mark is redone by reconcile: its judged row exists
        if results.exists() and rng.random() < 0.5:
            marked = run_store.load_completed(tmp_path)
            last = complete_lines(results)[-1:] or [b"{}"]
            if json.loads(last[0]).get("question_id") not in marked:  # a row whose mark exists was fsynced
                tear_last_line(results, rng)
        for path in (results, completed):
            if path.exists() and not path.read_bytes().endswith(b"\n"):
                torn_seen += 1
        factories.load_rows(tmp_path)  # readers never crash on a torn tail
        run_store.load_completed(tmp_path)
        kept_rows, kept_marks = complete_lines(results), complete_lines(completed)

    assert torn_seen > 0, "the loop never produced a torn tail; the test would prove nothing"
    assert "finished" in run_writer(tmp_path, kill_after=None)

    rows = [json.loads(line) for line in complete_lines(results)]
    assert results.read_bytes().endswith(b"\n") and len(rows) == N_QUESTIONS
    judged = [r["question_id"] for r in rows if r["status"] == "judged"]
    assert sorted(judged) == [f"q{i:03d}" for i in range(N_QUESTIONS)]  # exactly one judged row each
    marks = [json.loads(line)["question_id"] for line in complete_lines(completed)]
    assert sorted(marks) == sorted(judged)
    assert run_store.reconcile(tmp_path) == {"marked": [], "unmarked": []}


def test_hand_made_torn_tails_in_both_logs_resume_cleanly(tmp_path):
    from helpers_data import judged_row

    row1, row2 = json.dumps(judged_row("q000")), json.dumps(judged_row("q001"))
    (tmp_path / run_store.RESULTS_FILE).write_text(row1 + "\n" + row2 + "\n" + row2[:40])
    (tmp_path / run_store.COMPLETED_FILE).write_text('{"question_id": "q000"}\n{"question_id": "q0')
    assert set(factories.load_rows(tmp_path)) == {"q000", "q001"}
    assert run_store.load_completed(tmp_path) == {"q000"}
    assert "finished" in run_writer(tmp_path, kill_after=None)
    rows = [json.loads(line) for line in complete_lines(tmp_path / run_store.RESULTS_FILE)]
    assert [r["question_id"] for r in rows] == [f"q{i:03d}" for i in range(N_QUESTIONS)]
    assert run_store.load_completed(tmp_path) == {f"q{i:03d}" for i in range(N_QUESTIONS)}
