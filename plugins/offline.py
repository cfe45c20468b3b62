"""Target ``offline``: an extractive answerer with no model and no network (smoke tests, setup checks).

BM25 over the item's USER turns with the question as query; the answer is the sentence of the best-matching
turn that shares the most words with the question (trimmed to ``max_chars``). When no turn matches well enough
(the best turn holds less than ``min_coverage`` of the question's words, or nothing scores), the answer is the
fixed abstention sentence ``NOT_ENOUGH``. It is a floor to compare against, not a memory system.

Options: ``min_coverage`` (default 0.2), ``max_chars`` (default 300).
``retrieved_session_ids``: every session, ranked by its best user turn.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from lme.target_kit import BM25Index, tokenize
from lme.targets import ChatRequest, Hypothesis, PublicItem, TargetContext

NAME = "offline"
NOT_ENOUGH = "The information provided is not enough to answer this question."
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def settings(options: Mapping[str, Any]) -> dict[str, Any]:
    return {"min_coverage": float(options.get("min_coverage", 0.2)), "max_chars": int(options.get("max_chars", 300))}


def describe(options: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": NAME, "model": "none (extractive BM25)", **settings(options)}


def prepare_requests(item: PublicItem, ctx: TargetContext) -> list[ChatRequest]:
    return []  # no model calls


def best_sentence(text: str, query_words: set[str]) -> str:
    """The sentence of ``text`` sharing the most words with the query (the first on ties)."""
    sentences = [s.strip() for s in _SENTENCE_END.split(text) if s.strip()] or [text.strip()]
    return max(sentences, key=lambda s: (len(query_words & set(tokenize(s))), -sentences.index(s)))


def answer(item: PublicItem, options: Mapping[str, Any]) -> tuple[str, list[str], dict[str, Any]]:
    """(answer, ranked session aliases, debug) for ``item``."""
    cfg = settings(options)
    turns = [(s.session_id, t.content) for s in item.sessions for t in s.turns if t.role == "user"]
    index = BM25Index([content for _, content in turns], ids=list(range(len(turns))))
    ranked_turns = index.rank(item.question)
    by_turn = (turns[int(turn_index)][0] for turn_index, _ in ranked_turns)  # then the sessions no turn ranked
    ranked_sessions = list(dict.fromkeys([*by_turn, *(s.session_id for s in item.sessions)]))

    query_words = set(tokenize(item.question))
    debug: dict[str, Any] = {"user_turns": len(turns)}
    if not ranked_turns or ranked_turns[0][1] <= 0 or not query_words:
        return NOT_ENOUGH, ranked_sessions, {**debug, "abstained": "no matching turn"}
    best_index, best_score = ranked_turns[0]
    best_text = turns[int(best_index)][1]
    coverage = len(query_words & set(tokenize(best_text))) / len(query_words)
    debug.update(best_score=round(best_score, 4), coverage=round(coverage, 3))
    if coverage < cfg["min_coverage"]:
        return NOT_ENOUGH, ranked_sessions, {**debug, "abstained": "low coverage"}
    sentence = best_sentence(best_text, query_words)
    if len(sentence) > cfg["max_chars"]:
        sentence = sentence[: cfg["max_chars"]].rsplit(" ", 1)[0] + " ..."
    return sentence, ranked_sessions, debug


def generate(item: PublicItem, ctx: TargetContext) -> Hypothesis:
    text, ranked, debug = answer(item, ctx.options)
    return Hypothesis(hypothesis=text, retrieved_session_ids=tuple(ranked), debug=debug)
