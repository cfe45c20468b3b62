"""The BM25 index (scripts/lme/target_kit/bm25_index.py): its fast tokenizer says exactly what the plain definition
says, its word memo stays bounded, and its scores are Lucene's BM25 added up in the same order as the plain
postings definition (equal to the last bit, so rankings never move)."""

from __future__ import annotations

import math
import random
import re

import pytest

from lme.target_kit import bm25_index
from lme.target_kit.bm25_index import BM25Index, query_weights, rank_grouped, tokenize

WORD = re.compile(r"[a-z0-9]+")


def plain_tokens(text: str) -> list[str]:
    """The tokenizer's definition: lower-case, [a-z0-9] runs, stop words dropped, the light stem."""
    return [bm25_index._stem(w) for w in WORD.findall(text.lower()) if w not in bm25_index._STOPWORDS]


TRICKY = ["naïve café İstanbul ΣΑΣ ﬁle Ⅻ ½ ² x²y", "K\u212a ß ǅ ẞ Ω", "tab\tnew\nline\r\x0bvt\x0cff",
          "emoji 😀ok 🇫🇷 done", "lone \ud800 surrogate", "MiXeD CaSe 42nd_st-3 e-mail@x.io", "", "   ", "’quotes’"]


@pytest.mark.parametrize("text", TRICKY)
def test_the_fast_tokenizer_agrees_with_its_definition_on_awkward_text(text):
    assert tokenize(text) == plain_tokens(text)


def test_the_fast_tokenizer_agrees_on_random_unicode():
    rng = random.Random(7)
    alphabet = "abcXYZ019 .,-_\n\té€ßİıΣσςﬁ²Ⅻ😀\u0307\u212a"
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert tokenize(text) == plain_tokens(text), repr(text)


def test_the_word_memo_is_bounded_and_emptying_it_changes_nothing(monkeypatch):
    monkeypatch.setattr(bm25_index, "VOCABULARY_KEPT", 50)
    bm25_index.forget_words()
    texts = [" ".join(f"w{i}x{j}" for j in range(30)) for i in range(40)]
    first = [tokenize(t) for t in texts]
    assert len(bm25_index._TOKEN_OF) <= 50
    assert [tokenize(t) for t in texts] == first == [plain_tokens(t) for t in texts]


def plain_scores(docs: list[list[str]], weights: dict[str, float], k1: float, b: float) -> list[float]:
    """Lucene BM25 by its postings, as the index was first written: per term, per document in corpus order."""
    avg = sum(map(len, docs)) / len(docs) if docs and sum(map(len, docs)) else 1.0
    postings: dict[str, list[tuple[int, int]]] = {}
    for i, doc in enumerate(docs):
        counts: dict[str, int] = {}
        for token in doc:
            counts[token] = counts.get(token, 0) + 1
        for token, tf in counts.items():
            postings.setdefault(token, []).append((i, tf))
    norm = [k1 * (1 - b + b * len(d) / avg) for d in docs]
    out = [0.0] * len(docs)
    for token, weight in weights.items():
        found = postings.get(token)
        if not found or not weight:
            continue
        df = len(found)
        idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5)) * weight
        for i, tf in found:
            out[i] += idf * tf / (tf + norm[i])
    return out


def test_scores_equal_the_postings_definition_to_the_last_bit():
    rng = random.Random(3)
    vocabulary = [f"t{i}" for i in range(60)]
    for _ in range(200):
        docs = [[rng.choice(vocabulary[: rng.randint(5, 60)]) for _ in range(rng.randint(0, 40))]
                for _ in range(rng.randint(1, 30))]
        weights = {rng.choice(vocabulary): rng.choice([1.0, 0.5, 0.0, 2.25]) for _ in range(rng.randint(1, 12))}
        k1, b = rng.choice([(1.5, 0.75), (1.2, 0.4), (0.9, 1.0)])
        index = BM25Index(docs, k1=k1, b=b)
        assert index.scores(weights) == plain_scores(docs, weights, k1, b)
        token = rng.choice(vocabulary)
        assert index.df(token) == sum(1 for d in docs if token in d)


def test_a_text_query_counts_repeated_words():
    index = BM25Index(["cat luna", "dog rex", "cat dog"])
    assert index.scores("cat cat dog") == index.scores(query_weights(["cat", "cat", "dog"]))
    assert index.rank("cat", k=1)[0][0] == 0


def test_tokenize_lowercases_drops_stopwords_and_strips_plurals():
    assert tokenize("The Cats were RUNNING to the parks!") == ["cat", "were", "runn", "park"]


def test_best_matching_document_ranks_first_and_all_documents_are_ranked():
    index = BM25Index(["I adopted a cat named Luna", "We moved to Denver last spring", "Coffee beans"],
                      ids=["s1", "s2", "s3"])
    ranked = index.rank("what's my cat's name")
    assert ranked[0][0] == "s1"
    assert [doc for doc, _ in ranked] == ["s1", "s2", "s3"]  # zero-score ties keep corpus order
    top = index.rank("Denver", k=1)
    assert len(top) == 1 and top[0][0] == "s2" and top[0][1] > 0


def test_query_with_no_known_word_scores_zero_everywhere():
    index = BM25Index(["alpha beta", "gamma"])
    assert index.scores("zzz the") == [0.0, 0.0]


def test_empty_corpus_ranks_nothing():
    assert BM25Index([]).rank("anything") == []


def test_grouped_ranking_lists_each_session_once_at_its_best_turn():
    index = BM25Index(["bike repair", "weather today", "bought a new bike helmet bike"], ids=["A", "B", "A"])
    assert [g for g, _ in rank_grouped(index, "bike")] == ["A", "B"]


def test_mismatched_ids_are_rejected():
    with pytest.raises(ValueError):
        BM25Index(["a", "b"], ids=["x"])
