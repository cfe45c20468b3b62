"""Is a stage of the memory pipeline broken across a run? Adds up what each row's target declared
(``target.stages``, ``target.truncation``: ``records.PipelineStage``, ``ItemTruncation``; any target may fill them,
memory-ref does) and the ranking it returned, and names a stage broken across the run, with the fix. Silent
before: 0 facts on 499 items, 23,806 malformed writer lines. The target's own ``debug`` is never read.

    a stage    failed on every item that reports it (a warning: failed or fell back on more than half of them)
    retrieval  an empty ranking on every item that returned one (``retrieved_session_ids``)
    truncation the history cut to fit on more than half of the items that report it (a warning)

The scorecard and ``cluster_failures.py`` print the problems as a loud line at the top; ``rounds.py begin``
refuses to start a round while a stage is broken.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Iterable, Mapping

from lme.core.run_records import ResultRow

MIN_ITEMS = 3
"""Fewer items reporting a stage than this say nothing about the stage."""


def _stage_problems(statuses: Mapping[str, Counter[str]], details: Mapping[str, Counter[str]]
                    ) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    broken, warnings = [], []
    for name, counts in statuses.items():
        n = sum(counts.values())
        said = details[name].most_common(1)
        why = f" ({said[0][0]})" if said and said[0][0] else ""
        fix = f"read the {name} stage of a row (target.stages, and the target's debug)"
        if n >= MIN_ITEMS and counts["failed"] == n:
            broken.append({"stage": name, "line": f"{name}: failed on all {n} items{why}", "fix": fix})
        elif n >= MIN_ITEMS and (counts["failed"] + counts["fallback"]) * 2 > n:
            warnings.append({"stage": name, "line": f"{name}: failed or fell back on {counts['failed'] + counts['fallback']}"
                             f" of {n} items{why}", "fix": fix})
    return broken, warnings


def summarise(rows: Iterable[ResultRow]) -> dict[str, Any]:
    """Per stage, how many items reported each status; the rankings and truncations; the problems found
    (``broken`` and ``warnings``: one line each, with the fix)."""
    items = retrieval_items = empty_retrieval = truncation_items = truncated = 0
    statuses: dict[str, Counter[str]] = defaultdict(Counter)
    details: dict[str, Counter[str]] = defaultdict(Counter)
    for row in rows:
        target = row.target
        if target is not None and target.stages:
            items += 1
            for stage in target.stages:
                statuses[stage.name][stage.status] += 1
                if stage.status in ("failed", "fallback"):
                    details[stage.name][stage.detail or ""] += 1
        if target is not None and target.truncation is not None:
            truncation_items += 1
            truncated += target.truncation.truncated
        ranking = None if row.retrieval is None else row.retrieval.retrieved_session_ids
        if ranking is not None:
            retrieval_items += 1
            empty_retrieval += not ranking
    broken, warnings = _stage_problems(statuses, details)
    if retrieval_items >= MIN_ITEMS and empty_retrieval == retrieval_items and "retrieval" not in {
            p["stage"] for p in broken}:
        broken.append({"stage": "retrieval", "line": f"retrieval: nothing ranked on all {retrieval_items} items",
                       "fix": "check the target's retriever options (retriever, top_k)"})
    if truncation_items >= MIN_ITEMS and truncated * 2 > truncation_items:
        warnings.append({"stage": "truncation", "line": f"history truncated to fit on {truncated} of "
                         f"{truncation_items} items", "fix": "give the reader fewer sessions (top_k, an evidence "
                         "budget) or a model with a larger context window"})
    return {"items": items, "stages": {name: dict(sorted(c.items())) for name, c in sorted(statuses.items())},
            "retrieval_items": retrieval_items, "empty_retrieval_items": empty_retrieval,
            "truncation_items": truncation_items, "truncated_items": truncated, "broken": broken,
            "warnings": warnings}


def loud_lines(summary: Mapping[str, Any] | None) -> list[str]:
    """The lines to put at the top of a report: one per broken stage (then warnings)."""
    if not summary:
        return []
    lines = [f"PIPELINE BROKEN: {p['line']}. Fix: {p['fix']}" for p in summary.get("broken") or ()]
    lines += [f"pipeline warning: {p['line']}. Fix: {p['fix']}" for p in summary.get("warnings") or ()]
    return lines
