"""memory-ref's symbolic_resolver: latest value wins for changing facts; counted items are deduplicated."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins"))

from memory_ref import resolver  # noqa: E402
from memory_ref.facts import Fact, parse_fact_lines  # noqa: E402


def fact(text, day, subject=None, value=None, category=None, sid="session_001", speaker="user"):
    return Fact(text=text, speaker=speaker, session_id=sid, session_date=f"{day} (Mon) 10:00", subject=subject,
                value=value, category=category)


def test_latest_session_date_wins_and_older_value_is_superseded():
    old = fact("The user has 1000 Instagram followers.", "2023/03/01", "instagram followers", "1000", sid="session_002")
    new = fact("The user has 1300 Instagram followers.", "2023/05/01", "Instagram followers", "1,300", sid="session_001")
    other = fact("The user adopted a cat.", "2023/01/01")
    current, superseded = resolver.resolve_updates([new, old, other])  # history order need not be date order
    assert current == [new, other]
    assert [(s.old.value, s.new.value) for s in superseded] == [("1000", "1,300")]
    assert superseded[0].to_dict()["old_date"].startswith("2023/03/01")


def test_same_value_repeated_is_not_a_supersession():
    a = fact("The user runs 5 km.", "2023/03/01", "running distance", "5 km")
    b = fact("The user runs 5 km.", "2023/04/01", "running distance", "5 KM")
    current, superseded = resolver.resolve_updates([a, b])
    assert superseded == [] and current == [a, b]


def test_same_day_tie_goes_to_the_later_fact_in_history_order():
    a = fact("The user leads 4 engineers.", "2023/06/01", "engineers led", "4")
    b = fact("The user leads 5 engineers.", "2023/06/01", "engineers led", "5")
    current, superseded = resolver.resolve_updates([a, b])
    assert current == [b] and superseded[0].old == a


def test_subjects_match_after_normalising_plural_and_case():
    a = fact("x", "2023/01/01", "Pages read", "100")
    b = fact("y", "2023/02/01", "page read", "220")
    _, superseded = resolver.resolve_updates([a, b])
    assert len(superseded) == 1


def test_update_cues_are_detected():
    assert resolver.is_update_question("How many followers do I have on Instagram now?")
    assert resolver.is_update_question("What is my current job title?")
    assert resolver.is_update_question("How many pages have I read so far?")
    assert not resolver.is_update_question("What did I name my cat?")


def test_counted_noun_is_extracted_only_from_counting_questions():
    assert resolver.counted_noun("How many bikes do I own?") == "bikes"
    assert resolver.counted_noun("How many music albums or EPs have I purchased?") == "music albums or eps"
    assert resolver.counted_noun("How many days ago did I go hiking?") is None
    assert resolver.counted_noun("How many weeks between the trips?") is None
    assert resolver.counted_noun("What did I buy?") is None


def test_deduplicate_drops_near_identical_mentions_and_counts_them():
    items = ["The user attended a Coldplay concert.", "the user attended a coldplay concert!",
             "The user attended a jazz concert.", "", "The user attended a Coldplay concert"]
    unique, removed = resolver.deduplicate(items)
    assert unique == ["The user attended a Coldplay concert.", "The user attended a jazz concert."]
    assert removed == 2


def test_deduplicate_keeps_distinct_items_that_share_words():
    unique, removed = resolver.deduplicate(["The user bought a road bike.", "The user bought a mountain bike."])
    assert removed == 0 and len(unique) == 2


def test_category_match_is_exact_after_stemming():
    facts = [fact("a", "2023/01/01", category="bikes"), fact("b", "2023/01/01", category="Bike"),
             fact("c", "2023/01/01", category="road bikes"), fact("d", "2023/01/01", category="bikes", speaker="assistant")]
    assert [f.text for f in resolver.facts_in_category(facts, "bikes")] == ["a", "b"]


def test_fact_lines_parse_tolerates_fences_arrays_and_bad_lines():
    text = '```json\n{"fact": "The user has a cat.", "speaker": "user", "when": null}\nnot json\n' \
           '{"speaker": "user"}\n{"fact": "Try the Thai place.", "speaker": "Assistant", "subject": "none"}\n```'
    facts, malformed = parse_fact_lines(text, "session_004", "2023/05/20 (Sat) 10:00")
    assert [f.text for f in facts] == ["The user has a cat.", "Try the Thai place."]
    assert facts[1].speaker == "assistant" and facts[1].subject is None
    assert facts[0].session_id == "session_004" and facts[0].event_date is None
    assert malformed == 2
    arr, bad = parse_fact_lines('[{"fact": "x"}, 3]', "s", "d")
    assert [f.text for f in arr] == ["x"] and bad == 1


def test_fact_when_resolves_to_a_single_day_relative_to_the_session_date():
    text = "\n".join(json.dumps({"fact": f, "when": w}) for f, w in [
        ("a", "yesterday"), ("b", "last Friday"), ("c", "two weeks ago"), ("d", "March 5"), ("e", "this morning")])
    facts, _ = parse_fact_lines(text, "session_001", "2024/01/02 (Tue) 09:00")
    assert [f.event_date for f in facts] == ["2024/01/01", "2023/12/29", None, "2023/03/05", "2024/01/02"]
    assert facts[1].when == "last Friday"
