from lme.targets.bm25_index import BM25Index, rank_grouped, tokenize


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
    import pytest

    with pytest.raises(ValueError):
        BM25Index(["a", "b"], ids=["x"])
