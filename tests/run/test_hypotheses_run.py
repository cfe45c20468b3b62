"""A hypotheses file judged as a run (``run_benchmark.py --hypotheses FILE``): checked up front, judged through the
run's machinery, scored like any run, refused on resume once the file changed, and crash-safe (its kill -9 and
resume: tests/run/test_background_run.py, a killed worker)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from lme.score import run_comparison
from lme.score import interop
from lme.judge import agreement as judge_agreement
from lme.cli import judge_agreement as judge_agreement_cli
from lme.report import page as report_html
from lme.cli import run_benchmark
from lme.cli import scorecard
from lme.store.run_store import load_run
from lme.core.errors import UserError, run_main
from run_project import SAMPLE, make_project, register_answers, run_dir
from factories import scorecard_of

ITEMS = json.loads(SAMPLE.read_text())
LEFT_OUT = sorted(it["question_id"] for it in ITEMS)[:2]
"""Questions the test file has no line for: error rows of kind missing_hypothesis."""


def write_hypotheses(path: Path, *, wrong: int = 6, skip=LEFT_OUT, pad: str = "") -> dict[str, str]:
    """A file in upstream's format: the gold answer for most items, "I don't know." for ``wrong`` of them."""
    lines, hyps = [], {}
    for i, it in enumerate(ITEMS):
        if it["question_id"] in skip:
            continue
        text = "I don't know." if i < wrong else f"It is {it['answer']}.{pad}"
        hyps[it["question_id"]] = text
        lines.append(json.dumps({"question_id": it["question_id"], "hypothesis": text}))
    path.write_text("\n".join(lines) + "\n")
    return hyps


def run(project: Path, *args: str) -> int:
    return run_main(run_benchmark.main, ["--project", str(project), "--progress", "quiet", "--no-scorecard", *args])


def rows_of(project: Path, run_id: str) -> list[dict]:
    path = run_dir(project, run_id) / "item-results.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def judge_requests(server) -> list[dict]:
    return [q for q in server.requests if (q.get("body") or {}).get("max_tokens") == 10]


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


@pytest.fixture
def project(tmp_path):
    return make_project(tmp_path / "p", concurrency=4)


# --------------------------------------------------------------------------- the run


def test_a_hypotheses_run_judges_the_file_as_written_and_scores_it_like_any_run(project, fake_llm, tmp_path):
    register_answers(fake_llm)
    hyp_file = tmp_path / "hyps.jsonl"
    hyps = write_hypotheses(hyp_file, pad="  ")  # trailing spaces: judged as written, as upstream's evaluate_qa.py
    assert run(project, "--hypotheses", str(hyp_file), "--run-id", "h") == 0  # judge cost only: under the gate

    assert fake_llm.requests and len(judge_requests(fake_llm)) == len(fake_llm.requests) == len(hyps)  # no reader
    rows = {r["question_id"]: r for r in rows_of(project, "h")}
    assert len(rows) == len(ITEMS)
    for qid, text in hyps.items():
        assert rows[qid]["status"] == "judged" and rows[qid]["hypothesis"] == text
        assert rows[qid]["judgment"]["label"] is (text != "I don't know.")
    for qid in LEFT_OUT:
        assert rows[qid]["status"] == "error" and rows[qid]["error"]["kind"] == "missing_hypothesis"
        assert rows[qid]["error"]["message"] == f"no hypothesis for this question in {hyp_file}"
    meta = json.loads((run_dir(project, "h") / "run-meta.json").read_text())
    assert meta["status"] == "completed"  # a gap in the file is final: it does not fail or stop the run
    assert meta["target"]["name"] == "hypotheses" and meta["target"]["provider"] == "offline"
    assert meta["target"]["options"] == {"file": str(hyp_file),
                                         "sha256": hashlib.sha256(hyp_file.read_bytes()).hexdigest()}

    assert scorecard.main(["--run-id", "h", "--project", str(project), "--no-charts"]) == 0
    card = json.loads((run_dir(project, "h") / "metrics.json").read_text())
    correct = sum(1 for t in hyps.values() if t != "I don't know.")
    assert (card["n_total"], card["judged"], card["errors"]) == (len(ITEMS), len(hyps), len(LEFT_OUT))
    assert card["overall"]["correct"] == correct
    assert card["overall"]["accuracy_strict"] == pytest.approx(correct / len(ITEMS))
    assert card["overall"]["accuracy_judged"] == pytest.approx(correct / len(hyps))
    assert any(f"missing_hypothesis {len(LEFT_OUT)}" in n for n in card["comparability_notes"])
    assert card["target"]["hypotheses"]["file"] == str(hyp_file)
    md = (run_dir(project, "h") / "scorecard.md").read_text()
    assert "NOT COMPARABLE" in md and f"Hypotheses judged as written from `{hyp_file}`" in md
    assert (run_dir(project, "h") / "report.html").is_file()

    out = tmp_path / "export.jsonl"
    interop.export_hypotheses(run_dir(project, "h"), out)  # the upstream export gives the file's lines back
    exported = {json.loads(x)["question_id"]: json.loads(x)["hypothesis"] for x in out.read_text().splitlines()}
    assert exported == hyps


