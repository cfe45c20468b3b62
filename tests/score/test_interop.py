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
from factories import official_row, write_run, scorecard_of

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
    """A plain re-computation in the manner of upstream's print_qa_metrics.py: the file read by text-mode
    ``readlines``, one entry per line, means over the lines (a question on two lines counts twice)."""
    qtype = {x["question_id"]: x["question_type"] for x in json.loads(ref_file.read_text())}
    by_type: dict[str, list[int]] = {t: [] for t in QUESTION_TYPES}
    abstention: list[int] = []
    with open(eval_file, encoding="utf-8") as fh:
        entries = [json.loads(line) for line in fh.readlines()]
    for entry in entries:
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

    ours = metrics.score(*interop.import_eval_results(eval_file, run / "manifest.json").scoring_input())
    assert theirs["n"] == ours.judged == 14
    for t in QUESTION_TYPES:
        assert ours.per_type[t].accuracy_judged == pytest.approx(theirs["per_type"][t])
    assert ours.task_averaged.accuracy_judged == pytest.approx(theirs["task"])
    assert ours.overall.accuracy_judged == pytest.approx(theirs["overall"])
    assert ours.abstention.accuracy_judged == pytest.approx(theirs["abstention"])
    # and the round trip gives the same figures as scoring the run directly
    from lme.store.run_store import load_run

    record = scorecard_of(load_run(run))
    card = record.to_dict()
    assert card["overall"]["accuracy_judged"] == pytest.approx(ours.overall.accuracy_judged)
    assert card["overall"]["accuracy_strict"] == pytest.approx(ours.overall.accuracy_strict) == 9 / 16


def upstream_prints(tmp_path: Path, eval_file: Path, ref: Path) -> str:
    """What upstream's own print_qa_metrics.py (from the mirror) prints for the file."""
    archive = subprocess.run(["git", "-C", str(MIRROR), "archive", "HEAD", "src/evaluation"],
                             check=True, capture_output=True).stdout
    upstream = tmp_path / "upstream"
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(upstream, filter="data")
    printed = subprocess.run([sys.executable, str(upstream / "src/evaluation/print_qa_metrics.py"), str(eval_file),
                              str(ref)], check=True, capture_output=True, text=True, timeout=120).stdout
    shutil.rmtree(upstream)
    return printed


@pytest.mark.skipif(not MIRROR.exists(), reason="upstream LongMemEval mirror not present")
@pytest.mark.parametrize("which", ["exported", "with duplicate ids"])
def test_upstream_print_qa_metrics_prints_our_numbers(run, tmp_path, which):
    if which == "exported":
        eval_file = interop.export_eval_results(run, tmp_path / "hyp.jsonl")
        ref = interop.export_reference(run, tmp_path / "ref.json")
    else:
        eval_file, ref = write_duplicated(run, tmp_path)
    printed = upstream_prints(tmp_path, eval_file, ref)

    ours = metrics.score(*interop.import_eval_results(eval_file, ref, count_duplicates=True).scoring_input())
    for t in QUESTION_TYPES:
        block = ours.per_type[t]
        assert f"{t}: {metrics.display_round(block.accuracy_judged)} ({block.judged})" in printed
    assert float(re.search(r"Task-averaged Accuracy: ([0-9.]+)", printed).group(1)) == \
        metrics.display_round(ours.task_averaged.accuracy_judged)
    assert float(re.search(r"Overall Accuracy: ([0-9.]+)", printed).group(1)) == \
        metrics.display_round(ours.overall.accuracy_judged)
    assert float(re.search(r"Abstention Accuracy: ([0-9.]+)", printed).group(1)) == \
        metrics.display_round(ours.abstention.accuracy_judged)


def test_import_refuses_unofficial_judge_unless_allowed(tmp_path):
    ref = [{"question_id": "q1", "question_type": "multi-session"}]
    f = tmp_path / "h.jsonl.eval-results-gpt-4o"
    f.write_text(json.dumps({"question_id": "q1", "hypothesis": "x",
                             "autoeval_label": {"model": "gpt-4o-mini", "label": True}}) + "\n")
    with pytest.raises(UserError, match="judged by 'gpt-4o-mini'"):
        interop.import_eval_results(f, ref)
    labels, types = interop.import_eval_results(f, ref, allow_unofficial=True).scoring_input()
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


# ---------------------------------------------------------------------- upstream's bytes


AWKWARD = ["café naïve", "東京 에서", "party 🎉", 'a "quote" and a \\ backslash', "two\nlines",
           "sep\u2028arator"]


