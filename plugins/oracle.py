"""Target ``oracle``: the same reader as ``full-context``, over the evidence sessions only.

This module never sees gold. ``generation_driver`` keeps only the item's evidence sessions (its
``answer_session_ids``) before building the public item for this target, so here it is the plain reader.
Options: as ``full-context`` (``mode``, ``history_format``, ``context_window``, ``max_tokens``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Mapping

_SCRIPTS = str(Path(__file__).resolve().parent.parent / "scripts")
if _SCRIPTS not in sys.path:  # loaded by path: make the toolkit's modules importable
    sys.path.insert(0, _SCRIPTS)

import reader  # noqa: E402
from records import ChatRequest, Hypothesis, PublicItem, TargetContext  # noqa: E402

NAME = "oracle"


def describe(options: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": NAME, "sessions": "evidence only (filtered by generation_driver)", **reader.reader_settings(options)}


def prepare_requests(item: PublicItem, ctx: TargetContext) -> list[ChatRequest]:
    request, _ = reader.build_fitted_request(item, item.sessions, provider=ctx.provider, model=ctx.model,
                                             options=ctx.options, use_provider_count=False)
    return [request]


def generate(item: PublicItem, ctx: TargetContext) -> Hypothesis:
    return reader.answer_with_reader(item, item.sessions, ctx)
