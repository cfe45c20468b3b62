"""The estimate of the official judge's accuracy behind a calibrated judge's labels (``score/official_estimate``,
``score/corrected_figures``): Rogan-Gladen, its bootstrap interval, the degenerate cases, a simulation of its
coverage, the calibration record's new strata, and the metrics.json block of a scored run."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from lme.core import schemas
from lme.core.facts import STATE_DIR
from lme.judge import agreement as judge_agreement
from lme.judge.agreement_figures import agreement_report
from lme.report import scorecard_md
from lme.score import official_estimate as est
from lme.score.scorecard_record import Scorecard
from lme.store.run_store import load_run
from factories import KU, MS, SSU, official_row, result_row, write_run, scorecard_of

REASONING = {"family": "reasoning", "max_completion_tokens": 2048}


# --------------------------------------------------------------------------- the estimator


def test_rogan_gladen_corrects_a_pass_rate_and_clips_to_the_unit_interval():
    # a judge with Se 0.9, Sp 0.8 passes 0.9 * 0.6 + 0.2 * 0.4 = 0.62 of a system the official judge passes at 0.6
    assert est.rogan_gladen(0.62, 0.9, 0.8) == pytest.approx(0.6)
    assert est.rogan_gladen(0.99, 0.9, 0.8) == 1.0 and est.rogan_gladen(0.05, 0.9, 0.8) == 0.0
    assert est.rogan_gladen(0.5, 0.5, 0.5) is None and est.rogan_gladen(0.5, 0.4, 0.3) is None


def test_rates_say_why_they_cannot_correct_and_an_older_record_gives_none():
    assert est.Rates(0, 0, 3, 7).why_unusable().startswith("the calibration holds no official yes")
    assert "no official no" in est.Rates(5, 1, 0, 0).why_unusable()
    assert "no better than chance" in est.Rates(5, 5, 5, 5).why_unusable()
    assert est.Rates(9, 1, 2, 8).why_unusable() is None
    assert est.Rates.from_confusion({"official_true_candidate_true": 3}) is None
    assert not est.Rates(18, 1, 2, 30).enough() and est.Rates(19, 1, 2, 30).enough()  # 19 official yes, 20


def _one(judged: int, passed: int, rates: est.Rates, *, official_correct: int = 0, n: int | None = None,
         **kw) -> est.Figure:
    n = judged if n is None else n
    scopes = {"all": est.Scope(n, n, official_correct, ("p",) if judged else ())}
    return est.estimate(scopes, {"p": est.Part(judged, passed, "r")}, {"r": rates}, **kw)["all"]


def test_a_perfect_judge_leaves_the_figure_as_it_is_and_official_labels_count_as_they_are():
    fig = _one(100, 60, est.Rates(5000, 0, 0, 5000), official_correct=300, n=500)
    assert fig.accuracy == pytest.approx(360 / 500)
    lo, hi = fig.ci95
    assert lo < 360 / 500 < hi and hi - lo < 0.05  # only the 100 judged items' binomial spread, over 500
    only_official = _one(0, 0, est.Rates(10, 0, 0, 10), official_correct=300, n=500)
    assert only_official.accuracy == pytest.approx(0.6) and only_official.ci95 == pytest.approx((0.6, 0.6))


def test_the_interval_is_reproducible_and_carries_the_calibrations_uncertainty():
    small, large = est.Rates(45, 5, 10, 40), est.Rates(4500, 500, 1000, 4000)
    assert _one(400, 250, small) == _one(400, 250, small)  # fixed seed: the same inputs, the same interval
    (lo_s, hi_s), (lo_l, hi_l) = _one(400, 250, small).ci95, _one(400, 250, large).ci95
    assert hi_s - lo_s > hi_l - lo_l
    assert _one(400, 250, small).accuracy == pytest.approx(_one(400, 250, large).accuracy)


def test_degenerate_calibrations_give_no_estimate_and_a_reason_never_a_crash():
    for rates in (est.Rates(0, 0, 10, 10), est.Rates(10, 10, 0, 0), est.Rates(10, 10, 10, 10), est.Rates(0, 0, 0, 0)):
        fig = _one(50, 20, rates)
        assert fig.accuracy is None and fig.ci95 is None and fig.reason
    near_chance = _one(200, 100, est.Rates(12, 8, 9, 11))  # Se + Sp = 1.15: many draws say nothing
    assert near_chance.ci95[0] < 0.1 and near_chance.ci95[1] > 0.9  # they widen the interval to what is possible


def test_the_task_averaged_estimate_is_the_mean_of_the_types_and_a_blocked_type_blocks_it():
    rates = {"good": est.Rates(900, 100, 100, 900), "chance": est.Rates(50, 50, 50, 50)}
    parts = {"a": est.Part(100, 70, "good"), "b": est.Part(100, 30, "good"), "c": est.Part(10, 5, "chance")}
    scopes = {"A": est.Scope(100, 100, 0, ("a",)), "B": est.Scope(100, 100, 0, ("b",)),
              "C": est.Scope(10, 10, 0, ("c",))}
    out = est.estimate(scopes, parts, rates, averaged={"AB": ["A", "B"], "ABC": ["A", "B", "C"]})
    assert out["AB"].accuracy == pytest.approx((out["A"].accuracy + out["B"].accuracy) / 2)
    assert out["AB"].ci95[0] < out["AB"].accuracy < out["AB"].ci95[1]
    assert out["C"].accuracy is None and out["ABC"].accuracy is None and "chance" in out["ABC"].reason


def _simulate(seed: int, calibration: int, *, items: int = 500, accuracy: float = 0.62, se: float = 0.93,
              sp: float = 0.86) -> tuple[float, est.Figure]:
    """A successor with known Se and Sp calibrated on ``calibration`` official verdicts, then judging ``items``
    answers of a system the official judge would pass at ``accuracy``: (the true official accuracy, the estimate)."""
    rng = random.Random(seed)
    cells = [0, 0, 0, 0]
    for _ in range(calibration):
        official = rng.random() < 0.55
        says = rng.random() < (se if official else 1 - sp)
        cells[(0 if official else 2) + (0 if says else 1)] += 1
    truth = [rng.random() < accuracy for _ in range(items)]
    passed = sum(rng.random() < (se if t else 1 - sp) for t in truth)
    return sum(truth) / items, _one(items, passed, est.Rates(*cells), draws=800, seed=seed)


def test_in_simulation_the_interval_covers_the_true_official_accuracy_and_narrows_as_the_calibration_grows():
    widths = {}
    for calibration in (100, 400, 1600):
        covered, width = 0, 0.0
        for seed in range(40):
            truth, fig = _simulate(seed, calibration)
            covered += fig.ci95[0] <= truth <= fig.ci95[1]
            width += fig.ci95[1] - fig.ci95[0]
        assert covered >= 36, (calibration, covered)  # >= 90% of 40 seeds
        widths[calibration] = width / 40
    assert widths[100] > widths[400] > widths[1600]


def test_the_point_estimate_adds_the_official_labels_and_each_parts_corrected_passes():
    parts = {"p": est.Part(100, 62, "r"), "q": est.Part(50, 31, "r")}
    scope = est.Scope(200, 180, 20, ("p", "q"))
    assert est.corrected_count(scope, parts, {"r": est.Rates(90, 10, 20, 80)}) == pytest.approx(20 + 60 + 30)
    assert est.corrected_count(scope, parts, {"r": est.Rates(5, 5, 5, 5)}) is None


# --------------------------------------------------------------------------- the calibration record


def _pairs(n: int, qtype: str, *, source: str, flips: int = 0, start: int = 0, abstention: bool = False) -> list[dict]:
    """``n`` pairs of one type and source: half official yes; the first ``flips`` disagree with the official."""
    out = []
    for i in range(n):
        official = i % 2 == 0
        qid = f"{qtype[:3]}{start + i}" + ("_abs" if abstention else "")
        out.append({"question_id": qid, "question_type": qtype, "prompt_sha256": f"p{qid}{source}",
                    "hypothesis_sha256": "h", "source": source, "official": official,
                    "candidate": (not official) if i < flips else official})
    return out


def test_the_calibration_record_keeps_confusion_per_type_on_abstention_and_per_source():
    report = agreement_report(_pairs(40, MS, source="run a", flips=4) + _pairs(10, SSU, source="run b")
                              + _pairs(6, KU, source="run b", abstention=True))
    assert report["per_type"][MS]["confusion"] == {"official_true_candidate_true": 18,
                                                   "official_true_candidate_false": 2,
                                                   "official_false_candidate_true": 2,
                                                   "official_false_candidate_false": 18}
    assert report["abstention"]["n"] == 6 and sum(report["abstention"]["confusion"].values()) == 6
    assert list(report["per_source"]) == ["run a", "run b"]
    assert (report["per_source"]["run a"]["n"], report["per_source"]["run b"]["agree"]) == (40, 16)


# --------------------------------------------------------------------------- a scored run


def _successor(qid: str, qtype: str, label: bool) -> dict:
    return result_row(qid, qtype, label, judgment={
        "provider": "openai", "model": "o3-mini-2025-01-31", "requested_model": "o3-mini", "official": False,
        "successor": True, "request_shape": REASONING, "endpoint_host": "api.openai.com"})


def _calibration(project: Path, *, sources: int = 2, per_type: bool = True) -> dict:
    """A calibration record of openai:o3-mini: multi-session with its own rates (60 items), the rest pooled."""
    pairs = []
    for s in range(sources):
        pairs += _pairs(60, MS, source=f"run s{s}", flips=6, start=100 * s)
        pairs += _pairs(10, SSU, source=f"run s{s}", flips=1, start=100 * s)
    report = agreement_report(pairs)
    if not per_type:  # a record measured before the strata were kept
        for entry in report["per_type"].values():
            entry.pop("confusion")
        report.pop("per_source")
        report.pop("abstention")
    record = {"candidate": "openai:o3-mini", "candidate_provider": "openai", "candidate_model": "o3-mini",
              "request_shape": REASONING, "measured_at": "2027-01-10T00:00:00Z", "source": "every official verdict",
              "returned_models": ["o3-mini-2025-01-31"], **report}
    judge_agreement.append_record(project, record)
    return record


def _mixed_run(project: Path, *extra: dict) -> Path:
    """40 items: 20 with official (archived) labels, 20 labelled by the successor (14 yes; 2 of them abstention
    items), two types."""
    items, rows = [], []
    for i in range(20):
        qid, qtype = f"o{i}", (MS if i % 2 else SSU)
        items.append((qid, qtype))
        rows.append(result_row(qid, qtype, i % 4 != 0, judgment={"source": "archive",
                                                                 "endpoint_host": "api.openai.com"}))
    for i in range(20):
        qid, qtype = f"s{i}" + ("_abs" if i in (3, 4) else ""), (MS if i % 2 else SSU)
        items.append((qid, qtype))
        rows.append(_successor(qid, qtype, i < 14))
    items += [(row["question_id"], row["question_type"]) for row in extra]
    return write_run(project / STATE_DIR / "runs" / "after", items, [*rows, *extra])


def test_a_mixed_run_estimates_from_the_successors_labels_only_beside_the_official_ones(tmp_path):
    project = tmp_path / "p"
    record = _calibration(project)
    card = scorecard_of(load_run(_mixed_run(project)))
    block = card.to_dict()["official_estimate"]
    schemas.validate("metrics", card.to_dict(), where="metrics.json")
    assert (block["official"], block["corrected"]) == (20, 20)
    (cal,) = block["calibration"]
    assert cal["judge"] == "openai:o3-mini" and cal["verdicts"] == 20
    assert cal["record"] == {k: record[k] for k in ("candidate", "request_shape", "verdict_set_sha256",
                                                   "measured_at", "n", "source")}
    assert (cal["sensitivity"], cal["specificity"]) == pytest.approx((62 / 70, 64 / 70))  # pooled
    assert cal["rates_by_type"] == [MS]  # 60 official yes and 60 no: its own rates (0.9, 0.9); 10 of SSU: pooled
    assert block["per_type"][MS]["rates"] == "type" and block["per_type"][SSU]["rates"] == "pooled"
    assert block["per_type"][MS]["corrected"] == 10
    # the official labels count as they are: 15 of 20 right; the successor's 14 of 20 corrected
    corrected = est.rogan_gladen(7 / 10, 62 / 70, 64 / 70) * 10 + est.rogan_gladen(7 / 10, 0.9, 0.9) * 10
    assert block["accuracy"] == pytest.approx((15 + corrected) / 40)
    lo, hi = block["ci95"]
    assert lo <= block["accuracy"] <= hi and hi < 1
    assert block["by_source"]["too_few"] == 0 and len(block["by_source"]["sources"]) == 2
    assert Scorecard.from_dict(json.loads(json.dumps(card.to_dict()))) == card


def test_without_a_calibration_or_with_every_verdict_official_there_is_no_estimate(tmp_path):
    project = tmp_path / "p"
    card = scorecard_of(load_run(_mixed_run(project)))
    block = card.official_estimate
    assert block.overall.accuracy is None and "uncalibrated" in block.overall.reason
    assert all(f.accuracy is None for f in block.per_type.values())
    assert "none, openai:o3-mini is uncalibrated" in scorecard_md.render_markdown(card)
    official = write_run(project / STATE_DIR / "runs" / "official", [("k1", SSU), ("k2", MS)],
                         [official_row("k1", SSU, True), official_row("k2", MS, False)])
    card = scorecard_of(load_run(official))
    assert card.official_estimate is None and card.to_dict()["official_estimate"] is None
    assert "estimated for the official judge" not in scorecard_md.render_markdown(card)


def test_a_record_measured_before_the_strata_corrects_with_pooled_rates_and_says_there_is_no_spread(tmp_path):
    project = tmp_path / "p"
    _calibration(project, per_type=False)
    block = scorecard_of(load_run(_mixed_run(project))).official_estimate
    assert block.overall.accuracy is not None
    assert {f.rates for f in block.per_type.values()} == {"pooled"} and block.abstention.accuracy is not None
    assert block.by_source is None and "per-source counts" in block.spread_note


def test_the_scorecard_shows_the_estimate_beside_the_raw_figure_as_an_estimate(tmp_path):
    project = tmp_path / "p"
    _calibration(project)
    card = scorecard_of(load_run(_mixed_run(project)))
    md = scorecard_md.render_markdown(card)
    row = next(line for line in md.splitlines() if line.startswith("| Overall accuracy (micro), estimated"))
    assert "an estimate, not official" in row and "95% CI" in row
    note = next(line for line in md.splitlines() if line.startswith("Estimate for the official judge"))
    assert "an estimate, not official" in note and "Under each hypothesis source's own rates" in note
    assert "It assumes the judge errs on this run's answers as it did on the calibration's" in note


def test_a_run_judged_by_a_calibrated_non_official_judge_is_estimated_too(tmp_path):
    project = tmp_path / "p"
    pairs = _pairs(60, MS, source="run official", flips=6) + _pairs(60, SSU, source="run official", flips=6)
    judge_agreement.append_record(project, {"candidate": "openai:gpt-4.1", "candidate_provider": "openai",
                                            "candidate_model": "gpt-4.1", "request_shape": None,
                                            "measured_at": "2027-01-10T00:00:00Z", "source": "run official vs "
                                            "candidate run gpt41", **agreement_report(pairs)})
    judged = {"provider": "openai", "model": "gpt-4.1-2025-04-14", "requested_model": "gpt-4.1", "official": False}
    items = [(f"g{i}", MS if i % 2 else SSU) for i in range(30)]
    run = write_run(project / STATE_DIR / "runs" / "gpt41", items,
                    [result_row(q, t, i % 3 != 0, judgment=judged) for i, (q, t) in enumerate(items)],
                    judge={"provider": "openai", "model": "gpt-4.1", "official": False})
    card = scorecard_of(load_run(run))
    block = card.official_estimate
    assert (block.official, block.corrected) == (0, 30) and block.calibration[0].judge == "openai:gpt-4.1"
    assert block.calibration[0].record["candidate"] == card.judge_agreement.candidate  # the record cited above
    assert block.overall.accuracy == pytest.approx((est.rogan_gladen(2 / 3, 0.9, 0.9) or 0) * 1.0, abs=0.02)


def test_verdicts_neither_official_nor_a_calibrated_judges_leave_no_estimate_and_say_why(tmp_path):
    project = tmp_path / "p"
    _calibration(project)
    run = _mixed_run(project, result_row("z1", MS, True, judgment={"endpoint_host": "proxy.example"}))
    block = scorecard_of(load_run(run)).official_estimate
    assert block.overall.accuracy is None and block.per_type[MS].accuracy is None
    assert "1 verdict(s) are neither official nor a calibrated judge's (1 endpoint)" in block.overall.reason
