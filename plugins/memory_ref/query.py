"""Query rewriting for retrieval, from the question's own words only (no model).

``rewrite(question, question_date)`` returns the weighted BM25 terms and the time windows the question names:

- relative time expressions ("two weeks ago", "last Saturday", "in March") are resolved by ``temporal`` into
  date windows for the time-aware ranking, and their words leave the query: "ago", "week" and "two" match any
  session that mentions some other week;
- a question that asks for an age ("how old", "years older", "average age") also searches for the words people
  state an age with ("I just turned 32", "a 32-year-old", "my age"): the evidence rarely repeats the question's
  words;
- the noun a "how many X" question counts is kept (``counted_noun``) and reported, so the debug shows what the
  retriever looked for; a question that counts, adds up, orders or compares is marked ``aggregates`` (its reader
  gets the full ``top_k``, see ``index.adaptive_k``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from lme.target_kit import query_weights, tokenize

from . import temporal
from .resolver import counted_noun

AGE_QUESTION = re.compile(r"\b(how old|years? old|ages?|years? (?:older|younger)|how many years will i be|born)\b")
AGE_WORDS = ("age", "old", "turned", "birthday", "year")
AGE_WEIGHT = 1.0
"""Weight of each age word added to an age question (1.0 = as much as a word of the question)."""
AGE_STATEMENT = re.compile(r"\b(?:i'?m|i am|turned|turning|i was|aged?)\s+(?:now\s+|just\s+)?\d{1,3}\b|"
                           r"\b\d{1,3}[- ]years?[- ]old\b|\b\d{1,3}(?:st|nd|rd|th) birthday\b", re.I)
"""How a session states an age ("I'm 32", "just turned 32", "a 32-year-old"): the evidence an age question needs."""
AGGREGATE = re.compile(r"\b(how many|how much|total|in total|average|sum|combined|altogether|all the|each|every|"
                       r"list|order of|both|so far|first|last|before|after|more|most|least|difference|older|"
                       r"younger|compared?|between)\b", re.I)
"""Questions that count, add up, order or compare: their evidence is spread over sessions, so the reader gets the
full ``top_k`` rather than an adaptive cut."""


@dataclass(frozen=True)
class Query:
    text: str
    """The question with its time expressions removed."""
    terms: dict[str, float]
    """BM25 tokens and their weights."""
    windows: tuple[temporal.Resolved, ...] = ()
    """The date windows the question's time expressions name (empty without a question date)."""
    counted: str | None = None
    expansions: tuple[str, ...] = field(default=())
    wants: re.Pattern[str] | None = None
    """What a session must state to answer the question (an age), if the question says so."""
    aggregates: bool = False
    """The question counts, adds up, orders or compares (``AGGREGATE``)."""

    def to_debug(self) -> dict[str, Any]:
        return {"terms": {t: round(w, 3) for t, w in self.terms.items()},
                "windows": [w.to_dict() for w in self.windows], "counted": self.counted,
                "expansions": list(self.expansions), "wants": self.wants.pattern if self.wants else None,
                "aggregates": self.aggregates}


def rewrite(question: str, question_date: str | None = None, *, drop_time_words: bool = True,
            age_expansion: bool = True) -> Query:
    """The retrieval query for ``question`` (see the module docstring)."""
    qd = temporal.parse_date(question_date)
    windows = tuple(temporal.resolve_expressions(question, qd)) if qd else ()
    text = question
    if drop_time_words and windows:
        text = question.lower()
        for window in windows:
            text = text.replace(window.expression, " ")
    terms = query_weights(tokenize(text))
    expansions: list[str] = []
    wants = None
    if age_expansion and AGE_QUESTION.search(question.lower()):
        wants = AGE_STATEMENT
        for word in AGE_WORDS:
            for token in tokenize(word):
                terms[token] = terms.get(token, 0.0) + AGE_WEIGHT
        expansions += AGE_WORDS
    if not terms:  # a question of stop words and time words only: search with what it has
        terms = query_weights(tokenize(question))
    return Query(text=" ".join(text.split()), terms=terms, windows=windows, counted=counted_noun(question),
                 expansions=tuple(expansions), wants=wants, aggregates=bool(AGGREGATE.search(question)))


def plain(question: str) -> Query:
    """The question's words as they are: the baseline query."""
    return Query(text=question, terms=query_weights(tokenize(question)))