def test_a_judge_array_file_reads_like_json_lines(project, fake_llm, tmp_path):
    register_answers(fake_llm)
    lines, array = tmp_path / "hyps.jsonl", tmp_path / "hyps.json"
    hyps = write_hypotheses(lines)
    array.write_text(json.dumps([{"question_id": q, "hypothesis": h} for q, h in hyps.items()]))
    assert run(project, "--hypotheses", str(array), "--run-id", "arr") == 0
    assert {r["question_id"]: r["hypothesis"] for r in rows_of(project, "arr") if r["status"] == "judged"} == hyps


def test_the_dry_run_prices_the_judge_only_sized_with_the_real_hypotheses(project, tmp_path, capsys):
    short, long = tmp_path / "short.jsonl", tmp_path / "long.jsonl"
    write_hypotheses(short)
    write_hypotheses(long, pad=" and a much longer explanation" * 40)

    def estimate(path: Path) -> dict:
        assert run(project, "--hypotheses", str(path), "--dry-run", "--json") == 0
        return json.loads(capsys.readouterr().out)

    a, b = estimate(short), estimate(long)
    assert a["judge"]["calls"] == len(ITEMS) - len(LEFT_OUT)  # no judge call for a question without a line
    assert a["generation"]["calls"] == 0 and a["generation"]["usd_max"] == 0
    assert b["judge"]["tokens_in"] - a["judge"]["tokens_in"] > 200 * (len(ITEMS) - len(LEFT_OUT))
    assert "sized with the file's own hypothesis" in a["note"]
    assert not (project / ".longmemeval-benchmarks" / "runs").exists()


def test_the_cost_gate_counts_the_judge_only(tmp_path, capsys, fake_llm):  # the judge is probed before the gate
    project = make_project(tmp_path / "p", confirmCostUsd=0.0001)
    hyp_file = tmp_path / "hyps.jsonl"
    write_hypotheses(hyp_file)
    assert run(project, "--hypotheses", str(hyp_file)) == 5
    lines = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert ["target", "0", "calls"] in lines
    assert next(line for line in lines if line[:1] == ["judge"])[1:3] == [str(len(ITEMS) - len(LEFT_OUT)), "calls"]
    assert not (project / ".longmemeval-benchmarks" / "runs").exists()


# --------------------------------------------------------------------------- mistakes: one line, nothing written


def _nothing_written(project: Path) -> None:
    state = project / ".longmemeval-benchmarks"
    assert not (state / "runs").exists() and not (state / "cache").exists()


@pytest.mark.parametrize(("content", "named"), [
    ('{"question_id": "not_in_the_dataset", "hypothesis": "x"}\n', "1 question id(s) are not in the dataset"),
    ('{"question_id": "ID0", "hypothesis": "x"}\n{"question_id": "ID0", "hypothesis": "y"}\n',
     "question_id ID0 appears twice (records 1 and 2)"),
    ('{"question_id": "ID0", "hypothesis": null}\n', "record 1 (question_id ID0): the hypothesis is null"),
    ('{"question_id": "ID0"}\n', "record 1 (question_id ID0) is not a hypothesis line: no hypothesis"),
    ("not json at all\n", "neither a JSON array nor JSON lines"),
])
def test_a_bad_hypotheses_file_is_one_line_and_nothing_is_written(project, fake_llm, tmp_path, capsys, content,
                                                                 named):
    hyp_file = tmp_path / "bad.jsonl"
    hyp_file.write_text(content.replace("ID0", ITEMS[0]["question_id"]))
    assert run(project, "--hypotheses", str(hyp_file)) == 2
    err = one_error_line(capsys)
    assert named.replace("ID0", ITEMS[0]["question_id"]) in err and str(hyp_file) in err
    assert fake_llm.requests == []
    _nothing_written(project)


def test_a_missing_file_or_another_target_is_one_line(project, tmp_path, capsys):
    assert run(project, "--hypotheses", str(tmp_path / "nope.jsonl")) == 2
    assert "no such file" in one_error_line(capsys)
    write_hypotheses(tmp_path / "h.jsonl")
    assert run(project, "--hypotheses", str(tmp_path / "h.jsonl"), "--target", "rag") == 2
    assert "--hypotheses and --target rag both given" in one_error_line(capsys)
    _nothing_written(project)


