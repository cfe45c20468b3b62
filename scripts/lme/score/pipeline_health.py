"""Is a stage of the memory pipeline broken across a run? Adds up each row's ``target.debug.health`` (memory-ref:
``plugins/memory_ref/health.py``; rows without it are derived from the stages' own debug) and names a stage that
failed on (nearly) every item, with the fix. Silent before: 0 facts on 499 items, 23,806 malformed writer lines.

    writer     on, and 0 facts on every item that ran it; or more malformed lines than facts
    retrieval  nothing ranked on every item that has retrieval debug (the row's ranking, else the debug's top list)
    reader     sessions dropped for the evidence budget on more than half of the items (a warning)

The scorecard and ``cluster_failures.py`` print the problems as a loud line at the top; ``rounds.py begin``
refuses to start a round while a stage is broken.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from lme.core.run_records import ResultRow

MIN_ITEMS = 3
"""Fewer items with a stage's debug than this say nothing about the stage."""


def _health(row: ResultRow) -> Mapping[str, Any] | None:
    debug = row.debug
    if isinstance(debug.get("health"), Mapping):
        return debug["health"]
    if not any(k in debug for k in ("writer", "retrieval", "reader")):
        return None
    writer = debug.get("writer") or {}
    retrieval = debug.get("retrieval") or {}
    reader = debug.get("reader") or {}
    return {"writer": {"off": bool(writer.get("off")) or not writer, "facts": int(writer.get("facts") or 0),
                       "malformed_lines": int(writer.get("malformed_lines") or 0)},
            "retrieval": {"ranked": _ranked(row, retrieval), "present": bool(retrieval)},
            "reader": {"sessions_dropped": int(reader.get("sessions_dropped") or 0)},
            "bypass": {"taken": bool(((debug.get("symbolic") or {}).get("bypass") or {}).get("taken"))}}


def _ranked(row: ResultRow, retrieval: Mapping[str, Any]) -> int:
    """How many sessions the item's retrieval ranked: the row's own ranking (``retrieval.retrieved_session_ids``,
    which rag records whole and its debug does not list), else the debug's ``top`` list. An item whose top_k
    covered every session (nothing to choose from: the oracle file) still ranks them all: not a broken stage."""
    ranking = None if row.retrieval is None else row.retrieval.retrieved_session_ids
    if ranking is not None and "top" not in retrieval:
        return len(ranking)
    return len(retrieval.get("top") or ())


def summarise(rows: Iterable[ResultRow]) -> dict[str, Any]:
    """Totals per stage over the rows that carry pipeline debug, and the problems found (``broken`` and
    ``warnings``: one line each, with the fix)."""
    items = writer_items = facts = malformed = zero_fact_items = 0
    retrieval_items = empty_retrieval = truncated = bypass_taken = 0
    for row in rows:
        health = _health(row)
        if health is None:
            continue
        items += 1
        writer = health.get("writer") or {}
        if not writer.get("off"):
            writer_items += 1
            facts += int(writer.get("facts") or 0)
            malformed += int(writer.get("malformed_lines") or 0)
            zero_fact_items += not writer.get("facts")
        retrieval = health.get("retrieval") or {}
        if retrieval.get("present", True) and "ranked" in retrieval:
            retrieval_items += 1
            empty_retrieval += not retrieval.get("ranked")
        truncated += int((health.get("reader") or {}).get("sessions_dropped") or 0) > 0
        bypass_taken += bool((health.get("bypass") or {}).get("taken"))
    broken, warnings = [], []
    if writer_items >= MIN_ITEMS and facts == 0:
        broken.append({"stage": "writer", "line": f"writer: 0 facts extracted on all {writer_items} items "
                       f"({malformed:,} malformed writer lines)",
                       "fix": "check the writer model and its replies (target.debug.writer of a row); "
                              "references/model-config.md sets the stack"})
    elif writer_items >= MIN_ITEMS and malformed > facts:
        broken.append({"stage": "writer", "line": f"writer: {malformed:,} malformed writer lines against {facts:,} "
                       f"facts over {writer_items} items", "fix": "the writer model does not follow the line "
                       "format: use another writer model (references/model-config.md)"})
    if retrieval_items >= MIN_ITEMS and empty_retrieval == retrieval_items:
        broken.append({"stage": "retrieval", "line": f"retrieval: nothing ranked on all {retrieval_items} items",
                       "fix": "check the target's retriever options (retriever, top_k)"})
    if items >= MIN_ITEMS and truncated * 2 > items:
        warnings.append({"stage": "reader", "line": f"reader: evidence truncated on {truncated} of {items} items",
                         "fix": "raise max_evidence_chars or lower top_k"})
    return {"items": items, "writer_items": writer_items, "facts": facts, "malformed_lines": malformed,
            "zero_fact_items": zero_fact_items, "retrieval_items": retrieval_items,
            "empty_retrieval_items": empty_retrieval, "reader_truncated_items": truncated,
            "bypass_taken": bypass_taken, "broken": broken, "warnings": warnings}


def loud_lines(summary: Mapping[str, Any] | None) -> list[str]:
    """The lines to put at the top of a report: one per broken stage (then warnings)."""
    if not summary:
        return []
    lines = [f"PIPELINE BROKEN: {p['line']}. Fix: {p['fix']}" for p in summary.get("broken") or ()]
    lines += [f"pipeline warning: {p['line']}. Fix: {p['fix']}" for p in summary.get("warnings") or ()]
    return lines
