"""Score a run: metrics.json, scorecard.md and charts in the run directory; the Markdown table on stdout.

Usage:
    python scripts/scorecard.py RUN_DIR N_TOTAL VARIANT RUN_ID
    python scripts/scorecard.py --run-id RUN_ID [--project P] [--format md|json] [--no-charts] [--history FILE]
    python scripts/scorecard.py --latest [--project P]
    python scripts/scorecard.py --print-latest-id [--project P]
    python scripts/scorecard.py --run-id RUN_ID --compare OTHER_RUN     # also compare-<OTHER>.html (OTHER = before)

Every accuracy is given twice: strict (denominator = all N_TOTAL items; errors and items not run count as wrong)
and judged-only (denominator = judged items). A banner says exactly why a run is not comparable with published
LongMemEval figures (judge, dataset items, top_k covering every session, incomplete run, errors). A second figure
leaves out items whose gold was reported wrong upstream (references/known-gold-errors.json, status ``wrong``); it
never replaces the official one. Unstable judge labels (judge_stability) and a successor judge's measured agreement
are shown when there are any.
Works on completed, interrupted, failed and still-running runs (it only reads the run's files). Every scoring also
writes report.html, a self-contained page with the figures, charts and a drill-down per question
(``report_html``; open it in a browser). A run scored before and unchanged since (``score_fingerprint``: its files,
dataset, project state, the scoring code) is not scored again: its outputs are reused and printed.

Example:
    python scripts/scorecard.py --run-id baseline --format json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import dataset
import gold_registry
import hypotheses_file
import judge_agreement
import judge_stability
import metrics
import retrieval_metrics
import run_store
import schemas
import score_fingerprint
from run_records import ResultRow, RunMeta
from run_store import RunData, load_run
from errors import UserError, run_main
from facts import (
    OFFICIAL_JUDGE_MODEL,
    OFFICIAL_JUDGE_PROVIDER,
    OFFICIAL_SET_SIZE,
    QUESTION_TYPES,
    RETRIEVAL_KS,
    SCHEMA_VERSION,
    is_abstention,
    is_official_judge,
    is_offline,
)

KNOWN_GOLD_ERRORS = gold_registry.REGISTRY
MARKDOWN_RETRIEVAL_KS = (5, 10, 30, 50)
"""The k shown in scorecard.md (all six make the table too wide to read)."""


# --------------------------------------------------------------------------- accounting


def percentiles(values: Iterable[float]) -> dict[str, float | None]:
    """p50 / p95 (linear interpolation between closest ranks) and max; None when there are no values."""
    data = sorted(float(v) for v in values)
    out: dict[str, float | None] = {"n": len(data), "p50": None, "p95": None, "max": None}
    if not data:
        return out
    for name, q in (("p50", 0.50), ("p95", 0.95)):
        pos = q * (len(data) - 1)
        lo = int(pos)
        hi = min(lo + 1, len(data) - 1)
        out[name] = data[lo] + (data[hi] - data[lo]) * (pos - lo)
    out["max"] = data[-1]
    return out


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def cost_summary(rows: Iterable[ResultRow]) -> dict[str, Any]:
    """Dollar sums over rows; a row with no known total makes the total unknown (never counted as 0)."""
    known = {"generation_usd": 0.0, "judge_usd": 0.0, "total_usd": 0.0}
    unknown = 0
    n = 0
    for row in rows:
        n += 1
        cost = row.cost
        total = None if cost is None else cost.total_usd
        if cost is None or total is None:
            unknown += 1
            continue
        known["total_usd"] += total
        known["generation_usd"] += cost.generation_usd or 0.0
        known["judge_usd"] += cost.judge_usd or 0.0
    return {
        "rows": n,
        "rows_unknown_cost": unknown,
        "total_usd": known["total_usd"] if unknown == 0 else None,
        "known_total_usd": known["total_usd"],
        "known_generation_usd": known["generation_usd"],
        "known_judge_usd": known["judge_usd"],
    }


def usage_summary(rows: Sequence[ResultRow]) -> dict[str, Any]:
    """Tokens, latency percentiles, cache hits, retries and error rows by kind."""
    gen_lat, judge_lat = [], []
    tokens = {"generation": {"in": 0, "out": 0}, "judge": {"in": 0, "out": 0}}
    cache = {"generation_calls": 0, "generation_calls_cached": 0, "judge_cached": 0}
    retries = {"generation": 0, "judge": 0}
    errors: Counter[str] = Counter()
    errors_by_stage: Counter[str] = Counter()
    for row in rows:
        tokens["generation"]["in"] += int(row.tokensIn or 0)
        tokens["generation"]["out"] += int(row.tokensOut or 0)
        if row.latencyMs is not None:
            gen_lat.append(row.latencyMs)
        for call in row.calls:
            cache["generation_calls"] += 1
            cache["generation_calls_cached"] += bool(call.get("cached"))
            retries["generation"] += max(0, int(_num(call.get("attempts")) or 1) - 1)
        verdict = row.judgment
        if verdict is not None:
            tokens["judge"]["in"] += int(_num(verdict.tokensIn) or 0)
            tokens["judge"]["out"] += int(_num(verdict.tokensOut) or 0)
            if _num(verdict.latencyMs) is not None:
                judge_lat.append(verdict.latencyMs)
            cache["judge_cached"] += bool(verdict.cached)
            retries["judge"] += max(0, int(_num(verdict.attempts) or 1) - 1)
        if row.status == "error":
            errors[row.error.kind if row.error else "unknown"] += 1
            errors_by_stage[row.error.stage if row.error else "unknown"] += 1
    return {
        "tokens": tokens,
        "latency_ms": {"generation": percentiles(gen_lat), "judge": percentiles(judge_lat)},
        "cache": cache,
        "retries": retries,
        "errors_by_kind": dict(sorted(errors.items())),
        "errors_by_stage": dict(sorted(errors_by_stage.items())),
    }


def _target_debug(row: ResultRow | None) -> Mapping[str, Any]:
    return {} if row is None else row.debug


def retrieval_summary(rows: Mapping[str, ResultRow], types: Mapping[str, str]) -> dict[str, Any] | None:
    """Session-level retrieval metrics at ``RETRIEVAL_KS`` over rows that carry ranked ids; None when none do.

    Always metrics of the SESSION ranking, whatever the target indexed: ``granularity`` lists what rows report
    in ``target.debug.retrieval.granularity`` (a turn-granularity target ranks a session at its best turn; this is
    not upstream's turn-level evaluation).
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
        target_retrieval = _target_debug(rows.get(qid)).get("retrieval")
        granularity = target_retrieval.get("granularity") if isinstance(target_retrieval, Mapping) else None
        granularities[str(granularity or "unreported")] += 1
        covers_all += bool(isinstance(target_retrieval, Mapping) and target_retrieval.get("top_k_covers_all"))
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
    return {
        "ks": list(RETRIEVAL_KS),
        "level": "session",
        "granularity": dict(sorted(granularities.items())),
        "items_with_retrieval": carried,
        "scored": len(every),
        "skipped_abstention": skipped_abstention,
        "skipped_no_gold": skipped_no_gold,
        "top_k_covers_all": covers_all,
        "rankings_with_repeated_ids": repeated_ids,
        "overall": retrieval_metrics.mean_metrics(every),
        "per_type": {t: {"n": len(v), **retrieval_metrics.mean_metrics(v)} for t, v in per_item.items() if v},
    }


def truncation_summary(rows: Iterable[ResultRow]) -> dict[str, Any] | None:
    """How often the reader's history was cut to fit the context window (rows' ``target.debug.truncation``), and
    how often that dropped an evidence session (``dropped_evidence``; rows of older runs lack it: ``unknown``).
    None when no row reports truncation."""
    reported = truncated = lost = unknown = retried = 0
    for row in rows:
        info = _target_debug(row).get("truncation")
        if not isinstance(info, Mapping):
            continue
        reported += 1
        retried += bool(info.get("retried_after_too_long"))
        if not info.get("truncated"):
            continue
        truncated += 1
        dropped = info.get("dropped_evidence")
        if isinstance(dropped, int) and not isinstance(dropped, bool):
            lost += dropped > 0
        else:
            unknown += 1
    if reported == 0:
        return None
    return {"items_reporting": reported, "truncated": truncated, "lost_evidence": lost,
            "lost_evidence_unknown": unknown, "retried_after_too_long": retried}


# --------------------------------------------------------------------------- comparability


def load_known_gold_errors(path: Path = KNOWN_GOLD_ERRORS) -> list[dict[str, Any]]:
    return gold_registry.load(path)


def comparability_notes(run: RunData, covered_rows: Sequence[ResultRow], card: Mapping[str, Any],
                        *, variant: str | None = None, run_id: str | None = None) -> list[str]:
    """Every reason the run's figures cannot stand beside published LongMemEval figures; empty = comparable."""
    notes = []
    judge = run.judge
    judged = [r.judgment for r in covered_rows if r.judged and r.judgment is not None]
    if not is_official_judge(judge.get("provider"), judge.get("model")):
        agreement = card.get("judge_agreement")
        measured = (f"; a successor judge: {judge_agreement.describe(agreement)}" if agreement else
                    "; its agreement with the official judge was never measured (scripts/judge_agreement.py)"
                    if not is_offline(judge.get("provider")) else "")
        notes.append(f"judge is {judge.get('provider')} {judge.get('model')}, not the official "
                     f"{OFFICIAL_JUDGE_PROVIDER} {OFFICIAL_JUDGE_MODEL}{measured}")
    other_model = Counter(f"{j.provider} {j.model}" for j in judged if not is_official_judge(j.provider, j.model))
    for what, count in sorted(other_model.items()):
        if what != f"{judge.get('provider')} {judge.get('model')}":
            notes.append(f"{count} judged row(s) were judged by {what}")
    prompt_off = [j for j in judged if j.official is not True and is_official_judge(j.provider, j.model)]
    if prompt_off:
        templates = sorted({str(j.template_sha256 or "?")[:12] for j in prompt_off})
        notes.append(f"judge prompt is not upstream's get_anscheck_prompt on {len(prompt_off)} of {len(judged)} "
                     f"judged row(s) (evaluate_qa.py sha256 {', '.join(templates)})")
    endpoint = run.meta.endpoints.get(judge.get("provider"))
    if endpoint and endpoint != "default":  # "default": runs recorded before the SDK's resolved host was
        if judge.get("provider") == OFFICIAL_JUDGE_PROVIDER and "api.openai.com" not in endpoint:
            notes.append(f"judge endpoint is {endpoint}, not api.openai.com")
        if judge.get("provider") == "azure" and ".openai.azure.com" not in endpoint:
            notes.append(f"judge endpoint is {endpoint}, not an Azure OpenAI resource (*.openai.azure.com)")
    sha = run.dataset_sha256
    recognition = run.meta.dataset.get("recognition")
    if recognition:  # by item fingerprints (runs made before they were recorded: by file sha256 only)
        if recognition.get("release") is None:
            notes.append(f"dataset not recognised as an official release: {recognition.get('summary')}")
        elif recognition.get("differing") or recognition.get("extra") or recognition.get("unknown"):
            notes.append(f"dataset items not all vouched for: {recognition.get('summary')}")
    elif not sha or dataset.is_known_official(str(sha)) is None:
        notes.append(f"dataset file not a known official release (sha256 {sha or 'missing'})")
    if card["coverage"] < 1:
        notes.append(f"run incomplete: {card['judged']} of {card['n_total']} items judged "
                     f"(coverage {card['coverage']:.4f})")
    if run.meta.status != "completed":
        notes.append(f"run status is {run.meta.status!r}, not 'completed'")
    if card["errors"]:
        kinds = ", ".join(f"{k} {v}" for k, v in card["usage"]["errors_by_kind"].items())
        notes.append(f"errors present: {card['errors']} error row(s) ({kinds})")
    manifest_n = run.n_total
    if card["n_total"] < manifest_n:
        notes.append(f"strict denominator narrowed to the first {card['n_total']} of the run's {manifest_n} items "
                     "(N_TOTAL / --n-total)")
    if card["n_total"] < OFFICIAL_SET_SIZE:
        notes.append(f"N = {card['n_total']} items (the official set has {OFFICIAL_SET_SIZE})")
    covers_all = (card.get("retrieval") or {}).get("top_k_covers_all")
    if covers_all:
        notes.append(f"top_k >= the number of sessions on {covers_all} item(s): retrieval returned every session, "
                     "so those items measure full context, not retrieval (their retrieval figures are 1.0)")
    trunc = card.get("truncation") or {}
    if trunc.get("lost_evidence"):
        notes.append(f"history truncated to fit the context window on {trunc['truncated']} item(s); "
                     f"{trunc['lost_evidence']} of them lost an evidence session the reader never saw")
    if trunc.get("lost_evidence_unknown"):
        notes.append(f"history truncated on {trunc['lost_evidence_unknown']} item(s) whose rows do not say whether "
                     "an evidence session was dropped (run made before that was recorded)")
    if variant and run.meta.variant and variant != run.meta.variant:
        notes.append(f"variant given as {variant!r} but the run recorded {run.meta.variant!r}")
    if run_id and run_id != run.run_id:
        notes.append(f"run id given as {run_id!r} but the run recorded {run.run_id!r}")
    return notes


# --------------------------------------------------------------------------- the scorecard


def _status(card: Mapping[str, Any]) -> str:
    """The run's status, saying so when a completed invocation (``--max``) left items not run yet."""
    if card["status"] == "completed" and card["not_run"]:
        return f"completed (this invocation; {card['not_run']} items not run yet)"
    return str(card["status"])


def build_scorecard(run: RunData, n_total: int | None = None, *, variant: str | None = None,
                    run_id: str | None = None, gold_errors: Sequence[Mapping[str, Any]] | None = None
                    ) -> dict[str, Any]:
    """The metrics.json record for ``run`` over its first ``n_total`` manifest items (all when None)."""
    types, unattributed = run.item_types(n_total)
    try:
        scored = metrics.score(metrics.strict_labels(run.rows, types), types, unattributed=unattributed)
    except ValueError as err:
        raise UserError(f"cannot score run {run.path}: {err}",
                        fix="check manifest.json and item-results.jsonl") from None
    covered = [run.rows[q] for q in types if q in run.rows]
    ignored_rows = sum(1 for q in run.rows if q not in types)
    usage = usage_summary(covered)
    errors = sum(1 for r in covered if r.status == "error")

    entries = gold_registry.load() if gold_errors is None else gold_registry.normalize(gold_errors)
    run_variant = variant or run.meta.variant
    release = run.meta.dataset.get("release")
    bad = gold_registry.excluded(entries, run_variant, release)
    present = [q for q in types if q in bad]
    also_listed = gold_registry.listed(entries, run_variant, release)
    kept = {q: t for q, t in types.items() if q not in bad}
    excl = metrics.score(metrics.strict_labels(run.rows, kept), kept, unattributed=unattributed)
    project = judge_stability.project_of_run(run.meta, run.path)

    card: dict[str, Any] = {
        "schemaVersion": SCHEMA_VERSION,
        "run_id": run.run_id,
        "variant": variant or run.meta.variant,
        "status": run.meta.status,
        "judge": run.judge,
        "dataset": {"sha256": run.dataset_sha256, "path": run.meta.dataset.get("path"),
                    "known_official": dataset.is_known_official(str(run.dataset_sha256 or "")),
                    "release": release, "recognition": run.meta.dataset.get("recognition"),
                    "duplicate_sessions": len(run.meta.dataset.get("duplicate_sessions") or {})},
        "target": _target(run.meta),
        **{k: scored[k] for k in ("n_total", "judged", "correct", "coverage", "unattributed", "overall",
                                  "task_averaged", "abstention", "per_type")},
        "errors": errors,
        "not_run": scored["n_total"] - scored["judged"] - errors,
        "rows_outside_item_set": ignored_rows,
        "excluding_gold_errors": {
            "excluded": [{"question_id": q, "issues": bad[q].get("issues", []), "status": bad[q]["status"]}
                         for q in present],
            "listed_not_excluded": [{"question_id": q, "issues": also_listed[q].get("issues", []),
                                     "status": also_listed[q]["status"]} for q in types
                                    if q in also_listed and q not in bad],
            "n_total": excl["n_total"], "correct": excl["correct"], "judged": excl["judged"],
            "overall": excl["overall"], "task_averaged": excl["task_averaged"], "abstention": excl["abstention"],
        },
        "cost": cost_summary(covered),
        "usage": usage,
        "latency": usage["latency_ms"],
        "retrieval": retrieval_summary(run.rows, types),
        "truncation": truncation_summary(covered),
        "judge_stability": judge_stability.summary(covered, judge_stability.StabilityRegistry(project).flaky()),
        "judge_agreement": None if is_official_judge(run.judge.get("provider"), run.judge.get("model"))
        else judge_agreement.compact(judge_agreement.latest(project, run.judge.get("provider"), run.judge.get("model"))),
    }
    notes = comparability_notes(run, covered, card, variant=variant, run_id=run_id)
    card["comparable"] = not notes
    card["comparability_notes"] = notes
    schemas.validate("metrics", card, where=f"metrics for run {run.run_id}")
    return card


def _target(meta: RunMeta) -> dict[str, Any]:
    """The run's target as the scorecard names it; a hypotheses run also names its file and the file's sha256."""
    target = meta.target
    out = {k: target.get(k) for k in ("name", "provider", "model")}
    if target.get("name") == hypotheses_file.TARGET:
        out["hypotheses"] = {k: (target.get("options") or {}).get(k) for k in ("file", "sha256")}
    return out


def _acc(block: Mapping[str, Any], which: str) -> str:
    count = block["n"] if which == "strict" else block["judged"]
    return f"{metrics.fmt(block['accuracy_' + which])} ({block['correct']}/{count})"


def _usd(value: float | None) -> str:
    return "—" if value is None else f"${value:,.4f}"


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value / 1000:.2f} s"


