"""The one result-row factory and the one run writer of the tests (invented values, never real data).

``result_row`` builds a row's JSON form (what ``item-results.jsonl`` holds); ``typed`` turns such rows into the
``ResultRow`` records the toolkit's readers take; ``write_run`` writes a run directory through ``run_store`` (the
writer the driver uses): run-meta, manifest, the rows, a completed mark per judged row. The older helpers
(``official_row`` here, ``helpers_data.judged_row``, ``loop_testing.make_row`` and its project-level ``write_run``)
are presets of these two.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from lme.store import run_rows, run_store
from lme.core.facts import OFFICIAL_JUDGE_MODEL, SCHEMA_VERSION
from lme.core.run_records import Manifest, ResultRow, RunMeta

OFFICIAL_SHA = "d6f21ea9d60a0d56f34a05b609c79c88a451d2ae03597821ea3d5a9678c3a442"
OFFICIAL_JUDGMENT = {"model": OFFICIAL_JUDGE_MODEL, "provider": "openai", "requested_model": "gpt-4o",
                     "official": True}
_UNSET: Any = object()
SSU, MS, TR, KU = "single-session-user", "multi-session", "temporal-reasoning", "knowledge-update"


def result_row(question_id: str, question_type: str = "multi-session", label: bool | None = True, *,
               question: str = "What colour is my bike?", answer: str | int = "blue",
               hypothesis: str | None = _UNSET, judgment: Mapping[str, Any] | None = None,
               judge_base: Mapping[str, Any] = OFFICIAL_JUDGMENT, error: Mapping[str, Any] | None = None,
               finished_at: str = "2026-11-29T19:40:00Z", without: Sequence[str] = (),
               **fields: Any) -> dict[str, Any]:
    """A schema-valid row: judged with ``label`` (``judgment`` fields over ``judge_base``, the official judge), or,
    when ``label`` is None, an error row (``error`` fields over a generation timeout). ``fields`` set any other
    key; ``without`` leaves optional keys out (a row written by an older version)."""
    judged = label is not None
    row: dict[str, Any] = {
        "schemaVersion": SCHEMA_VERSION,
        "question_id": question_id,
        "question_type": question_type,
        "question": question,
        "answer": answer,
        "abstention": "_abs" in question_id,
        "status": "judged" if judged else "error",
        "hypothesis": (f"hyp {question_id}" if judged else None) if hypothesis is _UNSET else hypothesis,
        "judgment": ({**dict(judge_base), "label": label, "raw": "yes" if label else "no", **dict(judgment or {})}
                     if judged else None),
        "latencyMs": 1.0,
        "tokensIn": 1,
        "tokensOut": 1,
        "target": {"name": "t", "provider": "offline", "model": "m", "debug": {}},
        "retrieval": None,
        "cost": None,
        "calls": [],
        "error": None if judged else {"stage": "generate", "kind": "timeout", "message": "gave up", "attempts": 3,
                                      **dict(error or {})},
        "finished_at": finished_at,
    }
    row.update(fields)
    for key in without:
        if key not in fields:
            row.pop(key, None)
    return row


def official_row(qid: str, qtype: str, label: bool | None, *, hypothesis: str | None = None, error_kind: str = "timeout",
        judge_model: str = OFFICIAL_JUDGE_MODEL, official: bool = True, judge_provider: str = "openai",
        **extra: Any) -> dict[str, Any]:
    """A row judged by the official judge with call figures (``result_row`` preset): judged with ``label``, or an
    error row of ``error_kind`` when ``label`` is None."""
    if hypothesis is None and label is not None:
        hypothesis = f"hyp {qid}"
    judgment = {"model": judge_model, "provider": judge_provider, "official": official, "tokensIn": 50,
                "tokensOut": 1, "latencyMs": 20.0, "attempts": 1, "cached": False}
    fields = {"latencyMs": 100.0, "tokensIn": 10, "tokensOut": 2, "target": {"name": "t", "provider": "p", "model": "m"},
              **extra}
    return result_row(
        qid, qtype, label, question=f"q {qid}?", answer=f"gold {qid}", hypothesis=hypothesis, judgment=judgment,
        error={"kind": error_kind, "message": "boom", "attempts": 5}, finished_at="2026-11-29T10:00:00Z", **fields)


def typed(rows: Mapping[str, Mapping[str, Any]]) -> dict[str, ResultRow]:
    """Rows by question id as the records the readers take."""
    return {qid: run_rows.row_of(r) for qid, r in rows.items()}


def run_meta(run_id: str, n_items: int, *, status: str = "completed", sha: str = OFFICIAL_SHA,
             judge: Mapping[str, Any] | None = None, variant: str = "_s",
             target: Mapping[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    """A run-meta's JSON form: a finished run over ``n_items`` items of the official ``_s`` file."""
    meta = {
        "schemaVersion": SCHEMA_VERSION,
        "runId": run_id,
        "status": status,
        "started_at": "2026-11-29T09:00:00Z",
        "finished_at": None if status == "running" else "2026-11-29T11:00:00Z",
        "variant": variant,
        "dataset": {"path": "data/longmemeval_s_cleaned.json", "sha256": sha, "items": n_items},
        "target": dict(target or {"name": "t", "provider": "p", "model": "m"}),
        "judge": dict(judge or {"provider": "openai", "model": OFFICIAL_JUDGE_MODEL, "official": True}),
    }
    meta.update(fields)
    return meta


