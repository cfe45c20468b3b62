"""Retrieval for memory-ref and ``rag``: rank an item's sessions for the question, without a model by default.

Sources (each gives every session a score, then a ranking; all map back to a session index):

- ``sessions``: BM25 over a session's user turns, plus the user facts the writer extracted from it (key
  expansion: the LongMemEval paper reports +4-5 points recall with fact-expanded keys);
- ``turns``: the session's best single user turn (the evidence is often one sentence of a long session);
- ``assistant``: BM25 over the session's assistant turns (what the assistant said: single-session-assistant
  questions; upstream indexes user turns only);
- ``facts``: the writer's extracted facts, one document each, pointing at their session (writer on);
- ``embed``: cosine similarity of OpenAI-compatible embeddings of the question and the session (embed role on).

Lexical sources are fused by score (each list divided by its best score, then weighted and summed) or by
weighted reciprocal rank (``fusion="rrf"``). The query is rewritten from the question's own words (``query``),
then expanded once with the top sessions' most distinctive words (pseudo-relevance feedback, RM-style). Sessions
dated inside a window the question names ("two weeks ago") get a bonus (``time_prior``). An embedding ranking
joins the lexical one by weighted reciprocal rank. Sessions whose turns are identical to a better-ranked one
(the ``_s`` copy repeats a filler session in 13 histories) are dropped, so no session is returned twice.

``PRESETS`` names the configurations the benchmark compares (``tests/benchmarks/bench_retrieval_configs.py``);
``best`` is the default of both targets.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Hashable, Mapping, Sequence

from lme.target_kit import BM25Index

from . import query as query_mod
from .facts import Fact
from .time_prior import window_bonus

RRF_K = 60
EMBED_CHARS = 8000
"""Characters of a session document sent to the embedding model (embedding inputs are capped by the API)."""


@dataclass(frozen=True)
class RetrieverConfig:
    name: str = "best"
    rewrite: bool = True
    """Rewrite the query (``query.rewrite``); off = the question's words as they are."""
    session_weight: float = 1.0
    turn_weight: float = 0.0
    """The best single user turn's list. Measured 0.0-0.3 alike on the development half once feedback and the
    assistant list are in (0.3 was the weight of ``fused-v1``), so ``best`` leaves it out."""
    assistant_weight: float = 0.3
    fact_weight: float = 1.0
    fusion: str = "score"
    """``score`` (max-normalised weighted sum) or ``rrf`` (weighted reciprocal rank, k=60)."""
    feedback_docs: int = 2
    """Pseudo-relevance feedback: expand the query from this many top sessions (0 = off)."""
    feedback_terms: int = 10
    feedback_weight: float = 0.3
    time_weight: float = 0.6
    """Bonus for sessions inside a window the question names, in units of one source's best score (score
    fusion) or of a first rank (rrf)."""
    cue_weight: float = 0.6
    """Bonus for sessions whose user turns state what the question asks for (``Query.wants``: an age)."""
    k1: float = 1.5
    b: float = 0.5
    dedup: bool = True
    embed_weight: float = 1.0
    """Weight of the embedding ranking against the lexical ranking in their reciprocal-rank fusion."""

    def to_debug(self) -> dict[str, Any]:
        return dict(vars(self))


BEST = RetrieverConfig()
PRESETS: dict[str, RetrieverConfig] = {
    "plain": RetrieverConfig(name="plain", rewrite=False, turn_weight=0.0, assistant_weight=0.0, feedback_docs=0,
                             time_weight=0.0, cue_weight=0.0, b=0.75),
    "fused-v1": RetrieverConfig(name="fused-v1", rewrite=False, turn_weight=0.3, assistant_weight=0.0,
                                fusion="rrf", feedback_docs=0, time_weight=0.0, cue_weight=0.0, b=0.75),
    "best": BEST,
}
"""``plain``: session BM25 over user turns, query = question (the floor). ``fused-v1``: memory-ref's retriever
before issue 19 (sessions + turns at weight 0.3, RRF). ``best``: everything above, tuned on the development half.
All three return a repeated session once (no target emits an id twice)."""


