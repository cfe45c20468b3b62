"""The retrieval stage shared by memory-ref and rag: BM25 weights, query rewriting, time windows, fusion,
de-duplication, adaptive k, and the held-out rule. Small synthetic items only."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from lme.target_kit.bm25_index import BM25Index, query_weights, tokenize
from lme.data.holdout import half_of, is_development
from lme.core.records import PublicSession, PublicTurn

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins"))
from memory_ref import index, query, temporal, time_prior  # noqa: E402

QDATE = "2023/06/01 (Thu) 12:00"
FILLER = [
    ("Can you suggest a pasta recipe with mushrooms?", "Try a creamy mushroom pasta."),
    ("How do I fix a flat bicycle tire?", "Remove the wheel and find the puncture."),
    ("Plan a weekend trip to Denver for me.", "Visit Red Rocks and Union Station."),
    ("What are good stretches after running?", "Hamstring and calf stretches help."),
    ("How should I water my succulents?", "Water sparingly, about every two weeks."),
    ("Explain how compound interest works.", "Interest is earned on earlier interest too."),
]


def session(alias: str, *turns: tuple[str, str], date: str = "2023/05/20 (Sat) 10:00") -> PublicSession:
    return PublicSession(alias, date, tuple(PublicTurn(role, text) for role, text in turns))


def haystack(*extra: PublicSession, date: str = "2023/05/10 (Wed) 10:00") -> list[PublicSession]:
    out = [session(f"session_{i + 1:03d}", ("user", u), ("assistant", a), date=date) for i, (u, a) in
           enumerate(FILLER)]
    return out + list(extra)


def test_the_held_out_rule_is_the_last_hex_digit_of_the_ids_sha256():
    # sha256 hex digests end in: eac54add -> 0, 06878be2 -> 4, gpt4_2f56ae70 -> c, 001be529 -> f
    assert [is_development(q) for q in ("eac54add", "06878be2", "gpt4_2f56ae70", "001be529")] == [
        True, True, True, False]
    assert half_of("001be529") == "test" and half_of("eac54add") == "dev"


def test_weighted_queries_scale_a_words_contribution_and_zero_weight_ignores_it():
    bm = BM25Index(["cat luna", "dog rex", "cat dog"])
    one, two = bm.scores({"cat": 1.0}), bm.scores({"cat": 2.0})
    assert two[0] == pytest.approx(2 * one[0]) and one[1] == 0.0
    assert bm.scores({"cat": 0.0, "dog": 1.0})[0] == 0.0
    assert bm.scores("cat") == bm.scores(query_weights(tokenize("cat")))
    assert BM25Index([tokenize("cat luna")]).docs == [("cat", "luna")]  # token lists are accepted as they are


def test_rewrite_moves_time_expressions_into_windows_and_out_of_the_words():
    q = query.rewrite("What gardening activity did I do two weeks ago?", QDATE)
    assert [w.expression for w in q.windows] == ["two weeks ago"]
    assert "garden" in q.terms and not {"two", "week", "ago"} & set(q.terms)
    undated = query.rewrite("What gardening activity did I do two weeks ago?", None)
    assert undated.windows == () and "week" in undated.terms


def test_rewrite_adds_the_words_an_age_is_stated_with_to_an_age_question():
    q = query.rewrite("How old was I when Alex was born?", QDATE)
    assert {"age", "turn", "birthday"} <= set(q.terms) and q.expansions
    assert not query.rewrite("What is my cat's name?", QDATE).expansions


def test_an_age_question_prefers_the_session_where_the_user_states_an_age():
    stated = session("session_007", ("user", "Any tips for a career change? I'm 32 and restless."))
    result = index.retrieve("How many years older is my sister than me?", haystack(stated), question_date=QDATE)
    assert result.ranked[0] == 6 and result.query.wants is not None
    assert query.AGE_STATEMENT.search("she just turned 29") and query.AGE_STATEMENT.search("a 32-year-old")
    assert not query.AGE_STATEMENT.search("I have 32 plants")


def test_rewrite_keeps_the_counted_noun_and_never_returns_an_empty_query():
    assert query.rewrite("How many bikes do I own?", QDATE).counted == "bikes"
    assert query.rewrite("What did I do last week?", QDATE).terms  # only time words: the words come back


def test_window_bonus_marks_sessions_in_a_telling_window_only():
    qd = temporal.parse_date(QDATE)
    two_weeks = temporal.resolve_expressions("two weeks ago", qd)
    dates = ["2023/05/18 (Thu) 10:00", "2023/04/01 (Sat) 10:00", "2023/03/01 (Wed) 10:00", "not a date"]
    assert time_prior.window_bonus(dates, two_weeks) == [1.0, 0.0, 0.0, 0.0]
    wide = temporal.resolve_expressions("in the past few months", qd)  # covers most sessions: tells nothing
    assert time_prior.window_bonus(dates[:3] + ["2023/05/30 (Tue) 10:00"], wide) == [0.0] * 4


def test_assistant_turns_are_indexed_so_what_the_assistant_said_is_found():
    said = session("session_007", ("user", "Any ideas for a weekend away?"),
                   ("assistant", "The Hotel Marquesa in Key West is lovely in spring."))
    result = index.retrieve("Which hotel in Key West did you recommend to me?", haystack(said),
                            question_date=QDATE)
    assert result.ranked[0] == 6
    without = index.retrieve("Which hotel in Key West did you recommend to me?", haystack(said),
                             question_date=QDATE, config=index.config_named("plain"))
    assert without.ranked[0] != 6  # user turns alone do not find it


def test_a_session_repeated_in_the_history_is_returned_once():
    twin = ("user", "I adopted a kitten named Luna."), ("assistant", "Congratulations!")
    sessions = haystack(session("session_007", *twin), session("session_008", *twin, date=QDATE))
    result = index.retrieve("What is my kitten called?", sessions, question_date=QDATE)
    assert result.ranked.count(6) + result.ranked.count(7) == 1 and len(result.duplicates) == 1
    assert sorted(result.ranked + result.duplicates) == list(range(len(sessions)))
    kept = index.retrieve("What is my kitten called?", sessions, config=index.RetrieverConfig(dedup=False))
    assert sorted(kept.ranked) == list(range(len(sessions)))


def test_a_session_in_the_window_the_question_names_outranks_an_equal_match_outside_it():
    old = session("session_007", ("user", "I planted basil today."), date="2023/03/01 (Wed) 10:00")
    recent = session("session_008", ("user", "I planted basil today."), ("assistant", "Nice."),
                     date="2023/05/18 (Thu) 10:00")
    sessions = haystack(old, recent)
    assert index.retrieve("What did I plant two weeks ago?", sessions, question_date=QDATE).ranked[0] == 7
    undated = index.retrieve("What did I plant two weeks ago?", sessions)
    assert undated.ranked[0] == 6  # no question date: no window, corpus order breaks the tie


def test_feedback_expands_the_query_with_the_top_sessions_distinctive_words():
    hit = session("session_007", ("user", "My sourdough starter smells of acetone, is my levain dead?"))
    result = index.retrieve("Is my sourdough starter ok?", haystack(hit), question_date=QDATE)
    assert result.ranked[0] == 6 and {"acetone", "levain"} <= set(result.feedback)
    assert index.retrieve("Is my sourdough starter ok?", haystack(hit),
                          config=index.RetrieverConfig(feedback_docs=0)).feedback == []


def test_every_configuration_ranks_every_distinct_session_once():
    evidence = session("session_007", ("user", "I bought a road bike last week."))
    sessions = haystack(evidence)
    for config in [*index.PRESETS.values(), index.RetrieverConfig(fusion="rrf")]:
        for granularity in ("session", "turn"):
            result = index.retrieve("Which bike did I buy?", sessions, question_date=QDATE, config=config,
                                    granularity=granularity)
            assert sorted(result.ranked) == list(range(len(sessions))) and result.ranked[0] == 6
            assert len(result.scores) == len(result.ranked)
    assert "sessions" not in index.retrieve("bike", sessions, granularity="turn").lists


def test_an_embedding_ranking_is_fused_by_reciprocal_rank():
    near = session("session_007", ("user", "Photos of the sunset at the beach."))
    sessions = haystack(near)
    seen: list[list[str]] = []

    def embed(texts: list[str]) -> list[list[float]]:  # the query and session 7 point the same way
        seen.append(texts)
        return [[1.0, 0.0]] + [[1.0, 0.0] if "sunset" in t else [0.0, 1.0] for t in texts[1:]]

    result = index.retrieve("What did I capture with my camera?", sessions, embed=embed)
    assert result.ranked[0] == 6 and result.lists["embed"][0] == 6
    assert seen[0][0] == "What did I capture with my camera?" and len(seen[0]) == len(sessions) + 1


def test_unknown_preset_names_the_choices():
    with pytest.raises(ValueError, match="best"):
        index.config_named("nope")


@pytest.mark.parametrize("scores,top_k,min_k,aggregates,expected", [
    ([1.0, 0.9, 0.8, 0.1, 0.1, 0.1], 10, 1, False, 3),  # stops where the score falls below a fifth of the best
    ([1.0, 0.9, 0.8, 0.1, 0.1, 0.1], 10, 5, False, 5),  # never fewer than min_k
    ([1.0, 0.9, 0.8, 0.1, 0.1, 0.1], 10, 1, True, 5),   # counting/ordering questions get the cap
    ([1.0] * 20, 10, 5, False, 10),                      # never more than top_k
    ([1.0] * 4, 10, 5, True, 3),                         # never every session
    ([0.0] * 6, 10, 2, False, 2),                        # nothing matched: min_k
    ([1.0], 10, 5, False, 1),                            # a one-session history is shown whole
])
def test_adaptive_k(scores, top_k, min_k, aggregates, expected):
    assert index.adaptive_k(scores, top_k, min_k=min_k, aggregates=aggregates) == expected


def test_questions_that_count_order_or_compare_are_marked_as_aggregating():
    assert query.rewrite("How many bikes do I own?", QDATE).aggregates
    assert query.rewrite("Which did I buy first, the lamp or the rug?", QDATE).aggregates
    assert not query.rewrite("What is the name of my cat?", QDATE).aggregates
