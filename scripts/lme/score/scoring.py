"""A run's figures as ``metrics.json`` holds them: the official accuracies (``metrics``), the comparability notes,
the reported gold errors, cost, tokens, latency, retrieval, truncation, judge stability and agreement, and for a run
labelled (partly) by a calibrated non-official judge an estimate of its official accuracy (``corrected_figures``).

Every accuracy is given twice, strict and judged-only (``metrics``). The notes say exactly why a run is not
comparable with published LongMemEval figures (judge, dataset items, top_k covering every session, incomplete run,
errors). A second figure leaves out items whose gold was reported wrong upstream (references/known-gold-errors.json,
status ``wrong``); it never replaces the official one. ``scorecard_md`` renders it; ``report_outputs`` writes it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any, Iterable, Mapping, Sequence

from lme.data import dataset
from lme.data import dataset_label
from lme.data import gold_registry
from lme.judge import agreement
from lme.judge import stability
from lme.score import code_versions
from lme.score import corrected_figures
from lme.score import judge_provenance
from lme.score import loop_rows
from lme.score import metrics
from lme.score import pipeline_health
from lme.score import retrieval_metrics
from lme.score.official_estimate import quantile
from lme.score.scorecard_record import (
    BatchStage, Batches, CacheHits, Cost, DatasetRef, GoldEntry, GoldExclusion, HypothesesRef, JudgeAgreement,
    JudgeStability, Latency, RegistryIdentity, Retrieval, Retries, Scorecard, StageLatency, TargetRef, TokenCount,
    Tokens, Truncation, Usage,
)
from lme.score.scoring_inputs import ScoringInputs
from lme.core.records import CallRecord
from lme.core.run_records import ResultRow, RunMeta
from lme.store.run_store import RunData
from lme.core.errors import UserError
from lme.core.facts import (
    HYPOTHESES_TARGET,
    OFFICIAL_JUDGE_MODEL,
    OFFICIAL_JUDGE_PROVIDER,
    OFFICIAL_SET_SIZE,
    QUESTION_TYPES,
    RETRIEVAL_KS,
    is_abstention,
    is_official_judge,
    is_offline,
)
from lme.models.prices import call_cost, judge_call, spend



# --------------------------------------------------------------------------- accounting


def percentiles(values: Iterable[float]) -> Latency:
    """p50 / p95 (linear interpolation between closest ranks) and max; None when there are no values."""
    data = sorted(float(v) for v in values)
    if not data:
        return Latency()
    return Latency(len(data), quantile(data, 0.50), quantile(data, 0.95), data[-1])


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def cost_summary(rows: Iterable[ResultRow]) -> Cost:
    """What the rows cost (``prices.spend``: the same sums ``run_status`` shows), the memory system's part apart from
    the judge's; a part with a row it cannot price is unknown (None), never counted as 0."""
    paid = spend(rows)
    return Cost(paid.rows, paid.rows_unknown, paid.total_usd, paid.known_total_usd, paid.known_generation_usd,
                paid.known_judge_usd, paid.generation_usd, paid.judge_usd, paid.rows_unknown_generation,
                paid.rows_unknown_judge)


def batch_summary(rows: Iterable[ResultRow]) -> Batches | None:
    """Which stages ran through Batch APIs: per stage the calls billed as batch, their batches and dollars, and
    the calls billed synchronously; None when no call was batched."""

    stages = {name: {"batch_calls": 0, "sync_calls": 0, "batch_ids": set(), "batch_usd": 0.0}
              for name in ("generation", "judge")}

    def count(stage: str, call: CallRecord) -> None:
        if call.cached:
            return
        entry = stages[stage]
        if call.pricing == "batch":
            entry["batch_calls"] += 1
            entry["batch_ids"].add(call.batch_id)
            usd = call_cost([call])
            entry["batch_usd"] = None if usd is None or entry["batch_usd"] is None else entry["batch_usd"] + usd
        else:
            entry["sync_calls"] += 1

    for row in rows:
        for call in row.calls:
            count("generation", call)
        verdict = row.judgment
        if verdict is not None and verdict.source == "call":
            count("judge", replace(judge_call(verdict), cached=False))
    if not any(entry["batch_calls"] for entry in stages.values()):
        return None
    return Batches(*(BatchStage(e["batch_calls"], len(e["batch_ids"]), e["batch_usd"], e["sync_calls"])
                     for e in stages.values()))


