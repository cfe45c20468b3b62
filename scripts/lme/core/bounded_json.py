"""JSON that other people wrote, read within bounds. Standard library only.

Every JSON input goes through here: the dataset (streamed, ``items``), hypotheses files, the config, the loop's
state files, a run's logs and the verdict archives (whole documents and lines, ``loads``; ``fileio.read_json``
and ``fileio.iter_jsonl`` call it). Each fault ``references/SPEC.md`` lists (too deep, too large, a lone
surrogate, a number that is not finite) is one ``JsonRefused`` line naming where (a ``UserError``, and a
``ValueError`` for readers that skip what they cannot parse). While streaming, nothing deeper than the bound is
ever built: a 200,000-deep array is refused at level ``depth + 1``.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Iterable, Iterator, NamedTuple

from lme.core.errors import UserError


class Limits(NamedTuple):
    """The bounds of one reading. A NamedTuple, not a dataclass: every command loads this module, and
    ``dataclasses`` costs the small ones ~8 ms of start-up (``inspect``)."""

    depth: int = 32
    """Containers (arrays, objects) nested in one another; LongMemEval items need 5 counting the file's array."""
    document_bytes: int = 64 << 20
    """One whole document (a file or a line of a JSONL file). Streamed files (the dataset) have no such bound."""
    string_chars: int = 16 << 20
    """One string (a value or a key): LongMemEval's longest turn is about 77,000 characters."""


DEFAULT = Limits()
STATE = Limits(document_bytes=16 << 20, string_chars=1 << 20)
"""The product's own small files (the config, the loop's state, a run's meta): a few KiB each when genuine."""

_FIX = "the file is not what the benchmark expects; restore it or write it again"


class JsonRefused(UserError, ValueError):
    """A JSON input outside the bounds (or not JSON): one line naming where and why."""


# --------------------------------------------------------------------------- whole documents


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")


def loads(data: str | bytes, where: str, *, limits: Limits = DEFAULT, fix: str | None = None) -> Any:
    """Parse one whole JSON document within ``limits``; ``where`` names it in the one-line refusal (``fix``: what
    to do about invalid JSON, default: restore or rewrite the file)."""
    if len(data) > limits.document_bytes:
        raise JsonRefused(f"{where}: {len(data):,} bytes, more than the {limits.document_bytes:,} a file of this "
                          "kind may hold", fix=fix or _FIX)
    if isinstance(data, (bytes, bytearray)):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as err:
            raise JsonRefused(f"{where}: not UTF-8 text (byte {err.start})", fix=fix or _FIX) from None
    else:
        text = data
    non_finite: list[str] = []

    def constant(name: str) -> float:  # NaN, Infinity, -Infinity: Python reads them, JSON has none
        non_finite.append(name)
        return float(name.replace("Infinity", "inf"))

    def number(literal: str) -> float:
        value = float(literal)
        if not math.isfinite(value):  # 1e999
            non_finite.append(literal)
        return value

    try:
        value = json.JSONDecoder(parse_constant=constant, parse_float=number).decode(text)
    except RecursionError:
        raise JsonRefused(f"{where}: nested deeper than {limits.depth} levels", fix=fix or _FIX) from None
    except json.JSONDecodeError as err:
        raise JsonRefused(f"{where}: not valid JSON ({err.msg} at line {err.lineno} column {err.colno})",
                          fix=fix or _FIX) from None
    except ValueError:  # an integer of more than 4300 digits: Python's own bound on reading one
        raise JsonRefused(f"{where}: holds an integer of more than 4,300 digits", fix=fix or _FIX) from None
    if non_finite or _may_exceed(text, limits):
        check(value, where, limits=limits, fix=fix)
    return value


def _may_exceed(text: str, limits: Limits) -> bool:
    """Whether ``check`` could find anything: too many containers to rule out the depth, a string that could be too
    long, or a surrogate escape. Most documents need no walk."""
    return (text.count("[") + text.count("{") > limits.depth or len(text) > limits.string_chars
            or _SURROGATE_ESCAPE.search(text) is not None)


