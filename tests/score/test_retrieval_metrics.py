import math

import pytest

from lme.score.retrieval_metrics import evaluate, mean_metrics, ndcg_any, recall_all, recall_any, should_skip


def test_recall_any_counts_a_single_gold_hit_in_top_k():
    ranked = ["a", "b", "c", "d"]
    assert recall_any(ranked, ["c", "z"], 3) == 1.0
    assert recall_any(ranked, ["d"], 3) == 0.0


def test_recall_all_needs_every_gold_session_in_top_k():
    ranked = ["a", "b", "c", "d"]
    assert recall_all(ranked, ["a", "c"], 3) == 1.0
    assert recall_all(ranked, ["a", "d"], 3) == 0.0
    assert recall_all(ranked, ["a", "d"], 4) == 1.0


def test_a_session_listed_twice_takes_two_ranks_as_in_upstreams_ranking_of_corpus_positions():
    # a haystack that repeats filler session "x" (upstream #54): both copies are ranked, nothing is de-duplicated
    ranked = ["a", "x", "x", "g"]
    assert recall_any(ranked, ["g"], 3) == 0.0
    assert recall_all(ranked, ["a", "g"], 4) == 1.0
    assert ndcg_any(ranked, ["g"], 4) == pytest.approx(1.0 / math.log2(4))


def test_ndcg_is_one_for_gold_first_and_uses_log2_discount():
    assert ndcg_any(["g1", "g2", "x"], ["g1", "g2"], 3) == pytest.approx(1.0)
    # one gold at rank 2 of ideal rank 1: 1/log2(2)... upstream's dcg: rel1 + sum rel_i/log2(i)
    assert ndcg_any(["x", "g"], ["g"], 2) == pytest.approx(1.0 / math.log2(2))
    assert ndcg_any(["x", "y", "g"], ["g"], 3) == pytest.approx(1.0 / math.log2(3))
    assert ndcg_any(["x", "y", "g"], ["g"], 2) == 0.0


def test_ndcg_ideal_counts_gold_missing_from_the_ranking():
    # two gold sessions, only one retrieved at rank 1: ideal dcg = 1 + 1/log2(2) = 2
    assert ndcg_any(["g1", "x"], ["g1", "g2"], 2) == pytest.approx(0.5)


def test_evaluate_reports_every_metric_at_every_k():
    out = evaluate(["a", "b"], ["b"], ks=(1, 2))
    assert out == {
        "recall_any@1": 0.0, "recall_all@1": 0.0, "ndcg_any@1": 0.0,
        "recall_any@2": 1.0, "recall_all@2": 1.0, "ndcg_any@2": pytest.approx(1.0),
    }


def test_abstention_and_no_gold_items_are_skipped():
    assert should_skip("gpt4_1234_abs", ["answer_x"])
    assert should_skip("e47becba", [])
    assert not should_skip("e47becba", ["answer_x"])


def test_k_below_one_is_rejected():
    with pytest.raises(ValueError):
        recall_any(["a"], ["a"], 0)


def test_mean_metrics_averages_per_key():
    assert mean_metrics([{"r": 1.0}, {"r": 0.0}]) == {"r": 0.5}
    assert mean_metrics([]) == {}
