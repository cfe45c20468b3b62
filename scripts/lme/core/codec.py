"""The JSON form of a record, derived from its fields: ``to_dict``/``from_dict`` written once, for every record.

A record is a frozen dataclass. Its JSON object has one key per field, in field order, holding the field's value in
JSON form (a nested record's object, a tuple's list, a mapping's object, a float field's number as a float). What
differs from that is declared on the field (``codec.field``), never written as a method; the fields that keep the
keys this version does not know (``EXTRA``) and their order (``KEY_ORDER``) make a record written back the object it
was read from. A class attribute ``__codec_order__`` names keys written before the others (a field with a default
that the file has always written first).

``from_dict`` reads today's shape only: an older file is brought up to it by ``lme.core.migrations`` first, and the
reader that checks it against its schema runs before. Standard library only: this module is imported by every
command at start-up.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import sys
import types
import typing
from typing import Any, Callable, Mapping

_UNSET = object()
EXTRA = "extra"
"""``field(role=EXTRA)``: the field (a Mapping) holds the keys this version does not know; written back last, or
where ``KEY_ORDER`` puts them."""
KEY_ORDER = "key_order"
"""``field(role=KEY_ORDER)``: the field (a tuple of keys) holds the read object's key order, used when writing."""


def field(*, default: Any = dataclasses.MISSING, default_factory: Any = dataclasses.MISSING,
          key: str | None = None, omit: Any = _UNSET, omit_if: Callable[[Any], bool] | None = None,
          role: str | None = None, decode: Callable[[Any], Any] | None = None, compare: bool = True) -> Any:
    """``dataclasses.field`` with the codec's metadata.

    ``key``: the file's name for the field. ``omit``: the key is left out when the value is this one (``None``,
    ``False``, ``"sync"``, ...). ``omit_if``: left out when this holds of the record. ``role``: ``EXTRA`` or
    ``KEY_ORDER``. ``decode``: reads the JSON value where the field's type does not say how (a union of records).
    ``compare``: as ``dataclasses.field``'s."""
    meta = {name: value for name, value in (("key", key), ("omit_if", omit_if), ("role", role), ("decode", decode))
            if value is not None}
    if omit is not _UNSET:
        meta["omit"] = omit
    return dataclasses.field(default=default, default_factory=default_factory, compare=compare,
                             metadata={"codec": meta})


class Record:
    """A record's ``to_dict``/``from_dict``, derived from its fields (``from_dict`` of a record is itself)."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        return to_dict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Any:
        return d if isinstance(d, cls) else from_dict(cls, d)


# --------------------------------------------------------------------------- per-class plans


class _Field:
    __slots__ = ("attr", "key", "omit", "omit_if", "encode", "decode")

    def __init__(self, attr: str, key: str, meta: Mapping[str, Any], hint: Any) -> None:
        self.attr, self.key = attr, key
        self.omit = meta.get("omit", _UNSET)
        self.omit_if = meta.get("omit_if")
        self.encode = _float_encoder if _is_float(hint) else encode
        self.decode = meta.get("decode") or _decoder(hint)

    def left_out(self, record: Any, value: Any) -> bool:
        if self.omit is not _UNSET and (value is self.omit or (self.omit is not None and value == self.omit
                                                               and type(value) is type(self.omit))):
            return True
        return self.omit_if is not None and bool(self.omit_if(record))


class _Plan:
    __slots__ = ("fields", "by_key", "extra", "key_order")

    def __init__(self, cls: type) -> None:
        hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
        self.fields: list[_Field] = []
        self.extra = self.key_order = None
        for f in dataclasses.fields(cls):
            meta = f.metadata.get("codec", {})
            role = meta.get("role")
            if role == EXTRA:
                self.extra = f.name
            elif role == KEY_ORDER:
                self.key_order = f.name
            else:
                self.fields.append(_Field(f.name, meta.get("key", f.name), meta, hints[f.name]))
        first = getattr(cls, "__codec_order__", ())
        self.fields.sort(key=lambda p: first.index(p.key) if p.key in first else len(first))
        self.by_key = {p.key: p for p in self.fields}


_PLANS: dict[type, _Plan] = {}


def _plan(cls: type) -> _Plan:
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = _Plan(cls)
    return plan


def keys(cls: type) -> tuple[str, ...]:
    """The JSON keys ``cls`` knows, in the order they are written."""
    return tuple(p.key for p in _plan(cls).fields)


# --------------------------------------------------------------------------- writing


def encode(value: Any) -> Any:
    """``value`` in JSON form: a record's object, a tuple's list, a mapping's plain dict (deep)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if dataclasses.is_dataclass(value):
        return value.to_dict() if hasattr(value, "to_dict") else to_dict(value)
    if isinstance(value, Mapping):
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    return value


def _float_encoder(value: Any) -> Any:
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else encode(value)


def to_dict(record: Any) -> dict[str, Any]:
    plan = _plan(type(record))
    out: dict[str, Any] = {}
    for p in plan.fields:
        value = getattr(record, p.attr)
        if not p.left_out(record, value):
            out[p.key] = p.encode(value)
    extra: Mapping[str, Any] = getattr(record, plan.extra) if plan.extra else {}
    order: tuple[str, ...] = getattr(record, plan.key_order) if plan.key_order else ()
    if order:
        known = out
        out = {}
        for key in order:
            if key in extra:
                out[key] = extra[key]
            elif key in known:
                out[key] = known[key]
    for key, value in extra.items():
        out.setdefault(key, value)
    return out


# --------------------------------------------------------------------------- reading


def from_dict(cls: type, d: Mapping[str, Any]) -> Any:
    """The record of type ``cls`` that ``d`` (its JSON object, today's shape) holds. A key ``d`` lacks takes the
    field's default."""
    plan = _plan(cls)
    kwargs: dict[str, Any] = {}
    for key, value in d.items():
        p = plan.by_key.get(key)
        if p is not None:
            kwargs[p.attr] = p.decode(value)
    if plan.extra:
        extra = {k: v for k, v in d.items() if k not in plan.by_key}
        if extra:
            kwargs[plan.extra] = extra
    if plan.key_order:
        kwargs[plan.key_order] = _shared_order(tuple(d))
    return cls(**kwargs)


_ORDERS: dict[tuple[str, ...], tuple[str, ...]] = {}
"""One shared tuple per key order seen (a long run holds tens of thousands of calls)."""


def _shared_order(order: tuple[str, ...]) -> tuple[str, ...]:
    return _ORDERS.setdefault(order, order)


def _identity(value: Any) -> Any:
    return value


def _is_float(hint: Any) -> bool:
    return hint is float or (_is_union(hint) and float in typing.get_args(hint) and int not in typing.get_args(hint))


def _is_union(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


def _decoder(hint: Any) -> Callable[[Any], Any]:
    if _is_union(hint):
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(inner) == 1:
            read = _decoder(inner[0])
            return lambda v: None if v is None else read(v)
        return _identity
    if hint is float:
        return lambda v: float(v) if isinstance(v, int) and not isinstance(v, bool) else v
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return lambda v: v if isinstance(v, hint) else hint.from_dict(v)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is tuple:
        item = _decoder(args[0]) if args else _identity
        if item is _identity:
            return tuple
        return lambda v: tuple(item(x) for x in v)
    if origin in (collections.abc.Mapping, dict):
        value = _decoder(args[1]) if len(args) == 2 else _identity
        if value is _identity:
            return _identity
        return lambda v: {k: value(x) for k, x in v.items()}
    return _identity
