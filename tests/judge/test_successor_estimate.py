"""The day after, a successor-judged figure placed on the official scale: calibrate a candidate on two systems'
official verdicts (``judge_agreement.py --all``), the official judge answers 404, a new system is run with
``--successor``, and metrics.json, scorecard.md and report.html carry the estimate of the official judge's accuracy
beside the raw figure, with its interval, its calibration, its spread across the two systems, never called
official. Against the fake server (tests/fake_llm_server.py), real SDKs."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

from lme.cli import judge_agreement as judge_agreement_cli
from lme.cli import judge_shim
from lme.cli import run_benchmark
from lme.core.errors import run_main
from lme.core.facts import STATE_DIR
from helpers_data import make_item, write_dataset
from run_project import expire_recent_probes, make_project, run_dir

OFFICIAL = "gpt-4o-2024-08-06"
TYPES = {"multi-session": 70, "single-session-user": 50, "temporal-reasoning": 40}

pytestmark = pytest.mark.usefixtures("fresh_probes")


def items() -> list[dict]:
    out, n = [], 0
    for qtype, count in TYPES.items():
        for k in range(count):
            item = make_item(f"x{n:03d}" + ("_abs" if k < 3 else ""), qtype, answer=f"tint{n}")
            item["question"] = f"Which tint did I choose, number {n}?"
            out.append(item)
            n += 1
    return out


def write_hyps(path: Path, data: list[dict], right, *, new_from: int | None = None) -> list[bool]:
    """A hypotheses file answering item i with its gold when ``right(i)``, in new words from item ``new_from`` on
    (answers no official judge has seen); which items are right."""
    marks = [bool(right(i)) for i in range(len(data))]
    lines = []
    for i, (it, ok) in enumerate(zip(data, marks)):
        new = new_from is not None and i >= new_from
        text = (f"On reflection, {it['answer']}." if new else f"It is {it['answer']}.") if ok else (
            "I cannot recall that." if new else "I don't know.")
        lines.append(json.dumps({"question_id": it["question_id"], "hypothesis": text}) + "\n")
    path.write_text("".join(lines))
    return marks


def run(project: Path, *args: str) -> int:
    return run_main(run_benchmark.main, ["--project", str(project), "--progress", "quiet", "--yes", *args])


def test_a_successor_judged_run_reports_an_estimate_of_the_official_accuracy_never_called_official(
        fake_llm, tmp_path, capsys, upstream_prompt):
    data = items()
    project = make_project(tmp_path / "p", dataset=write_dataset(tmp_path / "longmemeval_s_synthetic.json", data),
                           concurrency=16)
    hyps = tmp_path / "hyps.jsonl"
    write_hyps(hyps, data, lambda i: i % 2 == 0)  # system A
    assert run(project, "--hypotheses", str(hyps), "--run-id", "system-a", "--no-scorecard") == 0
    write_hyps(hyps, data, lambda i: i % 3 != 0)  # system B
    assert run(project, "--hypotheses", str(hyps), "--run-id", "system-b", "--no-scorecard") == 0
    archive = tmp_path / "verdicts.jsonl"
    assert judge_shim.main(["export-verdicts", "--project", str(project), "--out", str(archive)]) == 0
    assert judge_shim.main(["import-verdicts", str(archive), "--project", str(project)]) == 0
    capsys.readouterr()

    # the candidate disagrees with the official judge on every seventh question
    flipped = {it["question"] for i, it in enumerate(data) if i % 7 == 0}
    fake_llm.judge_fn = lambda prompt: ("no" if fake_llm._default_judge(prompt) == "yes" else "yes") \
        if any(q in prompt for q in flipped) else fake_llm._default_judge(prompt)
    assert judge_agreement_cli.main(["--all", "--candidate", "openai:o3-mini", "--project", str(project),
                                     "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert list(record["per_source"]) == ["run system-a", "run system-b"]

    fake_llm.gone_models[OFFICIAL] = 404  # the day after
    expire_recent_probes(project)
    fake_llm.reset()
    right = write_hyps(hyps, data, lambda i: i % 2 == 0 if i < 100 else i % 5 != 0, new_from=100)  # system C
    assert run(project, "--hypotheses", str(hyps), "--run-id", "after", "--successor", "openai:o3-mini") == 0
    work = run_dir(project, "after")
    metrics = json.loads((work / "metrics.json").read_text())
    assert (metrics["verdicts"]["official_archived"], metrics["verdicts"]["successor"]) == (100, 60)

    est = metrics["official_estimate"]
    assert (est["official"], est["corrected"]) == (100, 60)
    (calibration,) = est["calibration"]
    assert calibration["judge"] == "openai:o3-mini" and calibration["verdicts"] == 60
    assert calibration["record"]["verdict_set_sha256"] == record["verdict_set_sha256"]
    assert calibration["record"]["measured_at"] == record["measured_at"]
    assert calibration["record"]["request_shape"]["family"] == "reasoning"
    lo, hi = est["ci95"]
    truth = sum(right) / len(right)  # what the official judge would have said: the fake's rule, on every item
    assert lo <= est["accuracy"] <= hi and lo <= truth <= hi
    assert metrics["overall"]["accuracy_strict"] != pytest.approx(est["accuracy"])  # corrected, not the raw figure
    assert set(est["per_type"]) == set(TYPES) and all(f["ci95"] for f in est["per_type"].values())
    assert {t: f["corrected"] for t, f in est["per_type"].items()} == {"multi-session": 0, "single-session-user": 20,
                                                                   "temporal-reasoning": 40}
    assert {est["per_type"][t]["rates"] for t in ("single-session-user", "temporal-reasoning")} <= {"type", "pooled"}
    untouched = est["per_type"]["multi-session"]  # every label official: the estimate is the figure itself
    assert untouched["accuracy"] == metrics["per_type"]["multi-session"]["accuracy_strict"] and "rates" not in untouched
    assert [s["source"] for s in est["by_source"]["sources"]] == ["run system-a", "run system-b"]
    assert est["by_source"]["min"] <= est["by_source"]["max"]
    assert est["task_averaged"]["accuracy"] is not None and est["abstention"]["accuracy"] is not None

    shown = f"{est['accuracy']:.4f} (95% CI [{lo:.3f}, {hi:.3f}])"
    scorecard = (work / "scorecard.md").read_text()
    report = html.unescape((work / "report.html").read_text())
    for text in (scorecard, report):
        assert shown in text
        assert "Overall accuracy (micro), estimated for the official judge (an estimate, not official)" in text
        assert "Under each hypothesis source's own rates" in text and "It assumes the judge errs" in text
    assert all("not official" in line for line in scorecard.splitlines() if "estimate" in line.lower())
    assert 'id="official-estimate"' in report
    assert (project / STATE_DIR / "judge-agreement.jsonl").is_file()