def _hypotheses_lines(card: Mapping[str, Any]) -> list[str]:
    hyp = (card.get("target") or {}).get("hypotheses")
    if not hyp:
        return []
    return [f"Hypotheses judged as written from `{hyp.get('file')}` (sha256 `{str(hyp.get('sha256'))[:12]}`): no "
            "generation in this run; a question without a line is a missing_hypothesis error row.", ""]


def render_markdown(card: Mapping[str, Any]) -> str:
    """The scorecard for people: banner, both accuracies with their denominators, per type, cost, latency."""
    ta = card["task_averaged"]
    n_types = len(ta["types_strict"])
    n_judged_types = len(ta["types_judged"])
    judged_ta = metrics.fmt(ta["accuracy_judged"]) + (
        f" (over {n_judged_types} of {n_types} types, those with a judged item)" if n_judged_types < n_types else "")
    lines = [f"# LongMemEval scorecard — run `{card['run_id']}` ({card['variant']})", ""]
    if card["comparability_notes"]:
        lines.append("> **NOT COMPARABLE with published LongMemEval results:**")
        lines += [f"> - {n}" for n in card["comparability_notes"]]
        lines.append("")
    judge = card["judge"]
    recognition = card["dataset"].get("recognition")
    lines += [
        f"Status: **{_status(card)}** · judged {card['judged']}/{card['n_total']} · errors {card['errors']} · "
        f"not run {card['not_run']} · judge {judge.get('provider')} {judge.get('model')} "
        f"(official={judge.get('official')}) · dataset "
        + (f"{recognition['summary']} (release: {recognition.get('release') or 'unknown'})" if recognition
           else card['dataset']['known_official'] or 'unrecognised file'),
        "",
        *_hypotheses_lines(card),
        f"| figure | strict (all {card['n_total']} items; errors/not run = wrong) | "
        f"judged only ({card['judged']} items) |",
        "|---|---|---|",
        f"| Overall accuracy (micro) | {_acc(card['overall'], 'strict')} | {_acc(card['overall'], 'judged')} |",
        f"| Task-averaged accuracy (macro, {n_types} types) | {metrics.fmt(ta['accuracy_strict'])} | "
        f"{judged_ta} |",
        f"| Abstention accuracy (`_abs` ids) | {_acc(card['abstention'], 'strict')} | "
        f"{_acc(card['abstention'], 'judged')} |",
        "",
        "| question type | n | judged | correct | strict | judged only | 95% Wilson (strict) |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for qtype, b in card["per_type"].items():
        if b["n"]:
            lines.append(f"| {qtype} | {b['n']} | {b['judged']} | {b['correct']} | "
                         f"{metrics.fmt(b['accuracy_strict'])} | {metrics.fmt(b['accuracy_judged'])} | "
                         f"{metrics.fmt_interval(b['wilson_strict'])} |")
    if not ta["all_six_types"]:
        lines += ["", f"Task-averaged figure covers only {n_types} of 6 types: {', '.join(ta['types_strict'])}."]
    if card["rows_outside_item_set"]:
        lines += ["", f"{card['rows_outside_item_set']} result rows lie outside the first {card['n_total']} items "
                      "and are not scored."]
    if card["unattributed"]:
        lines += ["", f"{card['unattributed']} items beyond the manifest were never run: wrong in the strict "
                      "overall figure, in no per-type figure."]
    ex = card["excluding_gold_errors"]
    if ex["excluded"]:
        ids = ", ".join(f"{e['question_id']} (#{', #'.join(str(i) for i in e['issues'])})" for e in ex["excluded"])
        lines += ["", "## Excluding reported gold errors (a second figure; the official one is above)", "",
                  f"Left out (status wrong): {ids}. Strict overall {_acc(ex['overall'], 'strict')}, task-averaged "
                  f"{metrics.fmt(ex['task_averaged']['accuracy_strict'])}, abstention "
                  f"{_acc(ex['abstention'], 'strict')}."]
    listed = Counter(e["status"] for e in ex.get("listed_not_excluded") or [])
    if listed:
        lines += ["", "Also in the known-defect registry, counted in both figures: " + ", ".join(
            f"{n} {status}" for status, n in sorted(listed.items())) + " (references/known-gold-errors.json)."]
    stab = card.get("judge_stability") or {}
    if stab.get("repeated_items") or stab.get("unstable_ids"):
        shown = ", ".join(stab["unstable_ids"][:20]) + (" ..." if len(stab["unstable_ids"]) > 20 else "")
        lines += ["", "## Judge stability", "",
                  f"{len(stab['unstable_ids'])} of {card['judged']} judged labels are unstable (the same judge "
                  f"prompt got both yes and no): {stab['unstable_in_run']} in this run's repeated verdicts "
                  f"({stab['repeated_items']} items judged more than once), {stab['flaky_in_registry']} flaky in the "
                  f"project's judge-stability.jsonl. The first verdict is the official label."
                  + (f" Unstable: {shown}." if shown else "")]
    cost, usage = card["cost"], card["usage"]
    total = _usd(cost["total_usd"]) if cost["rows_unknown_cost"] == 0 else (
        f"unknown for {cost['rows_unknown_cost']} row(s) (known part {_usd(cost['known_total_usd'])})")
    tok = usage["tokens"]
    lat = usage["latency_ms"]
    lines += [
        "", "## Cost, tokens, latency", "",
        f"- Cost: {total}; generation {_usd(cost['known_generation_usd'])}, judge {_usd(cost['known_judge_usd'])}"
        f" (known rows)",
        f"- Tokens: generation {tok['generation']['in']:,} in / {tok['generation']['out']:,} out; "
        f"judge {tok['judge']['in']:,} in / {tok['judge']['out']:,} out",
        f"- Latency generation: p50 {_ms(lat['generation']['p50'])}, p95 {_ms(lat['generation']['p95'])}, "
        f"max {_ms(lat['generation']['max'])}; judging: p50 {_ms(lat['judge']['p50'])}, "
        f"p95 {_ms(lat['judge']['p95'])}, max {_ms(lat['judge']['max'])}",
        f"- Cache hits: {usage['cache']['generation_calls_cached']}/{usage['cache']['generation_calls']} "
        f"generation calls, {usage['cache']['judge_cached']}/{card['judged']} judge calls; retries: generation "
        f"{usage['retries']['generation']}, judge {usage['retries']['judge']}",
        f"- Error rows: {card['errors']}" + (
            " (" + ", ".join(f"{k} {v}" for k, v in usage["errors_by_kind"].items()) + ")" if card["errors"] else ""),
    ]
    trunc = card.get("truncation")
    if trunc and trunc["truncated"]:
        lines += ["", "## History truncation", "",
                  f"The reader's history was cut to fit the context window on {trunc['truncated']} of "
                  f"{trunc['items_reporting']} items (oldest sessions dropped); {trunc['lost_evidence']} of them lost "
                  f"an evidence session" + (f", unknown for {trunc['lost_evidence_unknown']}"
                                            if trunc["lost_evidence_unknown"] else "") + "."
                  + (f" {trunc['retried_after_too_long']} prompt(s) were rejected as too long and retried shorter."
                     if trunc["retried_after_too_long"] else "")]
    ret = card["retrieval"]
    if ret:
        shown = [k for k in ret["ks"] if k in MARKDOWN_RETRIEVAL_KS] or ret["ks"]
        granularity = ", ".join(f"{g} ({n})" for g, n in ret.get("granularity", {}).items()) or "unreported"
        repeats = (f" {ret['rankings_with_repeated_ids']} ranking(s) list a session id twice (a haystack that "
                   "repeats a session, upstream #54): scored as given, each copy taking a rank, as upstream's "
                   "eval_utils does." if ret.get("rankings_with_repeated_ids") else "")
        lines += ["", "## Session retrieval (session-level metrics)", "",
                  f"Metrics of the ranked sessions; retrieval granularity: {granularity} (a turn hit ranks its "
                  f"session, so turn-granularity figures are not upstream's turn-level ones).{repeats} "
                  f"{ret['scored']} items scored ({ret['skipped_abstention']} abstention and "
                  f"{ret['skipped_no_gold']} no-gold items skipped, as upstream does). k = "
                  f"{', '.join(map(str, shown))} shown; metrics.json has k = {', '.join(map(str, ret['ks']))}.", "",
                  "| scope | n | " + " | ".join(f"R_any@{k} | R_all@{k} | NDCG@{k}" for k in shown) + " |",
                  "|---|---:|" + "---:|" * (3 * len(shown))]
        scopes = [("overall", ret["scored"], ret["overall"])] + [(t, m["n"], m) for t, m in ret["per_type"].items()]
        for name, n, m in scopes:
            cells = " | ".join(f"{metrics.fmt(m.get(f'recall_any@{k}'))} | {metrics.fmt(m.get(f'recall_all@{k}'))}"
                               f" | {metrics.fmt(m.get(f'ndcg_any@{k}'))}" for k in shown)
            lines.append(f"| {name} | {n} | {cells} |")
    return "\n".join(lines) + "\n"


def write_outputs(run_dir: Path, card: Mapping[str, Any], markdown: str, *, charts: bool = True,
                  history: Path | None = None) -> list[Path]:
    """metrics.json, scorecard.md and (unless ``charts`` is False) PNGs under charts/, all written atomically."""
    run_dir = Path(run_dir)
    chart_dir = run_store.charts_dir(run_dir)
    if charts and chart_dir.exists() and not chart_dir.is_dir():
        raise UserError(f"{chart_dir} is a file, not the charts folder", fix="move it away, or pass --no-charts")
    written = run_store.write_scorecard_files(run_dir, card, markdown)
    if charts:
        import charts as charts_mod

        written.append(charts_mod.per_type_chart(card, chart_dir / run_store.PER_TYPE_CHART))
        if history is not None:
            written.append(charts_mod.history_chart(charts_mod.load_history(history),
                                                    chart_dir / run_store.HISTORY_CHART))
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("positional", nargs="*", metavar="RUN_DIR N_TOTAL VARIANT RUN_ID",
                        help="the four-argument form: run directory, strict denominator, variant, run id")
    parser.add_argument("--run-id", help="score .longmemeval-benchmarks/runs/<RUN_ID> of the project")
    parser.add_argument("--latest", action="store_true", help="score the most recently started run")
    parser.add_argument("--print-latest-id", action="store_true",
                        help="only print the id of the most recent run (nothing when there is none) and exit")
    parser.add_argument("--project", type=Path, default=Path("."), help="project root (default: current dir)")
    parser.add_argument("--n-total", type=int, help="strict denominator (default: the manifest's n_total)")
    parser.add_argument("--format", choices=("md", "json"), default="md",
                        help="what stdout carries: the Markdown scorecard (default) or metrics.json")
    parser.add_argument("--no-charts", action="store_true", help="skip the PNG charts")
    parser.add_argument("--history", type=Path, help="loop history (history_max_effort.md or JSONL): adds a "
                                                     "chart of accuracy over rounds")
    parser.add_argument("--no-html", action="store_true", help="skip report.html")
    parser.add_argument("--compare", metavar="OTHER_RUN",
                        help="also write compare-<OTHER>.html: OTHER_RUN (a run id or directory) before, this run after")
    parser.add_argument("--force", action="store_true",
                        help="with --compare: compare even when judge, dataset sha256 or n_total differ (page says so)")
    parser.add_argument("--rescore", action="store_true",
                        help="score even when nothing scoring reads changed since the last scoring (default: reuse)")
    args = parser.parse_args(argv)

    if args.print_latest_id:
        latest = run_store.latest_run(args.project, required=False)
        if latest is not None:
            print(latest.name)
        return 0
    variant = run_id = None
    n_total = args.n_total
    if args.positional:
        if len(args.positional) != 4 or args.run_id or args.latest:
            raise UserError(f"expected RUN_DIR N_TOTAL VARIANT RUN_ID (4 arguments), got {args.positional}",
                            fix="or use --run-id RUN_ID / --latest")
        raw_dir, raw_n, variant, run_id = args.positional
        try:
            n_total = int(raw_n)
        except ValueError:
            raise UserError(f"N_TOTAL must be a whole number, got {raw_n!r}", fix="e.g. 500") from None
        run_dir = Path(raw_dir)
    elif args.run_id:
        run_dir = run_store.run_dir_for(run_store.runs_dir(args.project), args.run_id)
        if not run_dir.is_dir():
            raise UserError(f"no run {args.run_id!r} at {run_dir}", fix="list runs in .longmemeval-benchmarks/runs/")
    elif args.latest:
        run_dir = run_store.latest_run(args.project)
        assert run_dir is not None
    else:
        raise UserError("no run given", fix="pass --run-id RUN_ID, --latest, or RUN_DIR N_TOTAL VARIANT RUN_ID")
    if n_total is not None and n_total <= 0:
        raise UserError(f"N_TOTAL must be positive, got {n_total}", fix="pass the number of items, e.g. 500")

    reuse = None if args.compare or args.history or args.rescore else score_fingerprint.fingerprint(
        run_dir, args.project, {"n_total": n_total, "variant": variant, "run_id": run_id, "html": not args.no_html,
                                "charts": not args.no_charts})
    if reuse is not None and score_fingerprint.current(run_dir, reuse, html=not args.no_html,
                                                       charts=not args.no_charts):
        out = run_store.METRICS_FILE if args.format == "json" else run_store.SCORECARD_FILE
        print((run_dir / out).read_text(encoding="utf-8"), end="")
        print(f"unchanged since it was last scored: {run_dir / run_store.METRICS_FILE} (--rescore scores it again)",
              file=sys.stderr)
        return 0
    run = load_run(run_dir)
    card = build_scorecard(run, n_total, variant=variant, run_id=run_id)
    if reuse is not None:
        card["fingerprint"] = reuse
    markdown = render_markdown(card)
    import report_html

    # The pages are built before anything is written: a bad --history, OTHER_RUN or unlike runs write nothing.
    page = None if args.no_html else report_html.build_report(
        run, card, project=args.project, history=report_html.loop_history(run, args.project, args.history))
    comparison = None
    if args.compare:
        other = Path(args.compare) if Path(args.compare).is_dir() else run_store.run_dir_for(
            run_store.runs_dir(args.project), args.compare)
        comparison = report_html.build_compare(other, run_dir, force=args.force, project=args.project)
    written = write_outputs(run_dir, card, markdown, charts=not args.no_charts, history=args.history)
    if page is not None:
        written.append(report_html.write_report(run_dir, page))
    if comparison is not None:
        written.append(report_html.write_page(comparison[1], comparison[0]))
    print(json.dumps(card, indent=2, ensure_ascii=False) if args.format == "json" else markdown, end="\n"
          if args.format == "json" else "")
    print(f"wrote {', '.join(str(p) for p in written)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