def config_named(name: str, **overrides: Any) -> RetrieverConfig:
    """A preset by name, with field overrides; ValueError names the choices."""
    if name not in PRESETS:
        raise ValueError(f"unknown retriever {name!r}; choose one of {sorted(PRESETS)}")
    return replace(PRESETS[name], **overrides) if overrides else PRESETS[name]


def rrf(rankings: Sequence[Sequence[Hashable]], k: int = RRF_K, weights: Sequence[float] | None = None
        ) -> list[Hashable]:
    """(Weighted) reciprocal-rank fusion; ties keep the order of first appearance across the rankings."""
    scores = rrf_scores(rankings, k, weights)
    first_seen: dict[Hashable, int] = {}
    for ranking in rankings:
        for doc_id in ranking:
            first_seen.setdefault(doc_id, len(first_seen))
    return sorted(scores, key=lambda d: (-scores[d], first_seen[d]))


def rrf_scores(rankings: Sequence[Sequence[Hashable]], k: int = RRF_K, weights: Sequence[float] | None = None
               ) -> dict[Hashable, float]:
    scores: dict[Hashable, float] = {}
    for n, ranking in enumerate(rankings):
        weight = 1.0 if weights is None else weights[n]
        for rank, doc_id in enumerate(ranking, start=1):
            scores[doc_id] = scores.get(doc_id, 0.0) + weight / (k + rank)
    return scores


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def order(scores: Sequence[float]) -> list[int]:
    """Indices best first; ties keep index order."""
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))


def matched(scores: Sequence[float]) -> list[int]:
    """Indices with a positive score, best first: what a ranking contributes to reciprocal-rank fusion (a
    session no query word reached has no rank to give, whatever its position among the ties)."""
    return [i for i in order(scores) if scores[i] > 0]


@dataclass
class RetrievalResult:
    ranked: list[int]
    """Session indices, best first; every distinct session appears once (repeated sessions dropped)."""
    scores: list[float] = field(default_factory=list)
    """The final score of each entry of ``ranked`` (same order)."""
    lists: dict[str, list[int]] = field(default_factory=dict)
    """The per-source session rankings that were fused (``sessions``, ``turns``, ``assistant``, ``facts``,
    ``embed``)."""
    query: query_mod.Query | None = None
    duplicates: list[int] = field(default_factory=list)
    """Sessions left out because an identical session ranks higher."""
    feedback: list[str] = field(default_factory=list)
    """The words pseudo-relevance feedback added to the query."""
    config: str = ""

    def debug(self, alias: Callable[[int], str], top: int = 10) -> dict[str, Any]:
        out: dict[str, Any] = {
            "retriever": self.config, "sources": sorted(self.lists), "top": [alias(i) for i in self.ranked[:top]],
            "per_source_top": {k: [alias(i) for i in v[:top]] for k, v in sorted(self.lists.items())},
            "feedback_terms": self.feedback, "duplicates_dropped": [alias(i) for i in self.duplicates]}
        if self.query is not None:
            out["query"] = self.query.to_debug()
        return out


def session_user_text(turns: Sequence[Any]) -> list[str]:
    return [str(t.content) for t in turns if t.role == "user"]


def _normalised(scores: Sequence[float]) -> list[float]:
    top = max(scores, default=0.0)
    return [s / top for s in scores] if top > 0 else [0.0] * len(scores)


def _best_per_session(doc_scores: Sequence[float], owners: Sequence[int], n: int) -> list[float]:
    best = [0.0] * n
    for score, owner in zip(doc_scores, owners):
        if score > best[owner]:
            best[owner] = score
    return best