def test_exported_files_hold_the_bytes_upstream_writes(tmp_path):
    items = [(f"q{i}", "multi-session") for i in range(len(AWKWARD))]
    rows = [official_row(q, t, i % 2 == 0, hypothesis=AWKWARD[i]) for i, (q, t) in enumerate(items)]
    run = write_run(tmp_path / "run", items, rows)
    hyp = interop.export_hypotheses(run, tmp_path / "hyp.jsonl")
    eval_file = interop.export_eval_results(run, hyp)
    # upstream's evaluate_qa.py prints json.dumps(entry) for each entry, the input line's keys then autoeval_label
    expected_hyp = "".join(json.dumps({"question_id": q, "hypothesis": h}) + "\n" for (q, _), h in zip(items, AWKWARD))
    expected_eval = "".join(
        json.dumps({"question_id": q, "hypothesis": h, "autoeval_label": {"model": "gpt-4o-2024-08-06",
                                                                           "label": i % 2 == 0}}) + "\n"
        for i, ((q, _), h) in enumerate(zip(items, AWKWARD)))
    assert hyp.read_bytes() == expected_hyp.encode("ascii")
    assert eval_file.read_bytes() == expected_eval.encode("ascii")
    assert b"\\u00e9" in hyp.read_bytes() and b"\\ud83c\\udf89" in hyp.read_bytes()  # escaped, not raw UTF-8


# ---------------------------------------------------------------------- duplicate question ids


DUPLICATED = [  # (question id, hypothesis, label): one id on three lines, an abstention id twice, one repeated as is
    ("u1", "answer to u1", True), ("u1", "answer to u1", True), ("u2", "no", False),
    ("u3_abs", "cannot tell", True), ("u3_abs", "it was Paris", False),
    ("a1", "yes", True), ("a2", "yes", True), ("p1", "hmm", False),
    ("m1", "x", True), ("m1", "y", False), ("m2", "no", False), ("m1", "z", False), ("m4_abs", "no", False),
    ("m5", "sep\u2028arator", True), ("t1", "yes", True),
    ("k1", "yes", True), ("k2", "no", False), ("k3", "yes", True), ("k2", "now right", True),
]


def write_duplicated(run: Path, tmp_path: Path) -> tuple[Path, Path]:
    """An eval-results file with duplicate ids (different hypotheses and labels among them), written as a
    publisher's script might (raw UTF-8), and a ref file of the run's items."""
    eval_file = tmp_path / "published.jsonl.eval-results-gpt-4o"
    eval_file.write_text("".join(json.dumps({"question_id": q, "hypothesis": h, "autoeval_label": {
        "model": "gpt-4o-2024-08-06", "label": label}}, ensure_ascii=False) + "\n" for q, h, label in DUPLICATED),
        encoding="utf-8")
    return eval_file, interop.export_reference(run, tmp_path / "ref.json")


def test_duplicate_ids_are_refused_in_one_line_naming_how_many_and_which(run, tmp_path, capsys):
    from lme.core.errors import run_main

    eval_file, ref = write_duplicated(run, tmp_path)
    assert run_main(interop_cli.main, ["import", str(eval_file), str(ref)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1
    assert (f"{eval_file} holds 19 lines for 14 questions (5 duplicate lines): 4 ids are on more than one line, 3 "
            "with different labels: u1 (2 lines), u3_abs (2 lines), m1 (3 lines), k2 (2 lines)") in captured.err
    assert "--count-duplicates" in captured.err


def test_count_duplicates_scores_every_line_as_an_upstream_recount_does(run, tmp_path, capsys):
    eval_file, ref = write_duplicated(run, tmp_path)
    assert interop_cli.main(["import", str(eval_file), str(ref), "--count-duplicates", "--json"]) == 0
    captured = capsys.readouterr()
    ours, theirs = json.loads(captured.out), independent_figures(eval_file, ref)
    assert ours["eval_results"] == {"file": str(eval_file), "lines": 19, "question_ids": 14, "duplicate_lines": 5,
                                    "duplicated_ids": {"u1": 2, "u3_abs": 2, "m1": 3, "k2": 2},
                                    "ids_with_different_labels": ["u3_abs", "m1", "k2"]}
    assert "4 ids are on more than one line" in captured.err and "m1 (3 lines)" in captured.err
    assert theirs["n"] == ours["judged"] == 19
    qtype = {q: t for q, t, _ in PLAN}
    for t in QUESTION_TYPES:
        assert ours["per_type"][t]["accuracy_judged"] == pytest.approx(theirs["per_type"][t])
        assert ours["per_type"][t]["judged"] == sum(qtype[q] == t for q, _, _ in DUPLICATED)
    assert ours["task_averaged"]["accuracy_judged"] == pytest.approx(theirs["task"])
    assert ours["overall"]["accuracy_judged"] == pytest.approx(theirs["overall"]) == 11 / 19
    assert ours["abstention"]["accuracy_judged"] == pytest.approx(theirs["abstention"]) == 1 / 3
    # one verdict per question would have given another figure: the lines are what was counted
    last = {q: label for q, _, label in DUPLICATED}
    assert sum(last.values()) / len(last) != pytest.approx(ours["overall"]["accuracy_judged"])
    # the strict figure: every line, and each reference item the file lacks (m3, t2) as wrong
    assert ours["n_total"] == 19 + 2 and ours["overall"]["accuracy_strict"] == pytest.approx(11 / 21)


def test_a_file_without_duplicates_says_so_in_its_json(run, tmp_path, capsys):
    eval_file = interop.export_eval_results(run, tmp_path / "hyp.jsonl")
    assert interop_cli.main(["import", str(eval_file), str(run / "manifest.json"), "--json"]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)["eval_results"]
    assert (summary["lines"], summary["question_ids"], summary["duplicate_lines"], summary["duplicated_ids"]) == \
        (14, 14, 0, {})
    assert captured.err == ""
