"""Deterministic date arithmetic for memory-ref (the ``symbolic_temporal`` layer). No model is involved.

Conventions (tested in ``tests/plugins/test_symbolic_temporal.py``):

- Session and question dates parse as ``%Y/%m/%d (%a) %H:%M``; only the calendar day matters below.
- Days between two dates = the calendar-day difference (times of day ignored; 23:50 -> 00:10 is one day).
- Weeks between = ``days // 7``, reported together with the exact fraction ``days / 7``.
- Months between = whole calendar months: from Jan 31 to Feb 28 is 0 months, Jan 15 to Feb 15 is 1.
- "last <weekday>" = the most recent such weekday strictly before the question date; asked on that weekday it
  means seven days earlier ("last Saturday" asked on a Saturday is the previous Saturday).
- "last weekend" / "the past weekend" = the Saturday given by "last Saturday" and the Sunday after it.
- "this week" = Monday of the question date's week up to the question date; "last week" = the Monday-Sunday week
  before it. "last month" / "last year" = the previous calendar month / year; "this month" = the 1st up to today.
- "N days ago" = the question date minus N days; "N weeks ago" = minus 7N days, as a +-3 day window; "N months ago"
  = the same day N calendar months earlier (clipped to month end), as a +-15 day window. "a couple of" = 2 and
  "a few" = 3, each widened by one unit either way.
- "in the past N days/weeks/months" = from N units before the question date up to it.
- "in <Month>" / "<Month> <day>" without a year = the most recent such month/day not after the question date.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any, Iterable, Sequence

DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")
_MONTH_ALIASES = {m[:3]: i + 1 for i, m in enumerate(MONTHS)} | {m: i + 1 for i, m in enumerate(MONTHS)}
_MONTH_ALIASES["sept"] = 9

NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "twenty": 20, "thirty": 30,
}
_FUZZY_AMOUNTS = {"a couple of": 2, "a couple": 2, "couple of": 2, "a few": 3, "few": 3, "several": 3}


@dataclass(frozen=True)
class Resolved:
    """One relative time expression of the question, pinned to absolute dates (inclusive range)."""

    expression: str
    start: date
    end: date
    kind: str
    """``day``, ``window``, ``week``, ``weekend``, ``month``, ``year`` or ``range``."""

    def to_dict(self) -> dict[str, Any]:
        return {"expression": self.expression, "start": self.start.isoformat(), "end": self.end.isoformat(),
                "kind": self.kind}

    def contains(self, day: date) -> bool:
        return self.start <= day <= self.end


# --------------------------------------------------------------------------- parsing dates


def parse_date(text: str | None) -> date | None:
    """The calendar day of a dataset date (``2023/05/20 (Sat) 14:02``), an ISO date, or ``YYYY/MM/DD``; else None."""
    if not text:
        return None
    text = str(text).strip()
    try:
        return datetime.strptime(text, DATE_FORMAT).date()
    except ValueError:
        pass
    m = re.match(r"^(\d{4})[/-](\d{1,2})[/-](\d{1,2})", text)
    if not m:
        return None
    try:
        return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


def format_day(day: date) -> str:
    """``2023/05/20 (Sat)``: the dataset's style without the time."""
    return day.strftime("%Y/%m/%d (%a)")


# --------------------------------------------------------------------------- arithmetic


def days_between(earlier: date, later: date) -> int:
    """Calendar-day difference ``later - earlier`` (negative when ``later`` is before ``earlier``)."""
    return (later - earlier).days


def weeks_between(earlier: date, later: date) -> tuple[int, float]:
    """``(whole weeks, exact weeks)`` = ``(days // 7, days / 7)`` for a non-negative span (sign kept otherwise)."""
    days = days_between(earlier, later)
    whole = abs(days) // 7
    return (whole if days >= 0 else -whole), round(days / 7, 2)


def months_between(earlier: date, later: date) -> int:
    """Whole calendar months from ``earlier`` to ``later`` (a month counts once its day-of-month is reached)."""
    sign = 1
    if later < earlier:
        earlier, later, sign = later, earlier, -1
    months = (later.year - earlier.year) * 12 + (later.month - earlier.month)
    if later.day < earlier.day:
        months -= 1
    return sign * months


def add_months(day: date, months: int) -> date:
    """``day`` shifted by whole calendar months, clipped to the end of the target month."""
    index = day.year * 12 + (day.month - 1) + months
    year, month = divmod(index, 12)
    month += 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def last_weekday(reference: date, weekday: int) -> date:
    """The most recent ``weekday`` (0 = Monday) strictly before ``reference``."""
    back = (reference.weekday() - weekday) % 7 or 7
    return reference - timedelta(days=back)


