"""A scorecard is a function of its run folder and the inputs passed in (``scoring_inputs``): the loop's kept fixes,
the flaky prompts of the judge-stability registry, the judge-agreement measurements. A run folder copied outside any
project scores to the same figures given the same inputs, and scoring never looks for a project above the folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from lme.cli import report_html, scorecard
from lme.core.facts import DECISIONS_FILE, OFFICIAL_JUDGE_MODEL, STABILITY_REGISTRY, STATE_DIR
from lme.judge import agreement as judge_agreement
from lme.score import scoring, scoring_inputs
from lme.store.run_store import load_run
from factories import MS, SSU, result_row, write_run, scorecard_of

REASONING = {"family": "reasoning", "max_completion_tokens": 2048}
SUCCESSOR = {"provider": "openai", "model": "o3-mini-2025-01-31", "requested_model": "o3-mini", "official": False,
             "successor": True, "request_shape": REASONING, "endpoint_host": "api.openai.com"}


def _project_with_a_loop_run(project: Path) -> Path:
    """A run ``loop`` in ``project`` whose scorecard uses all three outside inputs: a kept fix re-tested a1, the
    registry marks a2's prompt flaky, and the successor judge that labelled s1 has a measured agreement."""
    rows = [result_row("a1", SSU, True, judgment={"prompt_sha256": "sha-a1", "endpoint_host": "api.openai.com"}),
            result_row("a2", SSU, False, judgment={"prompt_sha256": "sha-a2", "endpoint_host": "api.openai.com"}),
            result_row("s1", MS, True, judgment=SUCCESSOR)]
    run_dir = write_run(project / STATE_DIR / "runs" / "loop", [(r["question_id"], r["question_type"]) for r in rows],
                        rows)
    _write_decision(project, {"run_id": "loop", "round": 1, "decision": "keep", "retest_ids": ["a1"]})
    (project / STATE_DIR / STABILITY_REGISTRY).write_text(json.dumps({
        "question_id": "a2", "judge_model": OFFICIAL_JUDGE_MODEL, "prompt_sha256": "sha-a2", "yes": 1, "no": 1,
        "n": 2, "flaky": True}) + "\n")
    judge_agreement.append_record(project, {
        "candidate": "openai:o3-mini", "candidate_provider": "openai", "candidate_model": "o3-mini",
        "returned_models": ["o3-mini-2025-01-31"], "request_shape": REASONING, "n": 40, "agreement": 0.95,
        "kappa": 0.9, "measured_at": "2027-01-10T00:00:00Z", "source": "every official verdict"})
    return run_dir


def _write_decision(project: Path, record: dict) -> None:
    path = project / DECISIONS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record) + "\n")


def _outside_any_project(run_dir: Path, root: Path) -> Path:
    """``run_dir`` copied three folders below ``root``, where a decoy project holds other decisions (what the
    directory three levels above the run would have offered)."""
    _write_decision(root, {"run_id": "loop", "round": 9, "decision": "keep", "retest_ids": ["a2"]})
    return Path(shutil.copytree(run_dir, root / "a" / "b" / "loop"))


def test_a_run_folder_copied_outside_any_project_scores_the_same_given_the_same_inputs(tmp_path):
    project = tmp_path / "proj"
    run_dir = _project_with_a_loop_run(project)
    in_place = scorecard_of(load_run(run_dir)).to_dict()
    assert in_place["loop_rows"] == {"kept_rounds": [1], "retested": 1, "pre_fix": 2, "rows": 3}
    assert in_place["judge_stability"]["flaky_in_registry"] == 1
    assert in_place["verdicts"]["successors"][0]["calibration"]["agreement"] == 0.95
    assert in_place["judge_agreement"] is None  # the run's judge is the official one

    copy = _outside_any_project(run_dir, tmp_path / "elsewhere")
    inputs = scoring_inputs.read(project, "loop")
    assert scoring.build_scorecard(load_run(copy), inputs=inputs).to_dict() == in_place

    alone = scorecard_of(load_run(copy)).to_dict()  # no inputs: nothing from the decoy or the project
    assert alone["loop_rows"] is None
    assert alone["judge_stability"]["flaky_in_registry"] == 0
    assert alone["verdicts"]["successors"][0]["calibration"] is None
    assert scoring.build_scorecard(load_run(copy), inputs=scoring_inputs.ScoringInputs()).to_dict() == alone


def test_the_scorecard_command_scores_a_copied_run_with_the_project_it_is_given(tmp_path):
    project = tmp_path / "proj"
    run_dir = _project_with_a_loop_run(project)
    copy = _outside_any_project(run_dir, tmp_path / "elsewhere")
    assert scorecard.main(["--run-id", "loop", "--project", str(project), "--no-charts", "--no-html"]) == 0
    assert scorecard.main([str(copy), "3", "_s", "loop", "--project", str(project), "--no-charts", "--no-html"]) == 0

    def figures(folder: Path) -> dict:
        card = json.loads((folder / "metrics.json").read_text())
        card.pop("fingerprint", None)  # a stamp of the files read, which sit elsewhere
        return card

    assert figures(copy) == figures(run_dir)
    assert "MIXED ROWS: 2 of 3 rows predate the kept fix(es) of v1" in (copy / "scorecard.md").read_text()
    assert report_html.main([str(copy), "--project", str(project)]) == 0  # the page's command passes it too
    assert (copy / "report.html").is_file()


def test_a_later_decision_on_a_round_replaces_the_earlier_one():
    decisions = [{"run_id": "r", "round": 1, "decision": "keep", "retest_ids": ["x"]},
                 {"run_id": "other", "round": 2, "decision": "keep", "retest_ids": ["y"]},
                 {"run_id": "r", "round": 3, "decision": "keep", "retest_ids": ["z"]},
                 {"run_id": "r", "round": 1, "decision": "revert"}]
    assert scoring_inputs.loop_rows.kept_fixes(decisions, "r") == {3: frozenset({"z"})}
