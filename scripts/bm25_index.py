"""A small BM25 index over short texts (sessions, turns, facts), built on ``bm25s``.

Usage (library)::

    index = BM25Index(["I adopted a cat named Luna", "We moved to Denver"], ids=["s1", "s2"])
    index.rank("what is my cat called?")        # [("s1", 1.23), ("s2", 0.0)]
    index.rank("cat", k=1)                      # [("s1", ...)]

Tokenizer: lower-case, runs of letters/digits, English stop words dropped (bm25s's list), and a light suffix
strip (plural ``s``/``es``, ``ing``, ``ed``) so "cats"/"cat" and "moved"/"move" meet. Deterministic and
stdlib-only. Ties in score keep corpus order, so rankings are reproducible.
"""

from __future__ import annotations

import re
from typing import Hashable, Sequence

import bm25s
from bm25s.stopwords import STOPWORDS_EN

_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(STOPWORDS_EN) | frozenset({"i", "me", "my", "you", "your", "we", "our", "do", "did", "what",
                                                  "how", "which", "when", "where", "who"})


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


def tokenize(text: str) -> list[str]:
    """Words of ``text`` for BM25: lower-case, alphanumeric runs, stop words dropped, light stemming."""
    return [_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]


class BM25Index:
    """BM25 (bm25s, Lucene variant, k1=1.5, b=0.75) over ``texts``; ``ids`` name the documents (default 0..n-1)."""

    def __init__(self, texts: Sequence[str], ids: Sequence[Hashable] | None = None) -> None:
        if ids is not None and len(ids) != len(texts):
            raise ValueError(f"{len(texts)} texts but {len(ids)} ids")
        self.ids: list[Hashable] = list(ids) if ids is not None else list(range(len(texts)))
        self._model: bm25s.BM25 | None = None
        if texts:
            self._model = bm25s.BM25()
            self._model.index([tokenize(t) for t in texts], show_progress=False)

    def __len__(self) -> int:
        return len(self.ids)

    def scores(self, query: str) -> list[float]:
        """One BM25 score per document, in corpus order (all 0.0 when no query word is in the corpus)."""
        tokens = tokenize(query)
        if self._model is None:
            return []
        if not tokens:
            return [0.0] * len(self.ids)
        return [float(s) for s in self._model.get_scores(tokens)]

    def rank(self, query: str, k: int | None = None) -> list[tuple[Hashable, float]]:
        """``(id, score)`` best first, ties in corpus order; all documents unless ``k`` is given."""
        scored = sorted(zip(range(len(self.ids)), self.scores(query)), key=lambda p: (-p[1], p[0]))
        if k is not None:
            scored = scored[:k]
        return [(self.ids[i], s) for i, s in scored]


def rank_grouped(index: BM25Index, query: str) -> list[tuple[Hashable, float]]:
    """Rank groups when several documents share an id (e.g. turns of one session): a group's score is its best
    document's score; each group appears once, at its best document's position."""
    seen: set[Hashable] = set()
    out: list[tuple[Hashable, float]] = []
    for doc_id, score in index.rank(query):
        if doc_id not in seen:
            seen.add(doc_id)
            out.append((doc_id, score))
    return out
