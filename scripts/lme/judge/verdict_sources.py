"""Where a run's verdicts came from, counted one way everywhere (metrics.json, scorecard.md, report.html,
``judge_shim.py --hyp-file``): official judged live (a call or the call cache), official from the verdict archive,
by a successor judge, or other (a non-official judge, an official judge's verdict that failed the official rule:
another host, prompt or shape).

A figure is official only when every verdict is official (live or archived): one successor verdict makes the
mixed figure not official, whatever its calibration.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable, Mapping

SOURCES = ("official_live", "official_archived", "successor", "other")


def source_of(verdict: Any) -> str:
    """One of ``SOURCES`` for a ``Verdict``."""
    if getattr(verdict, "successor", False):
        return "successor"
    if getattr(verdict, "official", False) is True:
        return "official_archived" if getattr(verdict, "source", "") == "archive" else "official_live"
    return "other"


def count(verdicts: Iterable[Any]) -> dict[str, int]:
    """``{official_live, official_archived, successor, other}`` over ``verdicts`` (None entries skipped)."""
    found = Counter(source_of(v) for v in verdicts if v is not None)
    return {name: found.get(name, 0) for name in SOURCES}


def describe(counts: Mapping[str, Any], *, successor: str | None = None,
             calibration: str | None = None) -> str:
    """``Verdicts: 0 official judged live, 490 official from the verdict archive, 10 by the successor X
    (calibration ...); the figure mixes them and is not official.``"""
    parts = [f"{counts.get('official_live', 0)} official judged live",
             f"{counts.get('official_archived', 0)} official from the verdict archive"]
    if counts.get("successor"):
        cited = calibration or "uncalibrated"
        parts.append(f"{counts['successor']} by the successor {successor or 'judge'} ({cited})")
    if counts.get("other"):
        parts.append(f"{counts['other']} not official")
    text = "Verdicts: " + ", ".join(parts)
    if counts.get("successor") or counts.get("other"):
        text += "; the figure that mixes them is not official"
    return text + "."