def usage_summary(rows: Sequence[ResultRow]) -> Usage:
    gen_lat, judge_lat = [], []
    count: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    errors_by_stage: Counter[str] = Counter()
    for row in rows:
        count["gen_in"] += int(row.tokensIn or 0)
        count["gen_out"] += int(row.tokensOut or 0)
        if row.latencyMs is not None:
            gen_lat.append(row.latencyMs)
        for call in row.calls:
            count["generation_calls"] += 1
            count["generation_calls_cached"] += call.cached
            count["gen_retries"] += call.retries
        verdict = row.judgment
        if verdict is not None:
            count["judge_in"] += int(_num(verdict.tokensIn) or 0)
            count["judge_out"] += int(_num(verdict.tokensOut) or 0)
            if _num(verdict.latencyMs) is not None:
                judge_lat.append(verdict.latencyMs)
            count["judge_cached"] += bool(verdict.cached)
            count["judge_archived"] += verdict.source == "archive"
            count["judge_retries"] += max(0, int(_num(verdict.attempts) or 1) - 1)
        if row.status == "error":
            errors[row.error.kind if row.error else "unknown"] += 1
            errors_by_stage[row.error.stage if row.error else "unknown"] += 1
    return Usage(
        Tokens(TokenCount(count["gen_in"], count["gen_out"]), TokenCount(count["judge_in"], count["judge_out"])),
        StageLatency(percentiles(gen_lat), percentiles(judge_lat)),
        CacheHits(count["generation_calls"], count["generation_calls_cached"], count["judge_cached"],
                  count["judge_archived"]),
        Retries(count["gen_retries"], count["judge_retries"]),
        dict(sorted(errors.items())), dict(sorted(errors_by_stage.items())))


def retrieval_summary(rows: Mapping[str, ResultRow], types: Mapping[str, str]) -> Retrieval | None:
    """Session-level retrieval metrics at ``RETRIEVAL_KS`` over rows that carry ranked ids; None when none do.

    Always metrics of the SESSION ranking, whatever the target indexed: ``granularity`` lists what rows report
    in ``retrieval.granularity`` (a turn-granularity target ranks a session at its best turn; this is not
    upstream's turn-level evaluation).
    """
    per_item: dict[str, list[dict[str, float]]] = {t: [] for t in QUESTION_TYPES}
    carried = skipped_abstention = skipped_no_gold = covers_all = repeated_ids = 0
    granularities: Counter[str] = Counter()
    for qid, qtype in types.items():
        row = rows.get(qid)
        retrieval = None if row is None else row.retrieval
        ranked = None if retrieval is None else retrieval.retrieved_session_ids
        if ranked is None:
            continue
        carried += 1
        detail = retrieval.detail
        granularities[str((detail and detail.granularity) or "unreported")] += 1
        covers_all += bool(detail and detail.covers_all)
        repeated_ids += len(set(ranked)) < len(ranked)
        gold = list(retrieval.gold_session_ids)
        if retrieval_metrics.should_skip(qid, gold):
            if is_abstention(qid):
                skipped_abstention += 1
            else:
                skipped_no_gold += 1
            continue
        per_item[qtype].append(retrieval_metrics.evaluate(list(ranked), gold, RETRIEVAL_KS))
    if carried == 0:
        return None
    every = [m for items in per_item.values() for m in items]
    return Retrieval(
        ks=tuple(RETRIEVAL_KS), level="session", granularity=dict(sorted(granularities.items())),
        items_with_retrieval=carried, scored=len(every), skipped_abstention=skipped_abstention,
        skipped_no_gold=skipped_no_gold, top_k_covers_all=covers_all, rankings_with_repeated_ids=repeated_ids,
        overall=retrieval_metrics.mean_metrics(every),
        per_type={t: {"n": len(v), **retrieval_metrics.mean_metrics(v)} for t, v in per_item.items() if v})


def truncation_summary(rows: Iterable[ResultRow]) -> Truncation | None:
    """How often the reader's history was cut to fit the context window (rows' ``target.truncation``), and how
    often that dropped an evidence session (``dropped_evidence``; unknown when the target named no dropped ids, and
    in rows of older runs). None when no row reports truncation."""
    reported = truncated = lost = unknown = retried = 0
    for row in rows:
        info = None if row is None or row.target is None else row.target.truncation
        if info is None:
            continue
        reported += 1
        retried += info.retried_after_too_long
        if not info.truncated:
            continue
        truncated += 1
        if info.dropped_evidence is not None:
            lost += info.dropped_evidence > 0
        else:
            unknown += 1
    if reported == 0:
        return None
    return Truncation(reported, truncated, lost, unknown, retried)


# --------------------------------------------------------------------------- comparability


