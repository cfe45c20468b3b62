"""Older files brought up to today's shape where they are read: one numbered step per version, per kind of file
(simonw/llm's numbered migrations are the model).

``references/SPEC.md`` ("Versions", "Older files: one migration path") states the rules. A new version of a kind
adds its step at the end of that kind's list; versions and steps are never reused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from lme.core import old_debug
from lme.core.facts import SCHEMA_VERSION, SCHEMA_VERSIONS, is_abstention, resolve_judge_model


@dataclass(frozen=True)
class Step:
    """One migration: an object of the version before ``to_version`` -> its shape at ``to_version``."""

    to_version: str
    what: str
    apply: Callable[[Mapping[str, Any]], dict[str, Any]]


def version_key(version: Any) -> tuple[int, int, int]:
    """``"1.2.0"`` -> ``(1, 2, 0)``; anything else (missing, malformed) is the first version, ``1.0.0``."""
    parts = version.split(".") if isinstance(version, str) else []
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return version_key(SCHEMA_VERSION)
    return int(parts[0]), int(parts[1]), int(parts[2])


def _no_change(obj: Mapping[str, Any]) -> dict[str, Any]:
    return dict(obj)


# --------------------------------------------------------------------------- run-meta.json


def _meta_judge_snapshot(meta: Mapping[str, Any]) -> dict[str, Any]:
    """1.0.0 -> 1.1.0. Runs made before ``run_settings`` resolved the judge's alias (before d58e599) recorded
    ``judge.model`` as upstream's alias ``gpt-4o``: it names the snapshot ``gpt-4o-2024-08-06``. 1.1.0 also added
    ``endpoints``, ``pacing``, ``exit_status``, ``shards`` and ``invocations`` (readers take them as absent)."""
    judge = meta.get("judge")
    if not (isinstance(judge, Mapping) and isinstance(judge.get("model"), str)):
        return dict(meta)
    return {**meta, "judge": {**judge, "model": resolve_judge_model(judge["model"])}}


# --------------------------------------------------------------------------- item-results.jsonl


def _row_judgment(judgment: Any) -> Any:
    """A 1.0.0 judgment (7894b38's schema): ``label``, ``raw``, ``model`` required; ``provider``,
    ``requested_model`` and ``official`` optional. Missing: no provider, the returned model as
    the requested one, not official (the flag is never trusted: ``verdict_sources.classify`` recomputes it)."""
    if not isinstance(judgment, Mapping):
        return judgment
    return {"provider": "", "requested_model": str(judgment.get("model", "")), "official": False, **judgment}


def _row_target(target: Any) -> Any:
    """A target block written before the debug contract (f9d68a7): neither ``stages`` nor ``truncation``; they
    are read once from memory-ref's and the readers' old ``debug`` keys (``old_debug``)."""
    if not isinstance(target, Mapping) or "stages" in target or "truncation" in target:
        return target
    debug = target.get("debug") if isinstance(target.get("debug"), Mapping) else {}
    stages, truncation = old_debug.old_stages(debug), old_debug.old_truncation(debug)
    return {**target, "stages": None if stages is None else [s.to_dict() for s in stages],
            "truncation": None if truncation is None else truncation.to_dict()}


def _row_retrieval(retrieval: Any, target: Any) -> Any:
    """A retrieval block written before the debug contract (f9d68a7): no ``top_k`` key; ``top_k``,
    ``granularity`` and ``top_k_covers_all`` are read from the target's old ``debug.retrieval``."""
    if not isinstance(retrieval, Mapping) or "top_k" in retrieval:
        return retrieval
    debug = target.get("debug") if isinstance(target, Mapping) and isinstance(target.get("debug"), Mapping) else {}
    detail = old_debug.old_retrieval(debug)
    found = {"top_k": None, "granularity": None, "top_k_covers_all": None} if detail is None else detail.to_dict()
    return {**retrieval, **found}


def _row_official_by_host(row: Mapping[str, Any]) -> dict[str, Any]:
    """1.0.0 -> 2.0.0. ``judgment.official`` changed meaning at d0bf04d (2026-12-01): before, ``true`` for the
    official model at any host; since, the official rule with the endpoint's host (and the fields it needs:
    ``provider``, ``requested_model``, ``endpoint_host``, ``request_shape``). A 1.0.0 row keeps its flag and its
    version (readers recompute it from what the row and its run recorded); its judgment gets the fields that were
    optional then, and rows written before the debug contract (f9d68a7) get ``target.stages``/``truncation`` and
    ``retrieval.top_k``/``granularity``/``top_k_covers_all`` from their old debug keys."""
    target = row.get("target")
    out = {**row, "judgment": _row_judgment(row.get("judgment")), "target": _row_target(target),
           "retrieval": _row_retrieval(row.get("retrieval"), target)}
    if not isinstance(row.get("abstention"), bool):  # optional then: the protocol's rule, from the question id
        out["abstention"] = is_abstention(str(row.get("question_id", "")))
    return out


# --------------------------------------------------------------------------- metrics.json


def _metrics_loop_rows(card: Mapping[str, Any]) -> dict[str, Any]:
    """1.0.0 -> 1.1.0. ``loop_rows`` counted its rows as ``n_total`` until ec6ed1a (the MIXED ROWS banner counts
    the scored rows): named ``rows`` since; the ``cost`` block's parts (``_metrics_cost_parts``). 1.1.0 also added
    the blocks ``batches``, ``code_versions``, ``empty_hypotheses``, ``fingerprint``, ``judge_agreement``,
    ``judge_stability``, ``official_estimate``, ``truncation`` and ``verdicts`` (absent in an older file, and not
    written back when it is rewritten)."""
    out = {**card, "cost": _metrics_cost_parts(card.get("cost"))} if "cost" in card else dict(card)
    mixed = card.get("loop_rows")
    if not isinstance(mixed, Mapping) or "rows" in mixed or "n_total" not in mixed:
        return out
    return {**out, "loop_rows": {("rows" if k == "n_total" else k): v for k, v in mixed.items()}}


def _metrics_cost_parts(cost: Any) -> Any:
    """A ``cost`` block written before the memory system's dollars were apart from the judge's (2278474): no
    ``generation_usd``/``judge_usd``; their known sums stand for them where no row's cost was unknown."""
    if not isinstance(cost, Mapping):
        return cost
    unknown = bool(cost.get("rows_unknown_cost"))
    out = dict(cost)
    for part in ("generation", "judge"):
        out.setdefault(f"{part}_usd", None if unknown else cost.get(f"known_{part}_usd") or 0.0)
    return out


# --------------------------------------------------------------------------- verdicts.jsonl


BEFORE_ORIGINS = {"kind": "imported", "file": None, "format": "archive",
                  "note": "imported before origins were recorded"}
"""The origin of an archive line written before lines recorded theirs: such lines entered an archive only by import."""


def _archive_origin(line: Mapping[str, Any]) -> dict[str, Any]:
    """1.1.0 -> 1.2.0. Lines before 1.2.0 (d0bf04d's archive, filled only by ``judge_shim import``) record no
    ``origin``: imported, from a file not named. (1.2.0 also gave every line a ``verdict_id``: ``verdict_archive``
    computes an older line's from what it says.)"""
    origin = line.get("origin")
    if isinstance(origin, Mapping) and origin.get("kind") in ("made", "imported"):
        return dict(line)
    return {**line, "origin": dict(BEFORE_ORIGINS)}


# --------------------------------------------------------------------------- the kinds


STEPS: dict[str, tuple[Step, ...]] = {
    "config": (Step("1.1.0", "keys added: successorJudge, judgeReasoningEffort, confirmCostUsd, batch, batchFallback, "
                             "batchPollSeconds (a config without them takes their defaults)", _no_change),),
    "run-meta": (Step("1.1.0", "the judge's alias recorded as its snapshot; endpoints, pacing, exit_status, shards, "
                               "invocations added", _meta_judge_snapshot),),
    "item-result": (Step("2.0.0", "judgment.official by the official host; the debug contract's fields",
                         _row_official_by_host),),
    "metrics": (Step("1.1.0", "loop_rows.n_total named rows; cost's generation_usd and judge_usd; blocks added",
                     _metrics_loop_rows),),
    "comparison": (Step("1.1.0", "fields added: code, differences, flaky_flips, judge_agreement, kind, "
                                 "net_excluding_flaky, not_compared", _no_change),),
    "verdict-archive": (Step("1.1.0", "the header line, endpoint_host and request_shape added (a line without a host "
                                      "is its author's claim)", _no_change),
                        Step("1.2.0", "origin on every line (an older line's verdict_id is computed from "
                                      "what it says: verdict_archive.verdict_id)", _archive_origin)),
    "judge-agreement": (Step("1.1.0", "by_source added at f8eaf73 (an older record lacks it: the estimate says "
                                      "so)", _no_change),),
}
"""Each kind's steps in version order. A kind absent here has had one version since it carried one."""


def upgrade(kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` (one parsed file or line of ``kind``) in today's shape: every step above its ``schemaVersion``
    applied, in order. A newer object (a minor this version reads) passes through. ``obj`` is not changed."""
    if kind not in SCHEMA_VERSIONS:
        raise KeyError(f"unknown kind of file {kind!r}")
    found = version_key(obj.get("schemaVersion"))
    out = dict(obj)
    for step in STEPS.get(kind, ()):
        if found < version_key(step.to_version):
            out = step.apply(out)
    return out
