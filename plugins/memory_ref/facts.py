"""The fact record the writer produces and every later layer reads, and its tolerant JSON-lines parser."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from typing import Any, Mapping

from . import temporal


@dataclass(frozen=True)
class Fact:
    """One atomic, dated statement extracted from a session."""

    text: str
    speaker: str = "user"
    """``user`` (about the user) or ``assistant`` (information the assistant gave)."""
    session_id: str = ""
    """The session alias the fact came from."""
    session_date: str = ""
    event_date: str | None = None
    """``YYYY/MM/DD``: the ``when`` expression resolved against the session date, else None."""
    when: str | None = None
    """The time expression the writer copied from the session ("yesterday", "last Friday", "March 5")."""
    subject: str | None = None
    """A short key for facts whose value may change over time (``instagram followers``)."""
    value: str | None = None
    """The value of ``subject`` at ``session_date`` (``1300``)."""
    category: str | None = None
    """A plural noun for countable things the user has/did (``bikes``, ``concerts``)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Fact":
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


def _clean(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text if text and text.lower() not in {"null", "none", "n/a", "unknown"} else None


def parse_fact_lines(text: str, session_id: str, session_date: str) -> tuple[list[Fact], int]:
    """Facts from a writer reply of JSON lines; returns ``(facts, malformed line count)``.

    Tolerates code fences, blank lines and a single JSON array instead of lines. A line without a ``fact`` text
    is malformed and skipped.
    """
    body = re.sub(r"```[a-zA-Z]*", "", text or "").strip()
    records: list[Any] = []
    malformed = 0
    if body.startswith("["):
        try:
            records = list(json.loads(body))
        except (ValueError, TypeError):
            records, malformed = [], 1
    else:
        for line in body.splitlines():
            line = line.strip().rstrip(",")
            if not line:
                continue
            try:
                records.append(json.loads(line))
            except ValueError:
                malformed += 1
    facts: list[Fact] = []
    session_day = temporal.parse_date(session_date)
    for rec in records:
        if not isinstance(rec, Mapping) or not _clean(rec.get("fact")):
            malformed += 1
            continue
        speaker = str(rec.get("speaker") or "user").strip().lower()
        when = _clean(rec.get("when"))
        facts.append(
            Fact(
                text=str(rec["fact"]).strip(),
                speaker="assistant" if speaker.startswith("assist") else "user",
                session_id=session_id,
                session_date=session_date,
                event_date=event_date(when, session_day),
                when=when,
                subject=_clean(rec.get("subject")),
                value=_clean(rec.get("value")),
                category=_clean(rec.get("category")),
            )
        )
    return facts, malformed


def event_date(when: str | None, session_day: Any) -> str | None:
    """``YYYY/MM/DD`` of the day ``when`` names, relative to the session's day; None if it names no single day."""
    if not when or session_day is None:
        return None
    day = temporal.resolve_day(when, session_day)
    return day.strftime("%Y/%m/%d") if day else None


def with_session(fact_dict: Mapping[str, Any], session_id: str, session_date: str) -> Fact:
    """A cached fact (stored without its session) placed in a session: alias, date, and the date of ``when``."""
    fact = Fact.from_dict(dict(fact_dict) | {"session_id": session_id, "session_date": session_date})
    return Fact(**(fact.to_dict() | {"event_date": event_date(fact.when, temporal.parse_date(session_date))}))
