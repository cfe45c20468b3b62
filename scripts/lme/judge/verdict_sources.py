"""Where a run's verdicts came from, counted one way everywhere (metrics.json, scorecard.md, report.html,
``judge_shim.py --hyp-file``): official judged live (a call or the call cache), official from the verdict archive,
by a successor judge, or other (a non-official judge, an official judge's verdict that failed the official rule:
another host, prompt or shape).

A figure is official only when every verdict is official (live or archived): one successor verdict makes the
mixed figure not official, whatever its calibration.

Whether a verdict is official is decided here, once (``classify``), from what its row and its run recorded, by
``references/SPEC.md`` "Judge continuity" ("The official rule": why the stored ``official`` flag is never enough).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable, Mapping

from lme.core.endpoint_urls import host_of, is_official_host
from lme.core.facts import is_official_judge
from lme.judge.request_shapes import is_upstream_shape

SOURCES = ("official_live", "official_archived", "successor", "other")


def run_host(endpoints: Mapping[str, Any] | None, provider: str | None) -> str | None:
    """The host a run recorded for ``provider``'s endpoint (run-meta ``endpoints``), None when it recorded none."""
    url = (endpoints or {}).get(provider) if provider else None
    return host_of(url) if isinstance(url, str) and url not in ("default", "unknown") else None


def _why_not(verdict: Any, host: str | None, unrecorded: bool) -> str | None:
    """Why a verdict is not official: ``successor``, ``judge`` (another model), ``endpoint``, ``shape``, ``prompt``
    (the flag its judge wrote is false: not upstream's prompt function); None when it is official (a row with no
    host anywhere is trusted as before hosts were recorded)."""
    if getattr(verdict, "successor", False):
        return "successor"
    if not is_official_judge(verdict.provider, verdict.model):
        return "judge"
    if not unrecorded and not is_official_host(verdict.provider, host):
        return "endpoint"
    if not is_upstream_shape(verdict.request_shape):
        return "shape"
    if verdict.official is not True:
        return "prompt"
    return None


def classify(verdict: Any, endpoints: Mapping[str, Any] | None = None) -> tuple[str | None, str | None]:
    """(the host a verdict was made at, why it is not official): the reason is None for an official verdict, else
    one of ``_why_not``'s, ``endpoint_unrecorded`` (an old row whose run recorded an endpoint that is not official)
    or ``archive_without_endpoint``. ``endpoints``: its run's run-meta ``endpoints`` (None: none recorded)."""
    archived = verdict.source == "archive"
    host = verdict.endpoint_host or (None if archived else run_host(endpoints, verdict.provider))
    if archived and host is None and not verdict.successor:  # where it was made is unknown
        # served by an older version from an older archive line: recorded not official; since origins are
        # recorded, an imported line without a host is its author's claim (``origins`` names the file)
        return host, "archive_without_endpoint" if verdict.origin is None else _why_not(verdict, host, True)
    why = _why_not(verdict, host, verdict.endpoint_host is None and host is None)
    if why == "endpoint" and verdict.endpoint_host is None:
        why = "endpoint_unrecorded"  # the run's recorded endpoint decides (the note says which)
    return host, why


def is_official(verdict: Any, endpoints: Mapping[str, Any] | None = None) -> bool:
    """The verdict is the official judge's by today's rule (``classify``), whatever flag its row stored."""
    return classify(verdict, endpoints)[1] is None


def source_of(verdict: Any, endpoints: Mapping[str, Any] | None = None) -> str:
    """One of ``SOURCES`` for a ``Verdict`` (``endpoints``: its run's, for a row that recorded no host)."""
    why = classify(verdict, endpoints)[1]
    if why == "successor":
        return "successor"
    if why is None:
        return "official_archived" if verdict.source == "archive" else "official_live"
    return "other"


def count(verdicts: Iterable[Any], endpoints: Mapping[str, Any] | None = None) -> dict[str, int]:
    """``{official_live, official_archived, successor, other}`` over ``verdicts`` (None entries skipped)."""
    found = Counter(source_of(v, endpoints) for v in verdicts if v is not None)
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
