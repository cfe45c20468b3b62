"""metrics.score and friends against hand computations written out literally."""

from __future__ import annotations

import math

import pytest

from lme.score import metrics
from lme.core.records import QUESTION_TYPES
from lme.core.run_records import Manifest, item_set, label_of
from lme.store import run_rows

from factories import result_row, typed
from helpers_data import error_row, judged_row

SSU, MS, TR = "single-session-user", "multi-session", "temporal-reasoning"

# 7 items, 3 types: one error (b2_abs), one never run (c2).
TYPES = {"a1": SSU, "a2": SSU, "a3_abs": SSU, "b1": MS, "b2_abs": MS, "c1": TR, "c2": TR}
LABELS = {"a1": True, "a2": False, "a3_abs": True, "b1": True, "b2_abs": None, "c1": True}


def test_seven_item_run_matches_hand_computation():
    s = metrics.score(LABELS, TYPES)
    assert (s.n_total, s.judged, s.correct) == (7, 5, 4)
    assert s.coverage == pytest.approx(5 / 7)
    assert s.overall.accuracy_strict == pytest.approx(4 / 7)
    assert s.overall.accuracy_judged == pytest.approx(4 / 5)
    assert s.overall.errors_or_not_run == 2

    ssu, ms, tr = s.per_type[SSU], s.per_type[MS], s.per_type[TR]
    assert (ssu.n, ssu.judged, ssu.correct) == (3, 3, 2)
    assert ssu.accuracy_strict == pytest.approx(2 / 3) and ssu.accuracy_judged == pytest.approx(2 / 3)
    assert (ms.n, ms.judged, ms.correct) == (2, 1, 1)
    assert ms.accuracy_strict == pytest.approx(0.5) and ms.accuracy_judged == pytest.approx(1.0)
    assert (tr.n, tr.judged, tr.correct) == (2, 1, 1)
    assert tr.accuracy_strict == pytest.approx(0.5) and tr.accuracy_judged == pytest.approx(1.0)

    # macro over the three present types
    assert s.task_averaged.accuracy_strict == pytest.approx(5 / 9)  # (2/3 + 1/2 + 1/2) / 3
    assert s.task_averaged.accuracy_judged == pytest.approx(8 / 9)  # (2/3 + 1 + 1) / 3
    assert s.task_averaged.types_strict == (SSU, MS, TR)
    assert s.task_averaged.all_six_types is False


def test_abstention_is_decided_by_abs_id_and_item_also_counts_in_base_type():
    s = metrics.score(LABELS, TYPES)
    ab = s.abstention
    assert (ab.n, ab.judged, ab.correct) == (2, 1, 1)
    assert ab.accuracy_strict == pytest.approx(0.5)
    assert ab.accuracy_judged == pytest.approx(1.0)
    # b2_abs is multi-session AND abstention
    assert s.per_type[MS].n == 2
    # a type never decides abstention: an id without _abs is not abstention whatever its type
    only = metrics.score({"x": True}, {"x": "knowledge-update"})
    assert only.abstention.n == 0 and only.abstention.accuracy_strict is None


def test_macro_and_micro_differ_on_unbalanced_set():
    types = {f"k{i}": "knowledge-update" for i in range(10)} | {"p0": "single-session-preference"}
    labels = {f"k{i}": i < 9 for i in range(10)} | {"p0": False}
    s = metrics.score(labels, types)
    assert s.overall.accuracy_strict == pytest.approx(9 / 11)
    assert s.task_averaged.accuracy_strict == pytest.approx(0.45)  # (0.9 + 0.0) / 2


def test_wilson_interval_known_case():
    lo, hi = metrics.wilson_interval(8, 10)
    assert lo == pytest.approx(0.4902, abs=1e-4)
    assert hi == pytest.approx(0.9433, abs=1e-4)
    lo, hi = metrics.wilson_interval(0, 5)
    assert lo == 0.0 and hi == pytest.approx(0.4345, abs=1e-4)
    assert metrics.wilson_interval(0, 0) is None


