"""A small BM25 index over short texts (sessions, turns, facts), in plain Python.

Usage (library)::

    index = BM25Index(["I adopted a cat named Luna", "We moved to Denver"], ids=["s1", "s2"])
    index.rank("what is my cat called?")        # [("s1", 0.47), ("s2", 0.0)]
    index.rank("cat", k=1)                      # [("s1", ...)]
    index.scores({"cat": 1.0, "luna": 0.5})     # a weighted query (query expansion, feedback terms)

Tokenizer: lower-case, runs of letters/digits, English stop words dropped, and a light suffix strip (plural
``s``/``es``, ``ing``, ``ed``) so "cats"/"cat" and "moved"/"move" meet. Deterministic and stdlib-only; results
are memoised per text because the same sessions recur across items. Ties in score keep corpus order, so rankings
are reproducible. (A Snowball stemmer and a 180-word stop list measured no better on the ``_s`` development half,
``tests/benchmarks/bench_retrieval_configs.py``, so the light ones stay.)

Scoring is Lucene's BM25 (idf ``log(1 + (N - df + 0.5) / (df + 0.5))``, term frequency ``tf / (tf + k1 (1 - b +
b dl / avgdl))``), the variant the ``bm25s`` package implements; a query term's weight multiplies its contribution.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Hashable, Iterable, Mapping, Sequence

_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    """a an and are as at be but by for if in into is it no not of on or such that the their then there these
    they this to was will with i me my you your we our do did what how which when where who""".split()
)
K1 = 1.5
B = 0.75


def _stem(word: str) -> str:
    """A deliberately light suffix strip; only for words long enough that the stem stays meaningful."""
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 4 and word.endswith("ed"):
        return word[:-2]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


@lru_cache(maxsize=200_000)
def _tokens(text: str) -> tuple[str, ...]:
    return tuple(_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOPWORDS)


def tokenize(text: str) -> list[str]:
    """Words of ``text`` for BM25: lower-case, alphanumeric runs, stop words dropped, light stemming."""
    return list(_tokens(text))


def query_weights(tokens: Iterable[str], weight: float = 1.0) -> dict[str, float]:
    """``{token: weight x occurrences}``: a repeated query word counts once per occurrence."""
    out: dict[str, float] = {}
    for token in tokens:
        out[token] = out.get(token, 0.0) + weight
    return out


class BM25Index:
    """BM25 over ``texts`` (strings, or token sequences already made by ``tokenize``); ``ids`` name the documents
    (default 0..n-1)."""

    def __init__(self, texts: Sequence[str] | Sequence[Sequence[str]], ids: Sequence[Hashable] | None = None,
                 *, k1: float = K1, b: float = B) -> None:
        if ids is not None and len(ids) != len(texts):
            raise ValueError(f"{len(texts)} texts but {len(ids)} ids")
        self.ids: list[Hashable] = list(ids) if ids is not None else list(range(len(texts)))
        self.k1, self.b = k1, b
        self.docs: list[tuple[str, ...]] = [_tokens(t) if isinstance(t, str) else tuple(t) for t in texts]
        self._norm = []
        total = sum(len(d) for d in self.docs)
        avg = total / len(self.docs) if self.docs and total else 1.0
        self._postings: dict[str, list[tuple[int, int]]] = {}
        for i, doc in enumerate(self.docs):
            counts: dict[str, int] = {}
            for token in doc:
                counts[token] = counts.get(token, 0) + 1
            for token, tf in counts.items():
                self._postings.setdefault(token, []).append((i, tf))
            self._norm.append(k1 * (1 - b + b * len(doc) / avg))

    def __len__(self) -> int:
        return len(self.ids)

    def idf(self, token: str) -> float:
        df = len(self._postings.get(token, ()))
        return math.log(1 + (len(self.docs) - df + 0.5) / (df + 0.5))

    def scores(self, query: str | Mapping[str, float]) -> list[float]:
        """One BM25 score per document, in corpus order (all 0.0 when no query word is in the corpus).

        ``query`` is a text (tokenized here) or ``{token: weight}`` (tokens as ``tokenize`` makes them)."""
        weights = query_weights(_tokens(query)) if isinstance(query, str) else query
        out = [0.0] * len(self.docs)
        for token, weight in weights.items():
            postings = self._postings.get(token)
            if not postings or not weight:
                continue
            idf = self.idf(token) * weight
            for i, tf in postings:
                out[i] += idf * tf / (tf + self._norm[i])
        return out

    def rank(self, query: str | Mapping[str, float], k: int | None = None) -> list[tuple[Hashable, float]]:
        """``(id, score)`` best first, ties in corpus order; all documents unless ``k`` is given."""
        scored = sorted(enumerate(self.scores(query)), key=lambda p: (-p[1], p[0]))
        if k is not None:
            scored = scored[:k]
        return [(self.ids[i], s) for i, s in scored]


def rank_grouped(index: BM25Index, query: str | Mapping[str, float]) -> list[tuple[Hashable, float]]:
    """Rank groups when several documents share an id (e.g. turns of one session): a group's score is its best
    document's score; each group appears once, at its best document's position."""
    seen: set[Hashable] = set()
    out: list[tuple[Hashable, float]] = []
    for doc_id, score in index.rank(query):
        if doc_id not in seen:
            seen.add(doc_id)
            out.append((doc_id, score))
    return out
