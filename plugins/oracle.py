"""Target ``oracle``: the ``full-context`` reader, over the evidence sessions only.

This module never sees gold. ``generation_driver`` keeps only the item's evidence sessions (its
``answer_session_ids``) before building the public item for this target, so here it is exactly the full-context
reader. Options: as ``full-context`` (``mode``, ``history_format``, ``context_window``, ``max_tokens``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from lme.targets import load_module

NAME = "oracle"
_full_context = load_module(Path(__file__).resolve().parent / "full_context.py", "lme_oracle_full_context")
prepare_requests = _full_context.prepare_requests
generate = _full_context.generate


def describe(options: Mapping[str, Any]) -> dict[str, Any]:
    return {**_full_context.describe(options), "name": NAME, "sessions": "evidence only (filtered by generation_driver)"}