def test_all_six_types_always_reported_even_when_empty():
    s = metrics.score({}, {"q": SSU})
    assert list(s.per_type) == list(QUESTION_TYPES)
    assert s.per_type["knowledge-update"].n == 0
    assert s.per_type["knowledge-update"].accuracy_strict is None
    assert s.overall.accuracy_strict == 0.0 and s.overall.accuracy_judged is None


def test_unattributed_missing_items_count_as_wrong_in_overall_strict_only():
    s = metrics.score({"a": True}, {"a": SSU}, unattributed=3)
    assert s.n_total == 4
    assert s.overall.accuracy_strict == pytest.approx(0.25)
    assert s.overall.accuracy_judged == pytest.approx(1.0)
    assert s.per_type[SSU].accuracy_strict == pytest.approx(1.0)


def test_label_for_id_outside_item_set_or_unknown_type_is_refused():
    with pytest.raises(ValueError, match="not in the item set"):
        metrics.score({"zz": True}, {"a": SSU})
    with pytest.raises(ValueError, match="unknown question_type"):
        metrics.score({}, {"a": "abstention"})


def test_a_rows_label_is_read_from_judged_rows_only():
    assert label_of(run_rows.row_of(judged_row("a", label=True))) is True
    assert label_of(run_rows.row_of(judged_row("b", label=False))) is False
    assert label_of(run_rows.row_of(error_row("c"))) is None
    assert label_of(None) is None


def test_item_set_follows_manifest_order_and_reports_unattributed():
    manifest = Manifest.of([("b", MS), ("a", SSU)])
    types, extra = item_set(manifest, {}, 5)
    assert list(types) == ["b", "a"] and extra == 3
    types, extra = item_set(manifest, {}, 1)
    assert list(types) == ["b"] and extra == 0
    rows = typed({"r": result_row("r", TR)})
    assert item_set(None, rows, None) == ({"r": TR}, 0)


def test_display_rounds_to_four_decimals_like_upstream():
    assert metrics.fmt(4 / 7) == "0.5714"
    assert metrics.fmt(None) == "—"


def test_display_rounding_matches_upstreams_numpy_rounding_on_ties():
    # upstream prints round(np.mean(labels), 4): numpy rounding, 0.0438 for 7/160 where Python's round gives 0.0437
    labels = [1] * 7 + [0] * 153
    assert metrics.fmt(sum(labels) / len(labels)) == "0.0438"
    assert metrics.display_round(7 / 160) == 0.0438
    assert metrics.fmt(1 / 3) == "0.3333" and metrics.fmt(1.0) == "1.0000"


def test_display_rounding_equals_numpys_on_every_fraction_a_scorecard_can_show():
    np = pytest.importorskip("numpy")
    values = [k / n for n in range(1, 301) for k in range(n + 1)]
    values += [k / 10 ** 5 + 5e-5 for k in range(-2000, 2000)] + [0.0, -0.0, 1e-300, 12345.67895]
    for decimals in (2, 3, 4):
        expected = np.round(np.array(values, dtype=np.float64), decimals).tolist()
        ours = [metrics.display_round(v, decimals) for v in values]
        mismatched = [(v, a, b) for v, a, b in zip(values, ours, expected)
                      if a != b or math.copysign(1, a) != math.copysign(1, b)]
        assert mismatched == [], f"{len(mismatched)} differ at {decimals} decimals, e.g. {mismatched[:3]}"
    assert metrics.display_round(float("nan")) != metrics.display_round(float("nan"))
    assert metrics.display_round(float("inf")) == float("inf")


@pytest.mark.parametrize("n", [10, 13, 25, 27, 28, 30, 34, 108])
def test_wilson_bounds_are_exact_for_perfect_and_zero_scores(n):
    assert metrics.wilson_interval(n, n)[1] == 1.0
    assert metrics.wilson_interval(0, n)[0] == 0.0
