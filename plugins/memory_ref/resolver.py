"""The ``symbolic_resolver`` layer: latest value wins for facts that change; deduplicate before counting.

Rules (tested in ``tests/plugins/test_symbolic_resolver.py``):

- Facts with the same normalised ``subject`` and different values form an update chain. The one from the latest
  session date (ties: the later session in the history, then later in the session) is current; the others are
  marked superseded, with the value that replaced them. Values equal after normalisation are one value.
- Counting: items are duplicates when their normalised texts have similarity >= ``DUPLICATE_SIMILARITY`` (token
  Jaccard or character ratio); the earliest mention is kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from .facts import Fact
from .temporal import parse_date
from .text import normalise, similarity, stem

DUPLICATE_SIMILARITY = 0.85

_UPDATE_CUES = re.compile(
    r"\b(current|currently|now|still|latest|most recent|most recently|so far|at the moment|these days|"
    r"up to date|anymore|right now|today)\b"
)
_COUNT_CUE = re.compile(r"^\s*how many (?!days|weeks|months|years|hours|minutes|times? (?:ago|between))([a-z' -]+?)\b"
                        r"(?:have|had|did|do|does|am|was|were|are|is|in|on|at|for|from|during)\b")


def is_update_question(question: str) -> bool:
    """The question asks for a value that may have changed ("current", "now", "still", "so far", ...)."""
    return bool(_UPDATE_CUES.search(question.lower()))


def counted_noun(question: str) -> str | None:
    """The thing a "how many X have/did I ..." question counts (``X``), or None for other questions."""
    m = _COUNT_CUE.match(question.lower())
    if not m:
        return None
    noun = " ".join(m.group(1).split())
    return noun or None


@dataclass(frozen=True)
class Supersession:
    old: Fact
    new: Fact

    def to_dict(self) -> dict[str, Any]:
        return {"subject": self.old.subject, "old": self.old.value, "old_date": self.old.session_date,
                "new": self.new.value, "new_date": self.new.session_date, "session_id": self.old.session_id}


def _order_key(indexed: tuple[int, Fact]) -> tuple[Any, int]:
    pos, fact = indexed
    day = parse_date(fact.session_date)
    return (day.toordinal() if day else 0, pos)


def resolve_updates(facts: Sequence[Fact]) -> tuple[list[Fact], list[Supersession]]:
    """``(current facts, supersessions)``: for each subject with several values, only the latest stays current.

    ``facts`` must be in history order (session order, then order within the session); facts without a subject
    or value pass through as current.
    """
    chains: dict[str, list[tuple[int, Fact]]] = {}
    for pos, fact in enumerate(facts):
        if fact.subject and fact.value:
            chains.setdefault(_subject_key(fact.subject), []).append((pos, fact))
    superseded_at: dict[int, Supersession] = {}
    for chain in chains.values():
        chain = sorted(chain, key=_order_key)
        latest = chain[-1][1]
        for pos, fact in chain[:-1]:
            if normalise(fact.value or "") != normalise(latest.value or ""):
                superseded_at[pos] = Supersession(fact, latest)
    current = [f for pos, f in enumerate(facts) if pos not in superseded_at]
    return current, [superseded_at[p] for p in sorted(superseded_at)]


def _subject_key(subject: str) -> str:
    return " ".join(stem(w) for w in normalise(subject).split())


def deduplicate(items: Sequence[str], threshold: float = DUPLICATE_SIMILARITY) -> tuple[list[str], int]:
    """``(unique items in first-seen order, number removed)``."""
    unique: list[str] = []
    for item in items:
        if not normalise(item):
            continue
        if any(similarity(item, kept) >= threshold for kept in unique):
            continue
        unique.append(item)
    removed = sum(1 for i in items if normalise(i)) - len(unique)
    return unique, removed


def facts_in_category(facts: Sequence[Fact], noun: str) -> list[Fact]:
    """User facts whose ``category`` names the same thing as ``noun`` (compared word by word, stemmed)."""
    want = [stem(w) for w in normalise(noun).split()]
    out = []
    for fact in facts:
        if fact.speaker != "user" or not fact.category:
            continue
        have = [stem(w) for w in normalise(fact.category).split()]
        if have and have == want:
            out.append(fact)
    return out