class _Sources:
    """The BM25 indexes of one item's sessions under one configuration."""

    def __init__(self, sessions: Sequence[Any], facts_by_session: Mapping[int, list[str]],
                 fact_docs: Sequence[tuple[int, str]], config: RetrieverConfig, granularity: str) -> None:
        self.n = len(sessions)
        self.config = config
        k1, b = config.k1, config.b
        self.indexes: dict[str, tuple[BM25Index, list[int] | None, float]] = {}
        self.session_docs = ["\n".join(session_user_text(s.turns) + facts_by_session.get(i, []))
                             for i, s in enumerate(sessions)]
        if granularity == "session" and config.session_weight:
            self.indexes["sessions"] = (BM25Index(self.session_docs, k1=k1, b=b), None, config.session_weight)
        if granularity == "turn" or config.turn_weight:
            turns = [(i, str(t.content)) for i, s in enumerate(sessions) for t in s.turns if t.role == "user"]
            weight = config.turn_weight if granularity == "session" else 1.0
            self.indexes["turns"] = (BM25Index([t for _, t in turns], k1=k1, b=b), [i for i, _ in turns], weight)
        if granularity == "session" and config.assistant_weight:
            docs = ["\n".join(str(t.content) for t in s.turns if t.role == "assistant") for s in sessions]
            self.indexes["assistant"] = (BM25Index(docs, k1=k1, b=b), None, config.assistant_weight)
        if fact_docs and config.fact_weight:
            self.indexes["facts"] = (BM25Index([t for _, t in fact_docs], k1=k1, b=b), [i for i, _ in fact_docs],
                                     config.fact_weight)
        self.feedback_index = self.indexes.get("sessions", self.indexes.get("turns"))

    def score(self, terms: Mapping[str, float]) -> tuple[list[float], dict[str, list[int]]]:
        """Fused lexical scores per session, and each source's ranking."""
        per_source: dict[str, list[float]] = {}
        for name, (index, owners, _) in self.indexes.items():
            raw = index.scores(terms)
            per_source[name] = raw if owners is None else _best_per_session(raw, owners, self.n)
        lists = {name: order(s) for name, s in per_source.items()}
        fused = [0.0] * self.n
        if self.config.fusion == "rrf":
            weights = [self.indexes[name][2] for name in lists]
            for i, value in rrf_scores([matched(s) for s in per_source.values()], weights=weights).items():
                fused[i] = value
        else:
            for name, scores in per_source.items():
                weight = self.indexes[name][2]
                fused = [f + weight * s for f, s in zip(fused, _normalised(scores))]
        return fused, lists

    def feedback_terms(self, fused: Sequence[float]) -> list[str]:
        """The most distinctive words (tf/length x idf) of the top sessions' documents."""
        if self.feedback_index is None or not self.config.feedback_docs:
            return []
        index, owners, _ = self.feedback_index
        top = [i for i in order(fused)[: self.config.feedback_docs] if fused[i] > 0]
        weights: dict[str, float] = {}
        docs = [d for d, owner in enumerate(owners) if owner in top] if owners is not None else top
        for d in docs:
            tokens = index.docs[d]
            if not tokens:
                continue
            counts: dict[str, int] = {}
            for token in tokens:
                counts[token] = counts.get(token, 0) + 1
            for token, tf in counts.items():
                weights[token] = weights.get(token, 0.0) + tf / len(tokens) * index.idf(token)
        return [t for t, _ in sorted(weights.items(), key=lambda p: (-p[1], p[0]))[: self.config.feedback_terms]]


def dedup_sessions(ranked: Sequence[int], sessions: Sequence[Any]) -> tuple[list[int], list[int]]:
    """``(kept, dropped)``: a session whose turns equal a better-ranked session's is dropped."""
    seen: set[str] = set()
    kept: list[int] = []
    dropped: list[int] = []
    for i in ranked:
        key = text_key(*[f"{t.role}\0{t.content}" for t in sessions[i].turns])
        if key in seen:
            dropped.append(i)
            continue
        seen.add(key)
        kept.append(i)
    return kept, dropped


