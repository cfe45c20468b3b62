"""JSON other people wrote is read within bounds: depth, sizes, Unicode text, finite numbers; one line per fault."""

from __future__ import annotations

import io
import json

import ijson
import pytest

from lme.core import bounded_json
from lme.core.bounded_json import JsonRefused, Limits
from lme.core.errors import UserError


def events(text: str | bytes):
    return ijson.basic_parse(io.BytesIO(text.encode() if isinstance(text, str) else text), use_float=True)


def test_a_refusal_is_a_user_error_and_a_value_error():
    with pytest.raises(UserError):
        bounded_json.loads("[" * 100 + "]" * 100, "f.json")
    with pytest.raises(ValueError):  # readers that skip what they cannot parse skip these too
        bounded_json.loads("{", "f.json")


@pytest.mark.parametrize("text, words", [
    ("[" * 100_000 + "]" * 100_000, "nested deeper than 32 levels"),
    ('{"loop": ' + "[" * 40 + "]" * 40 + "}", "nested deeper than 32 levels (at loop[0]"),
    ('{"requestTimeoutSeconds": NaN}', "requestTimeoutSeconds is NaN, not a finite number"),
    ('{"errorThreshold": Infinity}', "errorThreshold is Infinity, not a finite number"),
    ('{"a": [1, -Infinity]}', "a[1] is -Infinity"),
    ('{"x": 1e999}', "x is Infinity"),
    ('{"question": "why\\udfff"}', "question holds a lone surrogate (\\udfff)"),
    ('{"\\ud800": 1}', "a key under the top level holds a lone surrogate"),
    ("1" * 5000, "an integer of more than 4,300 digits"),
    ('{"a": 1', "not valid JSON (Expecting ',' delimiter at line 1 column 8)"),
])
def test_loads_refuses_in_one_line_naming_where(text, words):
    with pytest.raises(JsonRefused) as caught:
        bounded_json.loads(text, "config.json")
    message = str(caught.value)
    assert message.startswith("config.json: ") and words in message, message
    assert "\n" not in message


def test_loads_reads_what_is_within_bounds():
    assert bounded_json.loads('{"a": [1, 2.5, "\\ud83d\\ude00", null]}', "f") == {"a": [1, 2.5, "\U0001F600", None]}
    assert bounded_json.loads(b'{"x": "caf\xc3\xa9"}', "f") == {"x": "café"}
    deep_ok = "[" * 32 + "]" * 32
    assert bounded_json.loads(deep_ok, "f") == json.loads(deep_ok)
    with pytest.raises(JsonRefused, match="not UTF-8 text"):
        bounded_json.loads(b'{"x": "\xff"}', "f")


def test_size_bounds_of_a_document_and_of_one_string():
    small = Limits(document_bytes=100, string_chars=10)
    with pytest.raises(JsonRefused, match="more than the 100 a file of this kind may hold"):
        bounded_json.loads(" " * 101, "f", limits=small)
    with pytest.raises(JsonRefused, match="a.b holds 11 characters, more than the 10"):
        bounded_json.loads('{"a": {"b": "' + "x" * 11 + '"}}', "f", limits=small)


def test_items_streams_the_top_level_array_and_names_the_item_that_breaks_a_bound():
    assert list(bounded_json.items(events('[{"question_id": "a", "x": [1, {"y": []}]}, 3, "s"]'), "d")) == [
        {"question_id": "a", "x": [1, {"y": []}]}, 3, "s"]
    assert list(bounded_json.items(events('{"question_id": "a"}'), "d")) == []  # not an array: the caller says so
    for scalar in ('"a string"', "3", "null"):
        assert list(bounded_json.items(events(scalar), "d")) == []  # a top-level string too, not an AttributeError
    with pytest.raises(JsonRefused) as caught:
        list(bounded_json.items(events('[{"question_id": "ok"}, {"question_id": "q7", "extra": '
                                       + "[" * 1000 + "]" * 1000 + "}]"), "data.json"))
    assert str(caught.value).startswith("data.json: item 1 (question_id q7), under 'extra': nested deeper than 32")
    with pytest.raises(JsonRefused, match=r"item 0 \(question_id q2\), under 'question': holds text that is not "):
        list(bounded_json.items(events('[{"question_id": "q2", "question": "\\udfff"}]'), "d"))
    with pytest.raises(JsonRefused, match="item 0, under 'a': a string holds 11 characters"):
        list(bounded_json.items(events('[{"a": "' + "x" * 11 + '"}]'), "d", limits=Limits(string_chars=10)))


def test_a_nesting_bomb_is_refused_at_the_first_level_past_the_bound():
    """Memory and time: tests/benchmarks/bench_hostile_json.py (22.9 GB before; a few MiB now)."""
    depth = 200_000
    bomb = ('[{"question_id": "q1", "x": "y"}, {"question_id": "boom", "extra": ' + "[" * depth + "]" * depth
            + "}]").encode()
    built = []

    def counting(source):
        for event, value in source:
            built.append(event)
            yield event, value

    with pytest.raises(JsonRefused, match="item 1 \\(question_id boom\\)"):
        list(bounded_json.items(counting(events(bomb)), "bomb.json"))
    assert built.count("start_array") == 32  # the file's array, then 31 levels of the bomb: no more were taken
