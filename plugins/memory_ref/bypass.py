"""The ``symbolic_bypass`` layer: answer without the reader only when the symbolic layers fully determine it.

Taken only when every condition holds (otherwise the reader answers and the reason is recorded):

- Spans ("how many days ago did I X", "how many weeks between X and Y", "how many days before X did I Y"): each
  event phrase has at least two content words; one fact with a writer-pinned ``event_date`` covers at least
  ``MATCH_COVERAGE`` of them; every other fact scoring within ``AMBIGUITY_MARGIN`` of it has the same date; the
  dates are not after the question date.
- Order ("which did I do first, A or B"): both events matched as above, on different days.
- Counts ("how many X have I ..."), only with ``bypass_counts`` on (off by default: the writer names categories
  inconsistently across sessions, so a missed item is a wrong answer): at least two deduplicated user facts whose
  category is exactly X, no time qualifier and no update cue in the question.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Sequence

from . import resolver, temporal
from .facts import Fact
from .text import content_tokens, coverage

MATCH_COVERAGE = 0.75
AMBIGUITY_MARGIN = 0.2


@dataclass(frozen=True)
class Decision:
    taken: bool
    reason: str
    answer: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"taken": self.taken, "reason": self.reason}
        if self.answer is not None:
            d["answer"] = self.answer
        if self.details:
            d["details"] = self.details
        return d


@dataclass(frozen=True)
class EventMatch:
    phrase: str
    fact: Fact | None
    day: date | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"phrase": self.phrase, "fact": self.fact.text if self.fact else None,
                "date": self.day.isoformat() if self.day else None, "reason": self.reason}


def match_event(phrase: str, facts: Sequence[Fact], question_day: date) -> EventMatch:
    """The one dated fact that ``phrase`` describes, or a match with ``fact=None`` and the reason why not."""
    if len(set(content_tokens(phrase))) < 2:
        return EventMatch(phrase, None, None, "event phrase too short")
    scored = []
    for fact in facts:
        day = temporal.parse_date(fact.event_date)
        if day is None:
            continue
        score = coverage(phrase, fact.text)
        if score > 0:
            scored.append((score, day, fact))
    if not scored:
        return EventMatch(phrase, None, None, "no dated fact mentions the event")
    scored.sort(key=lambda s: -s[0])
    best_score, best_day, best_fact = scored[0]
    if best_score < MATCH_COVERAGE:
        return EventMatch(phrase, None, None, f"best dated fact covers {best_score:.2f} of the event")
    rivals = {day for score, day, _ in scored if score >= best_score - AMBIGUITY_MARGIN}
    if len(rivals) > 1:
        return EventMatch(phrase, None, None, f"ambiguous: {len(rivals)} dates match the event")
    if best_day > question_day:
        return EventMatch(phrase, None, None, "event dated after the current date")
    return EventMatch(phrase, best_fact, best_day, "matched")


_ORDER = re.compile(
    r"\b(first|earlier|last|later|most recently)\b\s*[,:]?\s*(?:the |my |a )?(.+?)\s*,?\s+or\s+(?:the |my |a )?(.+?)\s*\??$"
)


def decide(question: str, question_date: str, facts: Sequence[Fact], *, bypass_counts: bool = False) -> Decision:
    """Whether the symbolic layers alone answer ``question`` from ``facts`` (current facts, history order)."""
    qd = temporal.parse_date(question_date)
    if qd is None:
        return Decision(False, "question date does not parse")
    duration = temporal.parse_duration_question(question)
    if duration is not None:
        return _decide_duration(duration, facts, qd)
    order = _ORDER.search(question.lower())
    if order and question.lower().lstrip().startswith(("which", "what", "who", "did i")):
        return _decide_order(order, facts, qd)
    noun = resolver.counted_noun(question)
    if noun is not None:
        if not bypass_counts:
            return Decision(False, "count questions go to the reader (bypass_counts off)")
        return _decide_count(question, noun, facts, qd)
    return Decision(False, "question shape not handled symbolically")


def _decide_duration(duration: temporal.DurationQuestion, facts: Sequence[Fact], qd: date) -> Decision:
    matches = [match_event(p, facts, qd) for p in duration.events]
    details = {"shape": duration.kind, "unit": duration.unit, "events": [m.to_dict() for m in matches]}
    missing = [m for m in matches if m.day is None]
    if missing:
        return Decision(False, f"event not pinned: {missing[0].reason}", details=details)
    if duration.kind == "ago":
        earlier, later = matches[0].day, qd
    else:
        earlier, later = matches[0].day, matches[1].day
        if earlier > later:
            earlier, later = later, earlier
    assert earlier is not None and later is not None
    return Decision(True, f"{duration.kind} span computed from dated facts",
                    temporal.span_answer(duration.unit, earlier, later), details)


def _decide_order(order: re.Match[str], facts: Sequence[Fact], qd: date) -> Decision:
    want_first = order.group(1) in {"first", "earlier"}
    phrases = (order.group(2), order.group(3))
    matches = [match_event(p, facts, qd) for p in phrases]
    details = {"shape": "order", "events": [m.to_dict() for m in matches]}
    if any(m.day is None for m in matches):
        missing = next(m for m in matches if m.day is None)
        return Decision(False, f"event not pinned: {missing.reason}", details=details)
    if matches[0].day == matches[1].day:
        return Decision(False, "both events on the same day", details=details)
    ordered = temporal.order_events([(m.phrase, m.day) for m in matches if m.day])
    pick = ordered[0] if want_first else ordered[-1]
    return Decision(True, "order computed from dated facts",
                    f"{pick[0]} ({temporal.format_day(pick[1])})", details)


def _decide_count(question: str, noun: str, facts: Sequence[Fact], qd: date) -> Decision:
    if temporal.resolve_expressions(question, qd):
        return Decision(False, "count with a time qualifier")
    if resolver.is_update_question(question):
        return Decision(False, "count of a changing value")
    items = resolver.facts_in_category(facts, noun)
    unique, removed = resolver.deduplicate([f.text for f in items])
    details = {"shape": "count", "noun": noun, "items": unique, "deduplicated": removed}
    if len(unique) < 2:
        return Decision(False, f"only {len(unique)} item(s) in category '{noun}'", details=details)
    return Decision(True, "count of deduplicated facts", f"{len(unique)} ({'; '.join(unique)})", details)