def retrieve(
    query: str,
    sessions: Sequence[Any],
    facts: Sequence[Fact] = (),
    *,
    question_date: str | None = None,
    config: RetrieverConfig = BEST,
    granularity: str = "session",
    session_of_alias: Callable[[str], int | None] | None = None,
    embed: Callable[[list[str]], list[list[float]]] | None = None,
) -> RetrievalResult:
    """Rank ``sessions`` (PublicSession-like: ``session_id``, ``date``, ``turns``) for the question ``query``.

    ``facts`` carry their session alias; ``session_of_alias`` maps it to an index (default: by alias).
    ``embed`` (texts -> vectors, query first) adds a dense ranking of the session documents.
    ``question_date`` enables the time windows (no date, no time-aware ranking).
    """
    n = len(sessions)
    index_of = session_of_alias or {s.session_id: i for i, s in enumerate(sessions)}.get
    user_facts: dict[int, list[str]] = {}
    fact_docs: list[tuple[int, str]] = []
    for fact in facts:
        i = index_of(fact.session_id)
        if i is None:
            continue
        fact_docs.append((i, fact.text))
        if fact.speaker == "user":
            user_facts.setdefault(i, []).append(fact.text)
    q = query_mod.rewrite(query, question_date) if config.rewrite else query_mod.plain(query)
    sources = _Sources(sessions, user_facts, fact_docs, config, granularity)
    fused, lists = sources.score(q.terms)
    feedback = sources.feedback_terms(fused) if any(fused) else []
    if feedback:
        expanded = dict(q.terms)
        for token in feedback:
            expanded[token] = expanded.get(token, 0.0) + config.feedback_weight
        fused, lists = sources.score(expanded)
    if config.time_weight and q.windows:
        unit = 1.0 if config.fusion == "score" else 1.0 / (RRF_K + 1)
        bonus = window_bonus([str(s.date) for s in sessions], q.windows)
        fused = [f + config.time_weight * unit * x for f, x in zip(fused, bonus)]
    if config.cue_weight and q.wants is not None:
        unit = 1.0 if config.fusion == "score" else 1.0 / (RRF_K + 1)
        for i, s in enumerate(sessions):
            if any(q.wants.search(str(t.content)) for t in s.turns if t.role == "user"):
                fused[i] += config.cue_weight * unit
    final = fused
    if embed is not None and n:
        vectors = embed([query] + [d[:EMBED_CHARS] or " " for d in sources.session_docs])
        sims = [cosine(vectors[0], v) for v in vectors[1:]]
        lists["embed"] = order(sims)
        by_rrf = rrf_scores([matched(fused), lists["embed"]], weights=[1.0, config.embed_weight])
        final = [by_rrf.get(i, 0.0) for i in range(n)]
    ranked = order(final)
    dropped: list[int] = []
    if config.dedup:
        ranked, dropped = dedup_sessions(ranked, sessions)
    return RetrievalResult(ranked=ranked, scores=[final[i] for i in ranked], lists=lists, query=q,
                           duplicates=dropped, feedback=feedback, config=config.name)


ADAPTIVE_MIN_K = 3
ADAPTIVE_DROP = 0.2
"""Adaptive k keeps sessions scoring at least this share of the best. Measured on the development half of ``_s``
(``best``): with aggregating questions at the full top 10, mean k 8.65 and the recall of a fixed top 10; a cut at
0.2 for every question, mean k 5.3 but recall_all 0.947 instead of 0.957."""


def adaptive_k(scores: Sequence[float], top_k: int, *, min_k: int = ADAPTIVE_MIN_K, drop: float = ADAPTIVE_DROP,
               aggregates: bool = False) -> int:
    """How many of the ranked sessions to show: at most ``top_k`` and never all of them when there are two or
    more. A question that ``aggregates`` (counts, orders, compares: ``Query.aggregates``) gets that maximum; any
    other keeps taking sessions, from ``min_k`` on, while the score stays at least ``drop`` x the best.

    ``scores`` are the ranked sessions' final scores, best first (``RetrievalResult.scores``).
    """
    n = len(scores)
    cap = min(top_k, n - 1) if n > 1 else n
    if aggregates:
        return cap
    k = min(min_k, cap)
    best = scores[0] if scores else 0.0
    while k < cap and best > 0 and scores[k] >= drop * best:
        k += 1
    return k


def text_key(*parts: str) -> str:
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode("utf-8")).hexdigest()