def test_a_resume_against_a_changed_file_is_refused_with_one_line(project, fake_llm, tmp_path, capsys):
    register_answers(fake_llm)
    hyp_file = tmp_path / "hyps.jsonl"
    write_hypotheses(hyp_file)
    fake_llm.fail_next("400")  # a judge call fails: the run stops with items pending
    assert run(project, "--hypotheses", str(hyp_file), "--run-id", "c") == 1
    assert sum(r["status"] == "judged" for r in rows_of(project, "c")) < len(ITEMS) - len(LEFT_OUT)
    before = (run_dir(project, "c") / "item-results.jsonl").read_bytes()
    capsys.readouterr()
    write_hypotheses(hyp_file, wrong=0)  # the same path, other answers
    calls = len(fake_llm.requests)
    for extra in ([], ["--hypotheses", str(hyp_file)]):
        assert run(project, "--run-id", "c", *extra) == 2
        assert "changed since this run started" in one_error_line(capsys)
    assert len(fake_llm.requests) == calls
    assert (run_dir(project, "c") / "item-results.jsonl").read_bytes() == before
    other = tmp_path / "other.jsonl"
    write_hypotheses(other)
    assert run(project, "--run-id", "c", "--hypotheses", str(other)) == 2  # another file: the run's options differ
    assert "cannot resume run c" in one_error_line(capsys)
    write_hypotheses(hyp_file)  # restored byte for byte: the resume finishes the run
    assert run(project, "--run-id", "c") == 0
    assert sum(r["status"] == "judged" for r in rows_of(project, "c")) == len(ITEMS) - len(LEFT_OUT)


# --------------------------------------------------------------------------- the same file, another judge


def test_a_file_judged_by_two_judges_is_a_judge_comparison(project, fake_llm, tmp_path, capsys, upstream_prompt):
    register_answers(fake_llm)
    hyp_file = tmp_path / "hyps.jsonl"
    write_hypotheses(hyp_file)
    assert run(project, "--hypotheses", str(hyp_file), "--run-id", "official") == 0
    questions = {it["question_id"]: it["question"] for it in ITEMS}
    flipped = sorted(q for q in questions if q not in LEFT_OUT)[:3]
    default = fake_llm._default_judge
    fake_llm.judge_fn = lambda prompt: (("no" if default(prompt) == "yes" else "yes")
                                        if any(questions[q] in prompt for q in flipped) else default(prompt))
    assert run(project, "--hypotheses", str(hyp_file), "--run-id", "mini", "--judge-model", "openai:gpt-4o-mini") == 0
    a, b = run_dir(project, "official"), run_dir(project, "mini")

    with pytest.raises(UserError, match="the hypotheses are the same: pass --judge-comparison"):
        run_comparison.compare(a, b)
    result_record = run_comparison.compare(a, b, judge_comparison=True)
    result = result_record.to_dict()
    n = len(ITEMS) - len(LEFT_OUT)
    assert result["kind"] == "judge" and result["forced"] is False and result["mismatches"] == []
    agr = result["judge_agreement"]
    assert (agr["n"], agr["agree"]) == (n, n - 3) and agr["a_yes_b_no"] + agr["a_no_b_yes"] == 3
    assert run_comparison.compare(a, b, force=True).to_dict()["kind"] == "judge"  # --force says what it is, too
    assert "Judge comparison: the same hypotheses" in run_comparison.render_markdown(result_record)
    page, _, _ = report_html.build_compare(a, b, judge_comparison=True)
    assert "Judge comparison: the same hypotheses" in page and "FORCED" not in page

    assert judge_agreement_cli.main(["--run-id", "official", "--candidate-run", "mini", "--project", str(project),
                                 "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert (rec["n"], rec["agree"]) == (n, n - 3) and sorted(f["question_id"] for f in rec["flips"]) == flipped
    assert rec["candidate"] == "openai:gpt-4o-mini-2024-07-18" and rec["returned_models"] == ["gpt-4o-mini-2024-07-18"]
    assert len(fake_llm.requests) == 2 * n  # the agreement of two runs makes no call
    record = scorecard_of(load_run(b))  # the candidate's run now carries its measured agreement
    card = record.to_dict()
    assert card["judge_agreement"]["n"] == n and card["judge_agreement"]["flips"] == 3


def test_a_judge_comparison_of_runs_with_other_hypotheses_is_refused(project, fake_llm, tmp_path):
    register_answers(fake_llm)
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    write_hypotheses(one)
    write_hypotheses(two, wrong=0)
    assert run(project, "--hypotheses", str(one), "--run-id", "one") == 0
    assert run(project, "--hypotheses", str(two), "--run-id", "two") == 0
    differ = sum(1 for it in ITEMS[:6] if it["question_id"] not in LEFT_OUT)
    with pytest.raises(UserError, match=f"not a judge comparison: {differ} of 24 common questions have different"):
        run_comparison.compare(run_dir(project, "one"), run_dir(project, "two"), judge_comparison=True)
    assert run_comparison.compare(run_dir(project, "one"), run_dir(project, "two")).to_dict()["kind"] == "runs"


def test_the_target_option_form_records_the_file_and_its_sha256_too(project, fake_llm, tmp_path):
    register_answers(fake_llm)
    hyp_file = tmp_path / "hyps.jsonl"
    write_hypotheses(hyp_file)
    assert run(project, "--target", "hypotheses", "--target-option", f"file={hyp_file}", "--run-id", "opt") == 0
    meta = json.loads((run_dir(project, "opt") / "run-meta.json").read_text())
    assert meta["target"]["options"] == {"file": str(hyp_file),
                                         "sha256": hashlib.sha256(hyp_file.read_bytes()).hexdigest()}
