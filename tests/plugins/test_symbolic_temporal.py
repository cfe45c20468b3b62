"""The date grammar and arithmetic of memory-ref's symbolic_temporal layer (no model involved)."""

from __future__ import annotations

import sys
from datetime import date
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins"))

from memory_ref import temporal  # noqa: E402
from memory_ref.temporal import (  # noqa: E402
    add_months,
    days_between,
    describe_offset,
    last_weekday,
    months_between,
    parse_date,
    parse_duration_question,
    resolve_expressions,
    span_answer,
    weeks_between,
)

SAT = date(2023, 5, 20)  # a Saturday
TUE = date(2023, 3, 21)  # a Tuesday


def one(question: str, qd: date) -> temporal.Resolved:
    found = resolve_expressions(question, qd)
    assert len(found) == 1, found
    return found[0]


def test_dataset_dates_parse_to_their_calendar_day():
    assert parse_date("2023/05/30 (Tue) 23:40") == date(2023, 5, 30)
    assert parse_date("2023/05/30") == date(2023, 5, 30)
    assert parse_date("2024-02-29") == date(2024, 2, 29)
    assert parse_date("2023/02/29") is None
    assert parse_date("yesterday") is None
    assert parse_date(None) is None


def test_days_between_is_calendar_difference_ignoring_time_of_day():
    assert days_between(parse_date("2023/05/30 (Tue) 23:50"), parse_date("2023/05/31 (Wed) 00:10")) == 1
    assert days_between(date(2023, 5, 31), date(2023, 5, 30)) == -1


def test_days_between_crosses_year_boundary_and_leap_day():
    assert days_between(date(2023, 12, 31), date(2024, 1, 1)) == 1
    assert days_between(date(2024, 2, 28), date(2024, 3, 1)) == 2  # leap year
    assert days_between(date(2023, 2, 28), date(2023, 3, 1)) == 1


def test_weeks_are_whole_weeks_floor_and_exact_fraction():
    assert weeks_between(date(2023, 5, 1), date(2023, 5, 26)) == (3, 3.57)
    assert weeks_between(date(2023, 5, 1), date(2023, 5, 15)) == (2, 2.0)
    assert weeks_between(date(2023, 5, 15), date(2023, 5, 1)) == (-2, -2.0)


def test_months_count_only_when_day_of_month_is_reached():
    assert months_between(date(2023, 1, 15), date(2023, 2, 15)) == 1
    assert months_between(date(2023, 1, 15), date(2023, 2, 14)) == 0
    assert months_between(date(2023, 1, 31), date(2023, 2, 28)) == 0
    assert months_between(date(2022, 11, 10), date(2023, 2, 10)) == 3
    assert months_between(date(2023, 2, 10), date(2022, 11, 10)) == -3


def test_add_months_clips_to_month_end_including_leap_february():
    assert add_months(date(2023, 3, 31), -1) == date(2023, 2, 28)
    assert add_months(date(2024, 3, 31), -1) == date(2024, 2, 29)
    assert add_months(date(2023, 1, 15), -1) == date(2022, 12, 15)


def test_last_weekday_is_strictly_before_even_on_the_same_weekday():
    assert last_weekday(SAT, 5) == date(2023, 5, 13)
    assert last_weekday(SAT, 4) == date(2023, 5, 19)
    assert last_weekday(TUE, 1) == date(2023, 3, 14)
    assert last_weekday(date(2024, 1, 2), 6) == date(2023, 12, 31)  # across the new year


