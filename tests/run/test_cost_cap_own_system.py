"""``--max-cost`` on a run of the user's own memory system (written here from plugins/README.md alone: a Python
file and a command) whose model is not in the price table, judged by a priced judge. Its rows are priced in part
(the judge's calls); a resume under a cap starts from what those rows cost, not from nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from lme.cli import run_benchmark
from run_project import SAMPLE, make_project, register_answers, run_dir

UNPRICED_MODEL = "my-own-finetune-v1"
THIRD = json.loads(SAMPLE.read_text())[2]  # a new run with --max 3 takes the first three items
PYTHON_FILE = """\
import os, sys
import openai

client = openai.OpenAI()


def generate(item, ctx):
    if os.path.exists(os.environ["FAIL_FLAG"]) and item["question"] == os.environ["THIRD_QUESTION"]:
        raise RuntimeError("not today")
    reply = client.chat.completions.create(model=ctx["model"], max_tokens=64,
                                           messages=[{"role": "user", "content": "Answer from memory: " + item["question"]}])
    return {"hypothesis": reply.choices[0].message.content}
"""
COMMAND = """\
import json, os, sys
import openai

item = json.load(sys.stdin)
if os.path.exists(os.environ["FAIL_FLAG"]) and item["question"] == os.environ["THIRD_QUESTION"]:
    sys.exit(3)
reply = openai.OpenAI().chat.completions.create(
    model=os.environ["LONGMEMEVAL_TARGET_MODEL"], max_tokens=64,
    messages=[{"role": "user", "content": "Answer from memory: " + item["question"]}])
print(json.dumps({"hypothesis": reply.choices[0].message.content}))
"""


def own_project(tmp_path: Path, kind: str) -> Path:
    if kind == "python":
        (tmp_path / "memsys.py").write_text(PYTHON_FILE)
        target, options = "python", {"path": str(tmp_path / "memsys.py"), "timeout_s": 60}
    else:
        (tmp_path / "memsys_cmd.py").write_text(COMMAND)
        target, options = "command", {"command": [sys.executable, str(tmp_path / "memsys_cmd.py")], "timeout_s": 60}
    return make_project(tmp_path / "p", target=target, targetProvider="openai", targetModel=UNPRICED_MODEL,
                        targetOptions=options, concurrency=1)


def run(project: Path, *args: str) -> int:
    return run_benchmark.main(["--project", str(project), "--progress", "quiet", "--no-scorecard", "--yes",
                               "--run-id", "cap", *args])


def rows(project: Path) -> list[dict]:
    lines = (run_dir(project, "cap") / "item-results.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.mark.parametrize("kind", ["python", "command"])
def test_a_resume_under_a_cap_counts_the_judge_cost_of_an_unpriced_own_systems_rows(tmp_path, fake_llm, monkeypatch,
                                                                                  capsys, kind):
    flag = tmp_path / "fail-the-third"
    flag.touch()
    monkeypatch.setenv("FAIL_FLAG", str(flag))
    monkeypatch.setenv("THIRD_QUESTION", THIRD["question"])  # a system never sees the question id
    project = own_project(tmp_path, kind)
    register_answers(fake_llm, correct_share=1.0)
    assert run(project, "--max", "3") == 1  # the third item fails: two judged rows, one failed
    first = rows(project)
    judged = [r for r in first if r["status"] == "judged"]
    assert [r["question_id"] for r in first if r["status"] == "error"] == [THIRD["question_id"]]
    assert len(judged) == 2
    for row in judged:  # priced in part: the system's model has no price, its judge has one
        assert row["cost"]["generation_usd"] is None and row["cost"]["total_usd"] is None
        assert row["cost"]["judge_usd"] > 0
    paid = sum(r["cost"]["judge_usd"] for r in judged)

    flag.unlink()  # the system answers now; the cap is what the run has paid so far
    capsys.readouterr()
    assert run(project, "--max-cost", f"{paid:.8f}") == 6  # paused by the cap: the third item is not started
    assert "paused at the cost cap" in capsys.readouterr().err
    meta = json.loads((run_dir(project, "cap") / "run-meta.json").read_text())
    assert meta["invocations"][-1]["spent_usd"] == pytest.approx(paid, abs=1e-6)  # it was 0: those rows counted nothing
    assert [r["question_id"] for r in rows(project)] == [r["question_id"] for r in first]  # no row added
