"""Each stage's outcome on one item, from the debug the stages wrote, as the pipeline stages every target may
declare (``records.PipelineStage``: ``{name, status: ok|skipped|failed|fallback, detail}``): what the report shows
per item and what a run's pipeline health adds up (``scripts/lme/score/pipeline_health.py``: a stage failed on
every item is a broken stage, a loud line on the scorecard, and no loop round starts on it).

    writer     facts extracted (failed: none, or more malformed lines than facts; skipped: the writer is off)
    retrieval  sessions ranked and shown to the reader (failed: nothing ranked)
    temporal   expressions of the question resolved to dates (skipped: off, or no question date)
    resolver   superseded facts, and the count of a "how many" question (skipped: off)
    bypass     whether the symbolic bypass answered alone, and why (not)
    reader     the reader's sessions and facts (skipped: the bypass answered)
"""

from __future__ import annotations

from typing import Any, Mapping


def _stage(name: str, status: str, detail: str) -> dict[str, str]:
    return {"name": name, "status": status, "detail": detail}


def _writer(writer: Mapping[str, Any]) -> dict[str, str]:
    if writer.get("off"):
        return _stage("writer", "skipped", "off")
    facts, malformed = int(writer.get("facts") or 0), int(writer.get("malformed_lines") or 0)
    said = f"{facts:,} facts from {int(writer.get('sessions') or 0)} sessions, {malformed:,} malformed writer lines"
    broken = facts == 0 or malformed > facts
    return _stage("writer", "failed" if broken else "ok", said + ("; check the writer model and its replies "
                                                                  "(references/model-config.md)" if broken else ""))


def _symbolic(symbolic: Mapping[str, Any]) -> list[dict[str, str]]:
    temporal = symbolic.get("temporal") or {}
    resolver = symbolic.get("resolver") or {}
    bypass = symbolic.get("bypass") or {}
    out = [_stage("temporal", "skipped", "off") if temporal.get("off") else
           _stage("temporal", "skipped", f"no {temporal['error']}") if temporal.get("error") else
           _stage("temporal", "ok", f"{len(temporal.get('resolved') or ())} expression(s) resolved")]
    counted = (f", counted {resolver.get('count')} '{resolver.get('count_noun')}'" if resolver.get("count_noun")
               else "")
    out.append(_stage("resolver", "skipped", "off") if resolver.get("off") else
               _stage("resolver", "ok", f"{len(resolver.get('superseded') or ())} superseded fact(s){counted}"))
    if bypass.get("reason") == "symbolic_bypass off":
        out.append(_stage("bypass", "skipped", "off"))
    else:
        out.append(_stage("bypass", "ok", ("answered alone: " if bypass.get("taken") else "not taken: ")
                          + str(bypass.get("reason") or "")))
    return out


def item_stages(debug: Mapping[str, Any]) -> list[dict[str, str]]:
    """The item's stages, in pipeline order, from memory-ref's own debug blocks."""
    retrieval = debug.get("retrieval") or {}
    reader = debug.get("reader") or {}
    ranked = len(retrieval.get("top") or ())
    stages = [_writer(debug.get("writer") or {}),
              _stage("retrieval", "ok" if ranked else "failed",
                     f"{int(retrieval.get('shown') or 0)} of {ranked} ranked sessions shown" if ranked
                     else "nothing ranked; check the retriever options (retriever, top_k)"),
              *_symbolic(debug.get("symbolic") or {})]
    if reader.get("skipped"):
        stages.append(_stage("reader", "skipped", "the symbolic bypass answered"))
    else:
        stages.append(_stage("reader", "ok", f"{int(reader.get('sessions') or 0)} sessions, "
                                             f"{int(reader.get('facts') or 0)} facts"))
    return stages


def item_truncation(debug: Mapping[str, Any]) -> dict[str, Any] | None:
    """The reader's evidence cut to its budget (``max_evidence_chars``), as a truncation record; None when the
    reader did not run."""
    reader = debug.get("reader") or {}
    if reader.get("skipped") or "sessions_dropped" not in reader:
        return None
    dropped = int(reader.get("sessions_dropped") or 0)
    return {"truncated": dropped > 0, "dropped_sessions": dropped, "kept_sessions": int(reader.get("sessions") or 0)}