@pytest.mark.parametrize(
    "question, qd, start, end",
    [
        ("What did I eat yesterday?", SAT, date(2023, 5, 19), date(2023, 5, 19)),
        ("What did I do the day before yesterday?", SAT, date(2023, 5, 18), date(2023, 5, 18)),
        ("Who did I meet with during the lunch last Tuesday?", date(2023, 4, 18), date(2023, 4, 11),
         date(2023, 4, 11)),
        ("Where did I go last Saturday?", SAT, date(2023, 5, 13), date(2023, 5, 13)),
        ("What did I buy 3 days ago?", SAT, date(2023, 5, 17), date(2023, 5, 17)),
        ("What did I buy three days ago?", date(2024, 3, 1), date(2024, 2, 27), date(2024, 2, 27)),
        ("What did I cook two weeks ago?", SAT, date(2023, 5, 3), date(2023, 5, 9)),
        ("What charity event did I join a month ago?", date(2023, 4, 18), date(2023, 3, 3), date(2023, 4, 2)),
        ("What did I read last month?", date(2024, 1, 10), date(2023, 12, 1), date(2023, 12, 31)),
        ("What did I read last month?", date(2024, 3, 31), date(2024, 2, 1), date(2024, 2, 29)),
        ("What did I watch this week?", date(2023, 5, 18), date(2023, 5, 15), date(2023, 5, 18)),
        ("Which gym class did I take last week?", date(2023, 5, 18), date(2023, 5, 8), date(2023, 5, 14)),
        ("Which bike did I fix the past weekend?", TUE, date(2023, 3, 18), date(2023, 3, 19)),
        ("What did I plant in March?", date(2023, 5, 1), date(2023, 3, 1), date(2023, 3, 31)),
        ("What did I plant in November?", date(2023, 5, 1), date(2022, 11, 1), date(2022, 11, 30)),
        ("What did I do on March 5th?", date(2023, 2, 1), date(2022, 3, 5), date(2022, 3, 5)),
        ("How many concerts did I attend in the past three months?", date(2023, 7, 21), date(2023, 4, 21),
         date(2023, 7, 21)),
        ("What did I start in the past month?", date(2023, 3, 31), date(2023, 2, 28), date(2023, 3, 31)),
        ("What did I cook for my friend a couple of days ago?", date(2022, 4, 12), date(2022, 4, 9),
         date(2022, 4, 11)),
        ("What did I do last year?", date(2024, 1, 1), date(2023, 1, 1), date(2023, 12, 31)),
    ],
)
def test_relative_expressions_resolve_to_absolute_ranges(question, qd, start, end):
    r = one(question, qd)
    assert (r.start, r.end) == (start, end), r


def test_questions_without_time_expressions_resolve_nothing():
    assert resolve_expressions("What is my cat's name?", SAT) == []
    assert resolve_expressions("Where may I find the receipt?", SAT) == []


def test_expressions_are_returned_in_text_order_without_overlaps():
    found = resolve_expressions("Did I run yesterday or 3 days ago, or last Saturday?", SAT)
    assert [r.expression for r in found] == ["yesterday", "3 days ago", "last saturday"]


def test_describe_offset_says_days_before_or_after_the_current_date():
    assert describe_offset(date(2023, 5, 10), SAT) == "2023/05/10 (Wed), 10 days before the current date"
    assert describe_offset(date(2023, 5, 19), SAT) == "2023/05/19 (Fri), 1 day before the current date"
    assert describe_offset(SAT, SAT) == "2023/05/20 (Sat), the same day as the current date"
    assert describe_offset(date(2023, 5, 22), SAT) == "2023/05/22 (Mon), 2 days after the current date"


def test_annotate_sessions_marks_unparseable_dates_as_none():
    out = temporal.annotate_sessions(["2023/05/10 (Wed) 09:00", "garbage"], "2023/05/20 (Sat) 10:00")
    assert out == ["2023/05/10 (Wed), 10 days before the current date", None]


def test_order_events_sorts_earliest_first_and_keeps_ties_stable():
    events = [("b", date(2023, 2, 1)), ("a", date(2023, 1, 1)), ("c", date(2023, 2, 1))]
    assert [e[0] for e in temporal.order_events(events)] == ["a", "b", "c"]


@pytest.mark.parametrize(
    "question, kind, unit, events",
    [
        ("How many days ago did I attend the Holiday Market?", "ago", "day", ("attend the holiday market",)),
        ("How many weeks ago did I meet up with my aunt?", "ago", "week", ("meet up with my aunt",)),
        ("How many days before I bought the iPhone 13 Pro did I attend the Holiday Market?", "between", "day",
         ("attend the holiday market", "bought the iphone 13 pro")),
        ("How many days after I started the course did I finish the first module?", "between", "day",
         ("started the course", "finish the first module")),
        ("How many months passed between my move to Denver and my promotion?", "between", "month",
         ("move to denver", "promotion")),
    ],
)
def test_duration_questions_are_recognised_with_their_events(question, kind, unit, events):
    parsed = parse_duration_question(question)
    assert parsed is not None
    assert (parsed.kind, parsed.unit, parsed.events) == (kind, unit, events)


def test_non_duration_questions_are_not_parsed_as_spans():
    assert parse_duration_question("How many bikes do I own?") is None
    assert parse_duration_question("What did I do 3 days ago?") is None


def test_span_answers_use_the_asked_unit_and_show_the_days():
    assert span_answer("day", date(2023, 12, 3), date(2023, 12, 10)) == "7 days"
    assert span_answer("day", date(2023, 12, 9), date(2023, 12, 10)) == "1 day"
    assert span_answer("week", date(2023, 5, 1), date(2023, 5, 26)) == "3 weeks (25 days, 3.57 weeks)"
    assert span_answer("month", date(2023, 1, 15), date(2023, 4, 20)) == "3 months (95 days)"
