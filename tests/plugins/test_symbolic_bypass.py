"""memory-ref's symbolic_bypass: answers without the reader only when dated facts fully determine the answer."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins"))

from memory_ref import bypass  # noqa: E402
from memory_ref.facts import Fact  # noqa: E402

QD = "2023/12/10 (Sun) 19:41"


def fact(text, event_date=None, category=None, session_date="2023/12/01 (Fri) 10:00", speaker="user"):
    return Fact(text=text, speaker=speaker, session_id="session_001", session_date=session_date,
                event_date=event_date, category=category)


MARKET = fact("The user attended the Holiday Market downtown.", "2023/11/26")
IPHONE = fact("The user bought the iPhone 13 Pro.", "2023/12/03")
NOISE = fact("The user likes green tea.", None)


def test_days_between_two_uniquely_matched_dated_events_is_answered_directly():
    d = bypass.decide("How many days before I bought the iPhone 13 Pro did I attend the Holiday Market?", QD,
                      [NOISE, MARKET, IPHONE])
    assert d.taken and d.answer == "7 days"
    assert [e["date"] for e in d.details["events"]] == ["2023-11-26", "2023-12-03"]


def test_days_ago_counts_to_the_question_date():
    d = bypass.decide("How many days ago did I attend the Holiday Market?", QD, [MARKET])
    assert d.taken and d.answer == "14 days"


def test_weeks_ago_answer_is_whole_weeks_with_days():
    d = bypass.decide("How many weeks ago did I attend the Holiday Market?", QD, [MARKET])
    assert d.taken and d.answer.startswith("2 weeks (14 days")


def test_event_without_a_pinned_date_falls_through_to_the_reader():
    undated = fact("The user attended the Holiday Market downtown.", None)
    d = bypass.decide("How many days ago did I attend the Holiday Market?", QD, [undated])
    assert not d.taken and "no dated fact" in d.reason


def test_two_dates_matching_the_same_event_are_ambiguous():
    again = fact("The user attended the Holiday Market again.", "2023/12/02")
    d = bypass.decide("How many days ago did I attend the Holiday Market?", QD, [MARKET, again])
    assert not d.taken and "ambiguous" in d.reason


def test_weak_match_is_not_taken():
    d = bypass.decide("How many days ago did I attend the winter craft fair?", QD, [MARKET])
    assert not d.taken


def test_event_dated_after_the_question_is_refused():
    future = fact("The user attended the Holiday Market.", "2023/12/20")
    d = bypass.decide("How many days ago did I attend the Holiday Market?", QD, [future])
    assert not d.taken and "after the current date" in d.reason


def test_which_first_picks_the_earlier_dated_event():
    league = fact("The user joined the volleyball league.", "2023/04/02")
    run = fact("The user ran the charity 5K run for the children's hospital.", "2023/04/20")
    d = bypass.decide("Which event did I participate in first, the volleyball league or the charity 5K run?",
                      QD, [run, league])
    assert d.taken and d.answer.startswith("volleyball league")


def test_which_first_on_the_same_day_falls_through():
    a = fact("The user joined the volleyball league.", "2023/04/02")
    b = fact("The user ran the charity 5K run.", "2023/04/02")
    d = bypass.decide("Which did I do first, the volleyball league or the charity 5K run?", QD, [a, b])
    assert not d.taken and "same day" in d.reason


def test_counts_go_to_the_reader_unless_bypass_counts_is_on():
    bikes = [fact("The user bought a road bike.", category="bikes"),
             fact("The user owns a mountain bike.", category="bikes"),
             fact("The user bought a road bike!", category="bikes")]
    off = bypass.decide("How many bikes do I own?", QD, bikes)
    assert not off.taken and "bypass_counts off" in off.reason
    on = bypass.decide("How many bikes do I own?", QD, bikes, bypass_counts=True)
    assert on.taken and on.answer.startswith("2 (") and on.details["deduplicated"] == 1


def test_count_with_a_time_qualifier_is_not_bypassed():
    bikes = [fact("The user bought a road bike.", category="bikes"), fact("The user owns a mountain bike.",
                                                                          category="bikes")]
    d = bypass.decide("How many bikes did I buy last month?", QD, bikes, bypass_counts=True)
    assert not d.taken and "time qualifier" in d.reason


def test_other_questions_fall_through_with_a_reason():
    d = bypass.decide("What is my cat's name?", QD, [MARKET])
    assert not d.taken and d.reason == "question shape not handled symbolically"
    assert d.to_dict() == {"taken": False, "reason": "question shape not handled symbolically"}