def write_run(run_dir: Path, items: Mapping[str, str] | Sequence[tuple[str, str]], rows: Iterable[Mapping[str, Any]],
              *, meta: Mapping[str, Any] | None = None, n_total: int | None = None, **meta_fields: Any) -> Path:
    """A run directory through ``run_store``: run-meta (``meta``, else ``run_meta`` with ``meta_fields``), the
    manifest over ``items`` (qid -> type, in order), and ``rows`` appended in order with a mark per judged row."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    pairs = list(items.items()) if isinstance(items, Mapping) else list(items)
    run_store.write_meta(run_dir, RunMeta.from_dict(meta or run_meta(run_dir.name, len(pairs), **meta_fields)))
    manifest = Manifest.of(pairs)
    run_store.write_manifest(run_dir, manifest if n_total is None else Manifest(manifest.items, n_total))
    for r in rows:
        append_row(run_dir, r)
    return run_dir


def append_row(run_dir: Path, row: Mapping[str, Any], *, mark: bool = True) -> None:
    """Append one row's JSON form as the driver does (validated), and its completed mark when judged."""
    run_store.append_row(run_dir, run_rows.row_of(row))
    if mark and row["status"] == "judged":
        run_store.mark_completed(run_dir, str(row["question_id"]))


def append_unmarked(run_dir: Path, row: Mapping[str, Any]) -> None:
    """Append one row's JSON form without its completed mark (a crash between the two appends)."""
    append_row(run_dir, row, mark=False)


def load_rows(run_dir: Path, *, include_shards: bool = True) -> dict[str, dict[str, Any]]:
    """The last row per question id of a run (``run_store.load_results``), as JSON forms."""
    return {qid: r.to_dict() for qid, r in run_store.load_results(run_dir, include_shards=include_shards).items()}


def iter_rows(run_dir: Path, *, include_shards: bool = True) -> list[dict[str, Any]]:
    """Every row of a run in append order (``run_store.iter_rows``), as JSON forms."""
    return [r.to_dict() for r in run_store.iter_rows(run_dir, include_shards=include_shards)]


def scorecard_of(run: Any, n_total: int | None = None, **options: Any) -> Any:
    """``scoring.build_scorecard`` of a loaded run with the inputs ``scorecard.py`` passes: those of the project the
    run records or is held by (``scoring_inputs.for_run``)."""
    from lme.score import scoring, scoring_inputs

    return scoring.build_scorecard(run, n_total, inputs=scoring_inputs.for_run(run.path), **options)