def describe_offset(day: date, question_day: date) -> str:
    """``2023/05/20 (Sat), 10 days before the current date`` (or ``the same day as`` / ``after``)."""
    diff = days_between(day, question_day)
    if diff == 0:
        rel = "the same day as the current date"
    elif diff > 0:
        rel = f"{diff} day{'s' if diff != 1 else ''} before the current date"
    else:
        rel = f"{-diff} day{'s' if diff != -1 else ''} after the current date"
    return f"{format_day(day)}, {rel}"


def order_events(events: Iterable[tuple[str, date]]) -> list[tuple[str, date]]:
    """Events sorted earliest first (stable for ties)."""
    return sorted(events, key=lambda e: e[1])


# --------------------------------------------------------------------------- the question's expressions


def _amount(word: str) -> tuple[int, int] | None:
    """``(value, slack)``: digits and number words are exact (slack 0); fuzzy words get one unit of slack."""
    word = word.strip().lower()
    if word.isdigit():
        return int(word), 0
    if word in _FUZZY_AMOUNTS:
        return _FUZZY_AMOUNTS[word], 1
    if word in NUMBER_WORDS:
        return NUMBER_WORDS[word], 0
    return None


_NUM = r"(\d+|a couple of|a couple|couple of|a few|few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|twenty|thirty)"
_UNIT = r"(day|week|month|year)s?"
_WEEKDAY = r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_MONTH = r"(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)"


def _shift(day: date, unit: str, n: int) -> date:
    if unit == "day":
        return day - timedelta(days=n)
    if unit == "week":
        return day - timedelta(days=7 * n)
    if unit == "month":
        return add_months(day, -n)
    return add_months(day, -12 * n)


def _ago(expr: str, qd: date, n: int, slack: int, unit: str) -> Resolved:
    point = _shift(qd, unit, n)
    if unit == "day" and not slack:
        return Resolved(expr, point, point, "day")
    if slack:
        start, end = _shift(qd, unit, n + slack), _shift(qd, unit, max(n - slack, 0))
    else:
        half = {"day": 0, "week": 3, "month": 15, "year": 182}[unit]
        start, end = point - timedelta(days=half), point + timedelta(days=half)
    return Resolved(expr, start, min(end, qd), "window")


def _month_range(year: int, month: int) -> tuple[date, date]:
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def resolve_expressions(question: str, question_day: date) -> list[Resolved]:
    """Every relative time expression found in ``question``, resolved against ``question_day``, in text order."""
    q = question.lower()
    qd = question_day
    found: list[tuple[int, Resolved]] = []
    taken: list[tuple[int, int]] = []

    def add(match: re.Match[str], resolved: Resolved | None) -> None:
        span = match.span()
        if resolved is None or any(a < span[1] and span[0] < b for a, b in taken):
            return
        taken.append(span)
        found.append((span[0], resolved))

    for m in re.finditer(r"\bthe day before yesterday\b", q):
        add(m, Resolved(m.group(0), qd - timedelta(days=2), qd - timedelta(days=2), "day"))
    for m in re.finditer(r"\byesterday\b", q):
        add(m, Resolved(m.group(0), qd - timedelta(days=1), qd - timedelta(days=1), "day"))
    for m in re.finditer(r"\b(?:earlier )?(?:today|tonight|this morning|this afternoon|this evening)\b", q):
        add(m, Resolved(m.group(0), qd, qd, "day"))
    for m in re.finditer(rf"\b{_NUM} {_UNIT} ago\b", q):
        amount = _amount(m.group(1))
        if amount:
            add(m, _ago(m.group(0), qd, amount[0], amount[1], m.group(2)))
    for m in re.finditer(rf"\b(?:in |during |over |within )?the (?:past|last) {_NUM} {_UNIT}\b", q):
        amount = _amount(m.group(1))
        if amount:
            n = amount[0] + amount[1]
            add(m, Resolved(m.group(0), _shift(qd, m.group(2), n), qd, "range"))
    for m in re.finditer(rf"\b(?:in |during |over |within )?the (?:past|last) {_UNIT}\b", q):
        add(m, Resolved(m.group(0), _shift(qd, m.group(1), 1), qd, "range"))
    for m in re.finditer(rf"\b(?:last|this past|the past) {_WEEKDAY}\b", q):
        day = last_weekday(qd, WEEKDAYS.index(m.group(1)))
        add(m, Resolved(m.group(0), day, day, "day"))
    for m in re.finditer(r"\b(?:last|this past|the past|past) weekend\b", q):
        saturday = last_weekday(qd, 5)
        add(m, Resolved(m.group(0), saturday, saturday + timedelta(days=1), "weekend"))
    for m in re.finditer(r"\blast week\b", q):
        monday = qd - timedelta(days=qd.weekday() + 7)
        add(m, Resolved(m.group(0), monday, monday + timedelta(days=6), "week"))
    for m in re.finditer(r"\bthis week\b", q):
        add(m, Resolved(m.group(0), qd - timedelta(days=qd.weekday()), qd, "week"))
    for m in re.finditer(r"\blast month\b", q):
        prev = add_months(qd.replace(day=1), -1)
        add(m, Resolved(m.group(0), *_month_range(prev.year, prev.month), "month"))
    for m in re.finditer(r"\bthis month\b", q):
        add(m, Resolved(m.group(0), qd.replace(day=1), qd, "month"))
    for m in re.finditer(r"\blast year\b", q):
        add(m, Resolved(m.group(0), date(qd.year - 1, 1, 1), date(qd.year - 1, 12, 31), "year"))
    for m in re.finditer(rf"\b{_MONTH} (\d{{1,2}})(?:st|nd|rd|th)?(?:,? (\d{{4}}))?\b", q):
        day = _month_day(qd, _MONTH_ALIASES[m.group(1)], int(m.group(2)), m.group(3))
        if day:
            add(m, Resolved(m.group(0), day, day, "day"))
    for m in re.finditer(rf"\b(?:in|during|since|of) (?:early |late |mid-?)?{_MONTH}(?: (\d{{4}}))?\b", q):
        month = _MONTH_ALIASES[m.group(1)]
        year = int(m.group(2)) if m.group(2) else (qd.year if month <= qd.month else qd.year - 1)
        add(m, Resolved(m.group(0), *_month_range(year, month), "month"))
    return [r for _, r in sorted(found, key=lambda x: x[0])]


