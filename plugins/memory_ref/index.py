"""Retrieval for memory-ref: BM25 over sessions, user turns and extracted facts, optional embeddings, fused by RRF.

Documents (all map back to a session index):

- session documents: the session's user turns, plus the user facts the writer extracted from it ("key
  expansion": the LongMemEval paper reports +4-5 points recall with fact-expanded keys);
- turn documents: one per user turn (``granularity="turn"`` keeps only these and the fact documents);
- fact documents: one per extracted fact (user and assistant facts, so assistant-provided answers are findable).

Each list is reduced to a session ranking (a session sits at its best document's position) and the rankings
are fused with weighted reciprocal-rank fusion, ``score = sum weight / (RRF_K + rank)``. Turn documents weigh
0.3: on the real ``_s`` copy, equal weights cost 1 point of recall_all@10 against session BM25 alone
(``tests/benchmarks/bench_memory_ref_retrieval.py``), while a light weight still breaks ties between sessions. Sessions no list ranked keep history
order at the end, so the result always holds every session.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Sequence

from .facts import Fact

RRF_K = 60
SOURCE_WEIGHTS = {"sessions": 1.0, "turns": 0.3, "facts": 1.0, "embed": 1.0}
EMBED_CHARS = 8000
"""Characters of a session document sent to the embedding model (embedding inputs are capped by the API)."""


def _bm25(texts: Sequence[str], ids: Sequence[Hashable], query: str) -> list[Hashable]:
    """Ids ranked by BM25 (groups collapse to their best document); ``scripts/bm25_index`` does the scoring."""
    if not texts:
        return []
    from bm25_index import BM25Index, rank_grouped

    return [doc_id for doc_id, _ in rank_grouped(BM25Index(texts, ids), query)]


def rrf(rankings: Sequence[Sequence[Hashable]], k: int = RRF_K, weights: Sequence[float] | None = None
        ) -> list[Hashable]:
    """(Weighted) reciprocal-rank fusion; ties keep the order of first appearance across the rankings."""
    scores: dict[Hashable, float] = {}
    first_seen: dict[Hashable, int] = {}
    for n, ranking in enumerate(rankings):
        weight = 1.0 if weights is None else weights[n]
        for rank, doc_id in enumerate(ranking, start=1):
            scores[doc_id] = scores.get(doc_id, 0.0) + weight / (k + rank)
            first_seen.setdefault(doc_id, len(first_seen))
    return sorted(scores, key=lambda d: (-scores[d], first_seen[d]))


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


@dataclass
class RetrievalResult:
    ranked: list[int]
    """Session indices, best first; every session appears once."""
    lists: dict[str, list[int]] = field(default_factory=dict)
    """The per-source session rankings that were fused (``sessions``, ``turns``, ``facts``, ``embed``)."""

    def debug(self, alias: Callable[[int], str], top: int = 10) -> dict[str, Any]:
        return {"sources": sorted(self.lists), "top": [alias(i) for i in self.ranked[:top]],
                "per_source_top": {k: [alias(i) for i in v[:top]] for k, v in sorted(self.lists.items())}}


def session_user_text(turns: Sequence[Any]) -> list[str]:
    return [str(t.content) for t in turns if t.role == "user"]


def retrieve(
    query: str,
    sessions: Sequence[Any],
    facts: Sequence[Fact] = (),
    *,
    granularity: str = "session",
    session_of_alias: Callable[[str], int | None] | None = None,
    embed: Callable[[list[str]], list[list[float]]] | None = None,
) -> RetrievalResult:
    """Rank ``sessions`` (PublicSession-like: ``session_id``, ``turns``) for ``query``.

    ``facts`` carry their session alias; ``session_of_alias`` maps it to an index (default: by position).
    ``embed`` (texts -> vectors, query first) adds a dense ranking of the session documents.
    """
    index_of = session_of_alias or {s.session_id: i for i, s in enumerate(sessions)}.get
    user_facts: dict[int, list[str]] = {}
    fact_texts: list[str] = []
    fact_ids: list[int] = []
    for fact in facts:
        i = index_of(fact.session_id)
        if i is None:
            continue
        fact_texts.append(fact.text)
        fact_ids.append(i)
        if fact.speaker == "user":
            user_facts.setdefault(i, []).append(fact.text)

    lists: dict[str, list[int]] = {}
    session_docs = ["\n".join(session_user_text(s.turns) + user_facts.get(i, [])) for i, s in enumerate(sessions)]
    if granularity == "session":
        lists["sessions"] = [int(i) for i in _bm25(session_docs, list(range(len(sessions))), query)]
    turn_texts: list[str] = []
    turn_ids: list[int] = []
    for i, s in enumerate(sessions):
        for text in session_user_text(s.turns):
            turn_texts.append(text)
            turn_ids.append(i)
    lists["turns"] = [int(i) for i in _bm25(turn_texts, turn_ids, query)]
    if fact_texts:
        lists["facts"] = [int(i) for i in _bm25(fact_texts, fact_ids, query)]
    if embed is not None and sessions:
        vectors = embed([query] + [d[:EMBED_CHARS] or " " for d in session_docs])
        q, docs = vectors[0], vectors[1:]
        sims = [cosine(q, v) for v in docs]
        lists["embed"] = sorted(range(len(sessions)), key=lambda i: (-sims[i], i))
    names = list(lists)
    fused = [int(i) for i in rrf([lists[n] for n in names], weights=[SOURCE_WEIGHTS[n] for n in names])]
    seen = set(fused)
    fused += [i for i in range(len(sessions)) if i not in seen]
    return RetrievalResult(fused, lists)


def text_key(*parts: str) -> str:
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode("utf-8")).hexdigest()
