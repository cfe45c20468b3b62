"""The codec writes a record's JSON form from its fields and reads it back: declared names, left-out keys, kept
unknown keys and key order, nested records, tuples and float fields."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

from lme.core import codec
from lme.core.codec import EXTRA, KEY_ORDER, Record


@dataclass(frozen=True)
class Inner(Record):
    n: int
    share: float | None = None


@dataclass(frozen=True)
class Outer(Record):
    name: str
    inners: tuple[Inner, ...] = ()
    by_type: Mapping[str, Inner] = codec.field(default_factory=dict)
    pricing: str = codec.field(default="sync", key="billing", omit="sync")
    note: str | None = codec.field(default=None, omit=None)
    schemaVersion: str = "1.0"
    __codec_order__ = ("schemaVersion",)


@dataclass(frozen=True)
class Kept(Record):
    a: int = 0
    b: int = 0
    extra: Mapping[str, Any] = codec.field(default_factory=dict, role=EXTRA)
    key_order: tuple[str, ...] = codec.field(default=(), role=KEY_ORDER)


def test_a_record_writes_its_fields_in_order_with_declared_names_and_left_out_keys():
    record = Outer("x", (Inner(1, 1),), {"t": Inner(2)})
    assert json.dumps(record.to_dict()) == json.dumps(
        {"schemaVersion": "1.0", "name": "x", "inners": [{"n": 1, "share": 1.0}],
         "by_type": {"t": {"n": 2, "share": None}}})
    batch = Outer("x", pricing="batch", note="n").to_dict()
    assert batch["billing"] == "batch" and batch["note"] == "n" and "pricing" not in batch


def test_reading_back_gives_the_same_record_with_nested_records_and_tuples():
    record = Outer("x", (Inner(1, 0.5),), {"t": Inner(2)}, pricing="batch")
    assert Outer.from_dict(json.loads(json.dumps(record.to_dict()))) == record


def test_a_float_field_read_or_written_as_an_int_is_a_float():
    assert Inner.from_dict({"n": 1, "share": 1}).share == 1.0 and isinstance(Inner(1, 0).to_dict()["share"], float)


def test_unknown_keys_and_key_order_are_written_back_as_read():
    d = {"b": 2, "z": [1], "a": 1}
    assert list(Kept.from_dict(d).to_dict().items()) == list(d.items())
    assert list(Kept.from_dict({"a": 1}).to_dict()) == ["a"]  # a key the object lacked stays out
    assert list(Kept(a=1).to_dict()) == ["a", "b"]


def test_keys_lists_the_file_names_in_written_order():
    assert codec.keys(Outer) == ("schemaVersion", "name", "inners", "by_type", "billing", "note")