def comparability_notes(run: RunData, covered_rows: Sequence[ResultRow], card: Scorecard,
                        *, variant: str | None = None, run_id: str | None = None) -> list[str]:
    """Every reason the run's figures cannot stand beside published LongMemEval figures; empty = comparable.
    ``card``: the scorecard without its notes yet."""
    notes = []
    judge = card.judge
    judged = [r.judgment for r in covered_rows if r.judged and r.judgment is not None]
    if not is_official_judge(judge.provider, judge.model):
        calibration = card.judge_agreement
        measured = (f"; a successor judge: {agreement.describe(calibration.to_dict())}" if calibration else
                    "; its agreement with the official judge was never measured (scripts/judge_agreement.py)"
                    if not is_offline(judge.provider) else "")
        notes.append(f"judge is {judge.provider} {judge.model}, not the official "
                     f"{OFFICIAL_JUDGE_PROVIDER} {OFFICIAL_JUDGE_MODEL}{measured}")
    other_model = Counter(f"{j.provider} {j.model}" for j in judged
                          if not is_official_judge(j.provider, j.model) and not j.successor)
    for what, count in sorted(other_model.items()):
        if what != f"{judge.provider} {judge.model}":
            notes.append(f"{count} judged row(s) were judged by {what}")
    notes += judge_provenance.notes(run.meta, card.verdicts, len(judged)) if card.verdicts else []
    sha = run.dataset_sha256
    recognition = run.meta.dataset.recognition
    if recognition:  # by item fingerprints (runs made before they were recorded: by file sha256 only)
        if recognition.get("release") is None:
            notes.append(f"dataset not recognised as an official release: {recognition.get('summary')}")
        elif recognition.get("differing") or recognition.get("extra") or recognition.get("unknown"):
            notes.append(f"dataset items not all vouched for: {recognition.get('summary')}")
    elif not sha or dataset.is_known_official(str(sha)) is None:
        notes.append(f"dataset file not a known official release (sha256 {sha or 'missing'})")
    if card.coverage < 1:
        notes.append(f"run incomplete: {card.judged} of {card.n_total} items judged "
                     f"(coverage {card.coverage:.4f})")
    if run.meta.status != "completed":
        notes.append(f"run status is {run.meta.status!r}, not 'completed'")
    if card.errors:
        kinds = ", ".join(f"{k} {v}" for k, v in card.usage.errors_by_kind.items())
        notes.append(f"errors present: {card.errors} error row(s) ({kinds})")
    manifest_n = run.n_total
    if card.n_total < manifest_n:
        notes.append(f"strict denominator narrowed to the first {card.n_total} of the run's {manifest_n} items "
                     "(N_TOTAL / --n-total)")
    if card.n_total < OFFICIAL_SET_SIZE:
        notes.append(f"N = {card.n_total} items (the official set has {OFFICIAL_SET_SIZE})")
    covers_all = card.retrieval.top_k_covers_all if card.retrieval else 0
    if covers_all:
        notes.append(f"top_k >= the number of sessions on {covers_all} item(s): retrieval returned every session, "
                     "so those items measure full context, not retrieval (their retrieval figures are 1.0)")
    trunc = card.truncation
    if trunc and trunc.lost_evidence:
        notes.append(f"history truncated to fit the context window on {trunc.truncated} item(s); "
                     f"{trunc.lost_evidence} of them lost an evidence session the reader never saw")
    if trunc and trunc.lost_evidence_unknown:
        notes.append(f"history truncated on {trunc.lost_evidence_unknown} item(s) whose rows do not say whether "
                     "an evidence session was dropped (run made before that was recorded)")
    return notes + _what_made_it_notes(run, card, variant, run_id)


def _what_made_it_notes(run: RunData, card: Scorecard, variant: str | None, run_id: str | None) -> list[str]:
    """Notes on what made the rows: more than one version of the code; a variant or run id given otherwise."""
    notes = []
    if card.code_versions is not None and card.code_versions.mixed:
        notes.append(f"{card.code_versions.describe()}: the figures are not one version's")
    if variant and run.meta.variant and variant != run.meta.variant:
        notes.append(f"variant given as {variant!r} but the run recorded {run.meta.variant!r}")
    if run_id and run_id != run.run_id:
        notes.append(f"run id given as {run_id!r} but the run recorded {run.run_id!r}")
    return notes


# --------------------------------------------------------------------------- the scorecard


