"""A small BM25 index over short texts (sessions, turns, facts), in plain Python.

Usage (library)::

    index = BM25Index(["I adopted a cat named Luna", "We moved to Denver"], ids=["s1", "s2"])
    index.rank("what is my cat called?")        # [("s1", 0.47), ("s2", 0.0)]
    index.rank("cat", k=1)                      # [("s1", ...)]
    index.scores({"cat": 1.0, "luna": 0.5})     # a weighted query (query expansion, feedback terms)

Tokenizer: lower-case, runs of letters/digits, English stop words dropped, and a light suffix strip (plural
``s``/``es``, ``ing``, ``ed``) so "cats"/"cat" and "moved"/"move" meet. Deterministic and stdlib-only. What is
memoised is each *word*'s token (``_Vocabulary``: a dict bounded by entries, cleared when full), not each text:
a text memo held every session's tokens for the whole run (3 MiB per ``_s`` item, 1 GB after 300) and hit 4% of
the time, while a word recurs in nearly every text; ``tests/benchmarks/bench_rankers.py`` measures both. Ties in
score keep corpus order, so rankings are reproducible. (A Snowball stemmer and a 180-word stop list measured no better on the ``_s`` development half,
``tests/benchmarks/bench_retrieval_configs.py``, so the light ones stay.)

Scoring is Lucene's BM25 (idf ``log(1 + (N - df + 0.5) / (df + 0.5))``, term frequency ``tf / (tf + k1 (1 - b +
b dl / avgdl))``), the variant the ``bm25s`` package implements; a query term's weight multiplies its contribution.
"""

from __future__ import annotations

import math
import re
from collections import Counter
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


VOCABULARY_KEPT = 300_000
"""Words whose token is remembered, at most (about 30 MB); past it the memo starts again. An ``_s`` run meets
about 100,000 distinct words."""


class _Vocabulary(dict):
    """``word (ASCII bytes) -> token`` (``""`` for a stop word), filled on first sight; a pure function of the
    word, so clearing it (when full, or from another thread) changes nothing but speed."""

    def __missing__(self, raw: bytes) -> str:
        if len(self) >= VOCABULARY_KEPT:
            self.clear()
        word = raw.decode("ascii")
        token = self[raw] = "" if word in _STOPWORDS else _stem(word)
        return token


_TOKEN_OF = _Vocabulary()
_SEPARATORS = bytes(c if chr(c) in "abcdefghijklmnopqrstuvwxyz0123456789" else 0x20 for c in range(256))
"""Every byte that is not a lower-case ASCII letter or digit becomes a space."""


def _words(text: str) -> list[bytes]:
    """``_WORD.findall(text.lower())`` as bytes, at twice its speed: each non-ASCII character becomes ``?`` and
    then, like every byte outside [a-z0-9], a space (tests/plugins/test_retrieval_index.py checks the two agree)."""
    return text.lower().encode("ascii", "replace").translate(_SEPARATORS).split()


def _tokens(text: str) -> tuple[str, ...]:
    return tuple(filter(None, map(_TOKEN_OF.__getitem__, _words(text))))


def forget_words() -> None:
    """Empty the word memo (benchmarks time tokenizing from scratch)."""
    _TOKEN_OF.clear()


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
    (default 0..n-1).

    Each document is kept as its term counts (``Counter``, built in C); a query term's document frequency is
    counted when a query first asks for it. An item's corpus is small (tens to hundreds of documents) and a query
    has tens of terms, so this costs less than building postings for every term of every document, and it adds
    the same numbers in the same order (rankings are unchanged to the last bit)."""

    def __init__(self, texts: Sequence[str] | Sequence[Sequence[str]], ids: Sequence[Hashable] | None = None,
                 *, k1: float = K1, b: float = B) -> None:
        if ids is not None and len(ids) != len(texts):
            raise ValueError(f"{len(texts)} texts but {len(ids)} ids")
        self.ids: list[Hashable] = list(ids) if ids is not None else list(range(len(texts)))
        self.k1, self.b = k1, b
        self.docs: list[tuple[str, ...]] = [_tokens(t) if isinstance(t, str) else tuple(t) for t in texts]
        self._counts = [Counter(doc) for doc in self.docs]
        total = sum(len(d) for d in self.docs)
        avg = total / len(self.docs) if self.docs and total else 1.0
        self._norm = [k1 * (1 - b + b * len(doc) / avg) for doc in self.docs]
        self._df: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.ids)

    def df(self, token: str) -> int:
        """How many documents contain ``token``."""
        found = self._df.get(token)
        if found is None:
            found = self._df[token] = sum(1 for counts in self._counts if token in counts)
        return found

    def idf(self, token: str) -> float:
        df = self.df(token)
        return math.log(1 + (len(self.docs) - df + 0.5) / (df + 0.5))

    def scores(self, query: str | Mapping[str, float]) -> list[float]:
        """One BM25 score per document, in corpus order (all 0.0 when no query word is in the corpus).

        ``query`` is a text (tokenized here) or ``{token: weight}`` (tokens as ``tokenize`` makes them)."""
        weights = query_weights(_tokens(query)) if isinstance(query, str) else query
        out = [0.0] * len(self.docs)
        norm = self._norm
        for token, weight in weights.items():
            if not weight or not self.df(token):
                continue
            idf = self.idf(token) * weight
            for i, counts in enumerate(self._counts):
                tf = counts.get(token)
                if tf:
                    out[i] += idf * tf / (tf + norm[i])
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
