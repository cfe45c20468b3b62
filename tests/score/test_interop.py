"""interop: exported upstream-format files, re-scored independently (and by upstream's own script when the mirror
is present), give exactly our figures."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tarfile
import io
from pathlib import Path

import pytest

from lme.score import interop
from lme.cli import interop as interop_cli
from lme.score import metrics
from lme.core.errors import UserError
from lme.core.records import QUESTION_TYPES
from factories import official_row, write_run

MIRROR = Path("/work/.mirror/xiaowu0162+LongMemEval/repo")

# Unbalanced across all six types, abstention items in two base types, one error, one item never run.
PLAN = [
    ("u1", "single-session-user", True), ("u2", "single-session-user", False), ("u3_abs", "single-session-user", True),
    ("a1", "single-session-assistant", True), ("a2", "single-session-assistant", True),
    ("p1", "single-session-preference", False),
    ("m1", "multi-session", True), ("m2", "multi-session", False), ("m3", "multi-session", None),
    ("m4_abs", "multi-session", False), ("m5", "multi-session", True),
    ("t1", "temporal-reasoning", True), ("t2", "temporal-reasoning", "not run"),
    ("k1", "knowledge-update", True), ("k2", "knowledge-update", False), ("k3", "knowledge-update", True),
]


@pytest.fixture
def run(tmp_path) -> Path:
    rows = [official_row(q, t, lab, hypothesis=f"answer to {q}") for q, t, lab in PLAN if lab != "not run"]
    return write_run(tmp_path / "run", [(q, t) for q, t, _ in PLAN], rows, status="interrupted")


def independent_figures(eval_file: Path, ref_file: Path) -> dict:
    """A plain re-computation in the manner of upstream's print_qa_metrics.py: means over the file's lines."""
    qtype = {x["question_id"]: x["question_type"] for x in json.loads(ref_file.read_text())}
    by_type: dict[str, list[int]] = {t: [] for t in QUESTION_TYPES}
    abstention: list[int] = []
    for line in eval_file.read_text().splitlines():
        entry = json.loads(line)
        value = 1 if entry["autoeval_label"]["label"] else 0
        by_type[qtype[entry["question_id"]]].append(value)
        if "_abs" in entry["question_id"]:
            abstention.append(value)
    every = [v for vs in by_type.values() for v in vs]
    return {"per_type": {t: sum(v) / len(v) for t, v in by_type.items()},
            "task": sum(sum(v) / len(v) for v in by_type.values()) / len(by_type),
            "overall": sum(every) / len(every), "abstention": sum(abstention) / len(abstention),
            "n": len(every)}


def test_exported_hypotheses_are_upstream_input_lines(run, tmp_path):
    out = interop.export_hypotheses(run, tmp_path / "x" / "hyp.jsonl")
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0] == {"question_id": "u1", "hypothesis": "answer to u1"}
    # m3 errored after generating (its hypothesis is kept, as upstream would judge it); t2 never ran
    assert [line["question_id"] for line in lines] == [q for q, _, lab in PLAN if lab != "not run"]


def test_exported_eval_results_rescored_independently_equal_our_figures(run, tmp_path):
    hyp = tmp_path / "hyp.jsonl"
    eval_file = interop.export_eval_results(run, hyp)
    assert eval_file.name == "hyp.jsonl.eval-results-gpt-4o"
    first = json.loads(eval_file.read_text().splitlines()[0])
    assert first == {"question_id": "u1", "hypothesis": "answer to u1",
                     "autoeval_label": {"model": "gpt-4o-2024-08-06", "label": True}}
    ref = interop.export_reference(run, tmp_path / "ref.json")
    theirs = independent_figures(eval_file, ref)

    labels, types = interop.import_eval_results(eval_file, run / "manifest.json")
    ours = metrics.score(labels, types)
    assert theirs["n"] == ours["judged"] == 14
    for t in QUESTION_TYPES:
        assert ours["per_type"][t]["accuracy_judged"] == pytest.approx(theirs["per_type"][t])
    assert ours["task_averaged"]["accuracy_judged"] == pytest.approx(theirs["task"])
    assert ours["overall"]["accuracy_judged"] == pytest.approx(theirs["overall"])
    assert ours["abstention"]["accuracy_judged"] == pytest.approx(theirs["abstention"])
    # and the round trip gives the same figures as scoring the run directly
    from lme.score import scoring
    from lme.store.run_store import load_run

    record = scoring.build_scorecard(load_run(run))
    card = record.to_dict()
    assert card["overall"]["accuracy_judged"] == pytest.approx(ours["overall"]["accuracy_judged"])
    assert card["overall"]["accuracy_strict"] == pytest.approx(ours["overall"]["accuracy_strict"]) == 9 / 16


@pytest.mark.skipif(not MIRROR.exists(), reason="upstream LongMemEval mirror not present")
def test_upstream_print_qa_metrics_prints_our_numbers(run, tmp_path):
    archive = subprocess.run(["git", "-C", str(MIRROR), "archive", "HEAD", "src/evaluation"],
                             check=True, capture_output=True).stdout
    upstream = tmp_path / "upstream"
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(upstream, filter="data")
    eval_file = interop.export_eval_results(run, tmp_path / "hyp.jsonl")
    ref = interop.export_reference(run, tmp_path / "ref.json")
    printed = subprocess.run([sys.executable, str(upstream / "src/evaluation/print_qa_metrics.py"), str(eval_file),
                              str(ref)], check=True, capture_output=True, text=True, timeout=120).stdout

    labels, types = interop.import_eval_results(eval_file, ref)
    ours = metrics.score(labels, types)
    for t in QUESTION_TYPES:
        block = ours["per_type"][t]
        assert f"{t}: {round(block['accuracy_judged'], 4)} ({block['judged']})" in printed
    assert float(re.search(r"Task-averaged Accuracy: ([0-9.]+)", printed).group(1)) == \
        round(ours["task_averaged"]["accuracy_judged"], 4)
    assert float(re.search(r"Overall Accuracy: ([0-9.]+)", printed).group(1)) == \
        round(ours["overall"]["accuracy_judged"], 4)
    assert float(re.search(r"Abstention Accuracy: ([0-9.]+)", printed).group(1)) == \
        round(ours["abstention"]["accuracy_judged"], 4)
    shutil.rmtree(upstream)


def test_import_refuses_unofficial_judge_unless_allowed(tmp_path):
    ref = [{"question_id": "q1", "question_type": "multi-session"}]
    f = tmp_path / "h.jsonl.eval-results-gpt-4o"
    f.write_text(json.dumps({"question_id": "q1", "hypothesis": "x",
                             "autoeval_label": {"model": "gpt-4o-mini", "label": True}}) + "\n")
    with pytest.raises(UserError, match="judged by 'gpt-4o-mini'"):
        interop.import_eval_results(f, ref)
    labels, types = interop.import_eval_results(f, ref, allow_unofficial=True)
    assert labels == {"q1": True} and types == {"q1": "multi-session"}


def test_import_names_the_bad_line(tmp_path):
    f = tmp_path / "bad.eval-results-gpt-4o"
    f.write_text('{"question_id": "q1"}\n')
    with pytest.raises(UserError, match=r"bad.eval-results-gpt-4o:1"):
        interop.import_eval_results(f, [{"question_id": "q1", "question_type": "multi-session"}])


def test_cli_export_then_import(run, tmp_path, capsys):
    hyp = tmp_path / "cli.jsonl"
    assert interop_cli.main(["export", str(run), str(hyp), "--eval-results", "--reference", str(tmp_path / "r.json")]) == 0
    capsys.readouterr()
    assert interop_cli.main(["import", str(interop.eval_results_path(hyp)), str(run / "manifest.json")]) == 0
    out = capsys.readouterr().out
    assert "Overall accuracy (judged only): 0.6429 (14); strict over 16: 0.5625" in out