def build_scorecard(run: RunData, n_total: int | None = None, *, inputs: ScoringInputs, variant: str | None = None,
                    run_id: str | None = None, gold_errors: Sequence[Mapping[str, Any]] | None = None) -> Scorecard:
    """The scorecard of ``run`` over its first ``n_total`` manifest items (all when None). ``inputs``: what it
    takes from outside the run folder (``scoring_inputs``)."""
    types, unattributed = run.item_types(n_total)
    try:
        scored = metrics.score(metrics.strict_labels(run.rows, types), types, unattributed=unattributed)
    except ValueError as err:
        raise UserError(f"cannot score run {run.path}: {err}",
                        fix="check manifest.json and item-results.jsonl") from None
    covered = [run.rows[q] for q in types if q in run.rows]
    usage = usage_summary(covered)
    errors = sum(1 for r in covered if r.status == "error")
    judge = run.judge  # aliases resolved
    record = Scorecard(
        run_id=run.run_id, variant=variant or run.meta.variant, status=run.meta.status, judge=judge,
        dataset=_dataset(run, variant), target=_target(run.meta), **vars(scored),
        errors=errors, not_run=scored.n_total - scored.judged - errors,
        rows_outside_item_set=sum(1 for q in run.rows if q not in types),
        excluding_gold_errors=_without_gold_errors(run, types, unattributed, variant or run.meta.variant,
                                                   gold_errors),
        cost=cost_summary(run.every_row()), batches=batch_summary(covered), usage=usage, latency=usage.latency_ms,
        retrieval=retrieval_summary(run.rows, types), truncation=truncation_summary(covered),
        pipeline_health=pipeline_health.summarise(covered),
        loop_rows=loop_rows.summary(inputs.kept_fixes, [r.question_id for r in covered]),
        judge_stability=JudgeStability.from_dict(stability.summary(covered, set(inputs.flaky))),
        judge_agreement=None if is_official_judge(judge.provider, judge.model) else _agreement(
            inputs.agreement_of(judge.provider, judge.model, _run_shape(covered))),
        verdicts=judge_provenance.summary(run.meta, covered, inputs),
        empty_hypotheses=judge_provenance.empty_hypotheses(covered),
        code_versions=code_versions.summary(run, covered))
    notes = comparability_notes(run, covered, record, variant=variant, run_id=run_id)
    return replace(record, comparability_notes=tuple(notes),
                   official_estimate=corrected_figures.estimate_block(run.meta, run.rows, types, record, inputs))


def _agreement(record: Mapping[str, Any] | None) -> JudgeAgreement | None:
    compact = agreement.compact(record)
    return None if compact is None else JudgeAgreement.from_dict(compact)


def _dataset(run: RunData, variant: str | None) -> DatasetRef:
    info = run.meta.dataset
    return DatasetRef(sha256=run.dataset_sha256, path=info.path,
                      known_official=dataset.is_known_official(str(run.dataset_sha256 or "")),
                      release=info.release, recognition=info.recognition,
                      duplicate_sessions=len(info.duplicate_sessions or {}),
                      name=dataset_label.display_name(variant or run.meta.variant, info.path),
                      line=dataset_label.recognition_line(info.to_dict()))


def _without_gold_errors(run: RunData, types: Mapping[str, str], unattributed: int, run_variant: str | None,
                         gold_errors: Sequence[Mapping[str, Any]] | None) -> GoldExclusion:
    """``excluding_gold_errors``: the second figure, without the items the registry reports wrong for this run's
    variant and release, and the registry's other items that concern the run (counted in both figures)."""
    entries = gold_registry.load() if gold_errors is None else gold_registry.normalize(gold_errors)
    release = run.meta.dataset.release
    bad = gold_registry.excluded(entries, run_variant, release)
    also_listed = gold_registry.listed(entries, run_variant, release)
    kept = {q: t for q, t in types.items() if q not in bad}
    excl = metrics.score(metrics.strict_labels(run.rows, kept), kept, unattributed=unattributed)

    def entry(q: str, listed: Mapping[str, Any]) -> GoldEntry:
        return GoldEntry(q, tuple(listed[q].get("issues", [])), listed[q]["status"])

    return GoldExclusion(
        excluded=tuple(entry(q, bad) for q in types if q in bad),
        listed_not_excluded=tuple(entry(q, also_listed) for q in types if q in also_listed and q not in bad),
        n_total=excl.n_total, correct=excl.correct, judged=excl.judged, overall=excl.overall,
        task_averaged=excl.task_averaged, abstention=excl.abstention,
        registry=RegistryIdentity.from_dict(gold_registry.identity(entries)))


def _run_shape(rows: Sequence[ResultRow]) -> Mapping[str, Any] | None:
    """The request shape the run's judge verdicts record (None: upstream's, recorded before shapes were)."""
    return next((r.judgment.request_shape for r in rows if r.judgment is not None and r.judgment.request_shape), None)


def _target(meta: RunMeta) -> TargetRef:
    """The run's target as the scorecard names it; a hypotheses run also names its file and the file's sha256."""
    target = meta.target
    options = target.options or {}
    hypotheses = HypothesesRef(options.get("file"), options.get("sha256")) if target.name == HYPOTHESES_TARGET else None
    return TargetRef(target.name, target.provider, target.model, hypotheses)