def resolve_day(expression: str | None, reference: date) -> date | None:
    """The single day ``expression`` ("yesterday", "last Friday", "3 days ago", "March 5") names relative to
    ``reference``; None when it names no day or a wider range ("last month", "two weeks ago")."""
    if not expression:
        return None
    found = resolve_expressions(expression, reference)
    if len(found) == 1 and found[0].start == found[0].end:
        return found[0].start
    return None


def _month_day(qd: date, month: int, day: int, year: str | None) -> date | None:
    try:
        if year:
            return date(int(year), month, day)
        candidate = date(qd.year, month, day)
        return candidate if candidate <= qd else date(qd.year - 1, month, day)
    except ValueError:
        return None


# --------------------------------------------------------------------------- question shapes


@dataclass(frozen=True)
class DurationQuestion:
    """A question asking for a span: ``since`` (how long ago was E) or ``between`` (from event A to event B)."""

    kind: str
    """``ago`` or ``between``."""
    unit: str
    """``day``, ``week``, ``month`` or ``year``."""
    events: tuple[str, ...]
    """The event phrases, as written in the question (one for ``ago``, two for ``between``)."""


def parse_duration_question(question: str) -> DurationQuestion | None:
    """Recognise "how many days ago did I X", "how many weeks between X and Y", "how many days before X did I Y"."""
    q = " ".join(question.lower().strip().rstrip("?.!").split())
    m = re.match(rf"^how many {_UNIT} ago did i (.+)$", q)
    if m:
        return DurationQuestion("ago", m.group(1), (m.group(2).strip(),))
    m = re.match(rf"^how many {_UNIT} (?:have )?(?:passed |elapsed |were there |went by )?between (.+?) and (.+)$", q)
    if m:
        return DurationQuestion("between", m.group(1), (_strip_event(m.group(2)), _strip_event(m.group(3))))
    m = re.match(rf"^how many {_UNIT} (before|after) (.+?) did i (.+)$", q)
    if m:
        anchor, event = _strip_event(m.group(3)), _strip_event(m.group(4))
        ordered = (event, anchor) if m.group(2) == "before" else (anchor, event)
        return DurationQuestion("between", m.group(1), ordered)
    return None


def _strip_event(text: str) -> str:
    text = re.sub(r"^(the day |when )?(i |my )", "", text.strip())
    return text.strip(" ,")


def span_answer(unit: str, earlier: date, later: date) -> str:
    """A short answer for a computed span, in the unit the question asked for."""
    days = days_between(earlier, later)
    if unit == "day":
        return f"{days} day{'s' if abs(days) != 1 else ''}"
    if unit == "week":
        whole, exact = weeks_between(earlier, later)
        return f"{whole} week{'s' if abs(whole) != 1 else ''} ({days} days, {exact:g} weeks)"
    if unit == "month":
        months = months_between(earlier, later)
        return f"{months} month{'s' if abs(months) != 1 else ''} ({days} days)"
    years = months_between(earlier, later) // 12
    return f"{years} year{'s' if abs(years) != 1 else ''} ({days} days)"


def annotate_sessions(dates: Sequence[str], question_date: str) -> list[str | None]:
    """``describe_offset`` for each session date (None where a date does not parse)."""
    qd = parse_date(question_date)
    out: list[str | None] = []
    for text in dates:
        day = parse_date(text)
        out.append(describe_offset(day, qd) if day and qd else None)
    return out
