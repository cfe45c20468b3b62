"""Rows written before the debug contract: what the harness shows of them, read once from memory-ref's and the
readers' old ``debug`` keys.

Since the contract (``records.PipelineStage``, ``ItemTruncation``, ``RetrievalDetail``) a row carries ``stages`` and
``truncation`` in its target block and ``top_k``, ``granularity``, ``top_k_covers_all`` in its retrieval block, and
the harness reads no target's ``debug``. A row without them (an older version wrote it) gets them here, from the
keys those versions wrote: this module is the one place that knows those keys; what it cannot map (memory-ref's resolver and temporal lines) old rows no longer show,
except in their raw debug.
"""

from __future__ import annotations

from typing import Any, Mapping

from lme.core.records import ItemTruncation, PipelineStage, ReportError, RetrievalDetail


def _block(debug: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = debug.get(key)
    return value if isinstance(value, Mapping) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def old_stages(debug: Mapping[str, Any]) -> tuple[PipelineStage, ...] | None:
    """memory-ref's old per-item health as stages (None: the row's debug has none of its blocks)."""
    health = _block(debug, "health")
    if not health and not any(k in debug for k in ("writer", "reader", "symbolic")):
        return None
    writer = _block(health, "writer") or _block(debug, "writer")
    facts, malformed = _int(writer.get("facts")), _int(writer.get("malformed_lines"))
    bypass = _block(health, "bypass") or _block(_block(debug, "symbolic"), "bypass")
    ranked = (_int(_block(health, "retrieval").get("ranked")) if health else len(_block(debug, "retrieval").get("top")
                                                                                   or ()))
    stages = [PipelineStage("writer", "skipped", "off") if writer.get("off") or not writer else
              PipelineStage("writer", "failed" if facts == 0 or malformed > facts else "ok",
                            f"{facts:,} facts, {malformed:,} malformed writer lines")]
    if health.get("retrieval") is not None or debug.get("retrieval") is not None:
        stages.append(PipelineStage("retrieval", "ok" if ranked else "failed", f"{ranked} ranked"))
    stages.append(PipelineStage("bypass", "ok", "answered" if bypass.get("taken") else "not taken"))
    if bypass.get("taken"):
        stages.append(PipelineStage("reader", "skipped", "the bypass answered"))
    return tuple(stages)


def old_truncation(debug: Mapping[str, Any]) -> ItemTruncation | None:
    """The readers' old ``debug.truncation`` (memory-ref's old ``reader.sessions_dropped`` when it has none)."""
    info = _block(debug, "truncation")
    if info:
        known = {k: v for k, v in info.items() if k in ("truncated", "dropped_sessions", "kept_sessions",
                                                         "dropped_session_ids", "tokens", "counted_with",
                                                         "dropped_evidence")}
        try:
            return ItemTruncation.parse({**known, "retried_after_too_long": bool(info.get("retried_after_too_long"))})
        except ReportError:
            return None
    dropped = _block(debug, "reader").get("sessions_dropped")
    if isinstance(dropped, int) and not isinstance(dropped, bool):
        return ItemTruncation(truncated=dropped > 0, dropped_sessions=dropped)
    return None


def old_retrieval(debug: Mapping[str, Any]) -> RetrievalDetail | None:
    """memory-ref's and rag's old ``debug.retrieval`` top_k, granularity and top_k_covers_all."""
    info = _block(debug, "retrieval")
    if not info:
        return None
    top_k, granularity, covers = info.get("top_k"), info.get("granularity"), info.get("top_k_covers_all")
    return RetrievalDetail(top_k=top_k if isinstance(top_k, int) and not isinstance(top_k, bool) else None,
                           granularity=granularity if isinstance(granularity, str) else None,
                           covers_all=covers if isinstance(covers, bool) else None)
