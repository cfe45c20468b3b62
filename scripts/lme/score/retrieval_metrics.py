"""Session retrieval metrics with upstream LongMemEval semantics (recall_any@k, recall_all@k, ndcg_any@k).

Usage (library): ``evaluate(ranked_real_ids, question.gold_session_ids())`` ->
``{"recall_any@5": 1.0, "recall_all@5": 0.0, "ndcg_any@5": 0.63, ...}``.

What this computes: SESSION-level metrics of a ranking of sessions, as upstream's ``evaluate_retrieval`` over a
session index (``src/retrieval/eval_utils.py``; our own code):
- ``ranked`` is a best-first list of session ids, scored as given: an id listed twice (13 ``_s`` haystacks
  repeat a filler session, upstream #54, and a ranking of haystack positions lists it twice) takes two ranks, as
  upstream's ranking of corpus positions does. Nothing is de-duplicated.
- recall_any@k: 1.0 if any gold session is among the first k; recall_all@k: 1.0 if every gold session is.
- ndcg_any@k: binary relevance, DCG = rel_1 + sum_{i>=2} rel_i / log2(i); the ideal ranking puts all gold
  sessions first (upstream counts the corpus positions holding a gold session: ``len(gold)`` when ``gold`` lists
  each haystack position, as ``Question.gold_session_ids`` does).
- Items are skipped (``should_skip``) when they are abstention items (``_abs`` in the id) or have no gold session.

Not upstream's turn-to-session figures: for a turn index upstream (``evaluate_retrieval_turn2session``) counts a hit
only on a ``has_answer`` turn of an evidence session, widens k over turns until k distinct sessions are covered,
and computes NDCG over the turn ranking. A target that indexes turns (``rag`` with ``granularity=turn``) hands us
a SESSION ranking instead (a turn hit ranks its session, any turn of it; one entry per haystack session, as the
built-in targets return), and we score that ranking as above; the scorecard labels such figures "session-level"
with the granularity the target used. A ranking that repeats a session per turn hit is scored as given too.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

from lme.core.facts import RETRIEVAL_KS, is_abstention

DEFAULT_KS: tuple[int, ...] = RETRIEVAL_KS


def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")


def recall_any(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    _check_k(k)
    top = set(list(ranked)[:k])
    return float(any(g in top for g in set(gold)))


def recall_all(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """Vacuously 1.0 for no gold."""
    _check_k(k)
    top = set(list(ranked)[:k])
    return float(all(g in top for g in set(gold)))


def _dcg(relevances: Sequence[int]) -> float:
    if not relevances:
        return 0.0
    return relevances[0] + sum(rel / math.log2(i + 1) for i, rel in enumerate(relevances[1:], start=1))


def ndcg_any(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """Binary-relevance NDCG at k (0.0 when there is no gold)."""
    _check_k(k)
    gold_list = list(gold)
    gold_set = set(gold_list)
    ideal = _dcg([1] * min(len(gold_list), k))
    if ideal == 0:
        return 0.0
    actual = _dcg([1 if doc in gold_set else 0 for doc in list(ranked)[:k]])
    return actual / ideal


def evaluate(ranked: Sequence[str], gold: Iterable[str], ks: Sequence[int] = DEFAULT_KS) -> dict[str, float]:
    """All three metrics at every k, keyed ``"recall_any@5"`` etc."""
    gold_list = list(gold)
    out: dict[str, float] = {}
    for k in ks:
        out[f"recall_any@{k}"] = recall_any(ranked, gold_list, k)
        out[f"recall_all@{k}"] = recall_all(ranked, gold_list, k)
        out[f"ndcg_any@{k}"] = ndcg_any(ranked, gold_list, k)
    return out


def should_skip(question_id: str, gold: Sequence[str]) -> bool:
    """Upstream leaves abstention items and items without any gold session out of retrieval metrics."""
    return is_abstention(question_id) or len(gold) == 0


def mean_metrics(rows: Iterable[dict[str, float]]) -> dict[str, float]:
    totals: dict[str, float] = {}
    n = 0
    for row in rows:
        n += 1
        for key, value in row.items():
            totals[key] = totals.get(key, 0.0) + value
    return {key: value / n for key, value in totals.items()} if n else {}