def check(value: Any, where: str, *, limits: Limits = DEFAULT, fix: str | None = None) -> None:
    """Refuse a built value that is nested too deep, holds a string that is too long or not Unicode, or a number
    that is not finite (an iterative walk: any depth is safe to check). ``fix``: what to do about the first two."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, (dict, list)):
            if len(path) >= limits.depth:
                raise JsonRefused(f"{where}: nested deeper than {limits.depth} levels (at {_at(path)})",
                                  fix=fix or _FIX)
            pairs = node.items() if isinstance(node, dict) else enumerate(node)
            for key, child in pairs:
                if isinstance(key, str):
                    _check_text(key, where, path, limits, is_key=True)
                stack.append((child, (*path, key)))
        elif isinstance(node, str):
            _check_text(node, where, path, limits)
        elif isinstance(node, float) and not math.isfinite(node):
            raise JsonRefused(f"{where}: {_at(path)} is {json.dumps(node)}, not a finite number",
                              fix="write a number there")


def _check_text(text: str, where: str, path: tuple[Any, ...], limits: Limits, *, is_key: bool = False) -> None:
    fault = _text_fault(text, limits)
    if fault is not None:
        raise _text_refused(f"{where}: {f'a key under {_at(path)}' if is_key else _at(path)}", fault)


def _text_fault(text: str, limits: Limits) -> str | None:
    """What is wrong with one string (too long, a lone surrogate), or None. ASCII text is checked in O(1)."""
    if len(text) > limits.string_chars:
        return f"holds {len(text):,} characters, more than the {limits.string_chars:,} one string may hold"
    if not text.isascii():
        found = _SURROGATE.search(text)
        if found is not None:
            return f"holds a lone surrogate (\\u{ord(found.group()):04x}), which is not Unicode text"
    return None


_UNICODE_FIX = "write the text as UTF-8; a character outside the BMP as itself or as its surrogate pair"


def _text_refused(what: str, fault: str) -> JsonRefused:
    return JsonRefused(f"{what} {fault}", fix=_UNICODE_FIX if "surrogate" in fault else _FIX)


def _at(path: tuple[Any, ...]) -> str:
    if not path:
        return "the top level"
    text = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path[:8]).lstrip(".")
    return text + ("..." if len(path) > 8 else "")


# --------------------------------------------------------------------------- streaming a top-level array


_NAME_KEY = "question_id"
"""The key whose value names an item in a refusal (when it came before the fault)."""


class _Cursor:
    """Where the stream is: the item being built (its index, its ``_NAME_KEY`` when seen, its top-level key)."""

    def __init__(self) -> None:
        self.index = -1
        self.name: Any = None
        self.top_key: Any = None

    def item(self) -> str:
        if self.index < 0:
            return "before the first item"
        named = f" ({_NAME_KEY} {self.name})" if isinstance(self.name, (str, int)) else ""
        under = f", under {self.top_key!r}" if self.top_key is not None else ""
        return f"item {self.index}{named}{under}"


def items(events: Iterable[tuple[str, Any]], where: str, *, limits: Limits = DEFAULT) -> Iterator[Any]:
    """The elements of the top-level JSON array that ``events`` describe (``ijson.basic_parse`` pairs), each built
    and checked as its events arrive: nothing deeper than ``limits.depth`` is built, so a nesting bomb costs a few
    lists, not memory in proportion to its depth. Refusals name ``where`` and the item (its question_id when
    it came first). A top level that is not an array yields nothing (the caller names what it found). Errors of
    the event source propagate, except text that is not Unicode, which is refused naming the item."""
    cursor = _Cursor()
    events = iter(events)
    try:
        for event, _ in events:  # the top level: only an array has items
            if event == "start_array":
                yield from _array_items(events, where, limits, cursor)
            return
    except UnicodeDecodeError:
        raise JsonRefused(f"{where}: {cursor.item()}: holds text that is not Unicode (a lone surrogate such as "
                          "\\udfff)", fix=_UNICODE_FIX) from None


def _array_items(events: Iterator[tuple[str, Any]], where: str, limits: Limits, cursor: _Cursor) -> Iterator[Any]:
    """The items of the top-level array that ``events`` are inside, built to its end (one loop: the hot path)."""
    max_depth, max_chars = limits.depth, limits.string_chars
    stack: list[tuple[Any, bool, Any]] = []  # the open containers above ``node``, with their pending keys
    node: Any = None  # the open container of the item being built (None: at the top-level array)
    is_dict = False
    key: Any = None
    depth = 1  # containers open, the top-level array included
    for event, value in events:
        if event == "map_key" or event == "string":
            if len(value) > max_chars or (not value.isascii() and _SURROGATE.search(value)):
                raise _text_refused(f"{where}: {cursor.item()}: {'a key' if event == 'map_key' else 'a string'}",
                                    _text_fault(value, limits) or "")
            if event == "map_key":
                key = value
                if depth == 2:
                    cursor.top_key = value
                continue
            if depth == 2 and key == _NAME_KEY:
                cursor.name = value
        elif event == "start_map" or event == "start_array":
            if depth >= max_depth:
                raise JsonRefused(f"{where}: {cursor.item()}: nested deeper than {max_depth} levels", fix=_FIX)
            child: Any = {} if event == "start_map" else []
            if depth == 1:
                cursor.index += 1
                cursor.name = cursor.top_key = None
            elif is_dict:
                node[key] = child
            else:
                node.append(child)
            stack.append((node, is_dict, key))
            node, is_dict, key = child, event == "start_map", None
            depth += 1
            continue
        elif event == "end_map" or event == "end_array":
            depth -= 1
            if depth <= 0:
                return
            done = node
            node, is_dict, key = stack.pop()
            if depth == 1:
                yield done
            continue
        elif event == "double" and not math.isfinite(value):
            raise JsonRefused(f"{where}: {cursor.item()}: holds {value}, not a finite number", fix=_FIX)
        if depth == 1:  # a scalar item
            cursor.index += 1
            yield value
        elif is_dict:
            node[key] = value
        else:
            node.append(value)
