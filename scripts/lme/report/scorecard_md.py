"""``scorecard.md``: a run's figures (``scoring.build_scorecard``) for people: the banner, both accuracies with their
denominators, per type, excluded gold errors, judge stability, cost, tokens, latency, truncation, retrieval. The
formatting helpers are the report page's too, so the page and the file show the same strings.
"""

from __future__ import annotations

from collections import Counter

from lme.data import dataset_label
from lme.judge import verdict_archive, verdict_sources
from lme.models import prices
from lme.report import estimate_text
from lme.score import judge_provenance
from lme.score import loop_rows
from lme.score import metrics
from lme.score import pipeline_health
from lme.score.metrics import Figures
from lme.score.scorecard_record import Batches, GoldExclusion, Retrieval, Scorecard, Truncation, require

MARKDOWN_RETRIEVAL_KS = (5, 10, 30, 50)
"""The k shown in scorecard.md (all six make the table too wide to read)."""


def status_text(card: Scorecard) -> str:
    """The run's status, saying so when a completed invocation (``--max``) left items not run yet."""
    if card.status == "completed" and card.not_run:
        return f"completed (this invocation; {card.not_run} items not run yet)"
    return str(card.status)


def acc(block: Figures, which: str) -> str:
    """``0.5714 (4/7)``: the ``strict`` or ``judged`` accuracy with its count."""
    return f"{metrics.fmt(block.accuracy(which))} ({block.correct}/{block.denominator(which)})"


def task_averaged_judged(card: Scorecard) -> str:
    """The judged-only macro figure, saying over how many types when some had no judged item."""
    ta = card.task_averaged
    n_types, n_judged_types = len(ta.types_strict), len(ta.types_judged)
    return metrics.fmt(ta.accuracy_judged) + (
        f" (over {n_judged_types} of {n_types} types, those with a judged item)" if n_judged_types < n_types else "")


def judge_text(card: Scorecard) -> str:
    """The judge as the status line names it: whether it is the official model, and (when it is) whether that makes
    the figures comparable, so the line never reads "official" beside a NOT COMPARABLE banner."""
    judge = card.judge
    if card.official_judge is not True:
        return f"{judge.provider} {judge.model} (not the official judge)"
    if card.comparable:
        return f"{judge.provider} {judge.model} (the official judge)"
    return f"{judge.provider} {judge.model} (the official judge model; the run is not comparable: see the notes above)"


def usd(value: float | None) -> str:
    return "—" if value is None else f"${value:,.4f}"


def ms(value: float | None) -> str:
    return "—" if value is None else f"{value / 1000:.2f} s"


def hypotheses_lines(card: Scorecard) -> list[str]:
    target = card.target
    if target.hypotheses is None:
        return []
    return [f"Hypotheses judged as written from `{target.hypotheses.file}` (sha256 "
            f"`{str(target.hypotheses.sha256)[:12]}`): no generation in this run; a question without a line is a "
            "missing_hypothesis error row.", ""]


def dataset_name(card: Scorecard) -> str:
    """The dataset as the title names it (``dataset_label``: the synthetic sample is never called ``_s``)."""
    return dataset_label.display_name(card.variant, card.dataset.path)


def verdict_lines(card: Scorecard) -> list[str]:
    """Where the verdicts came from (the three counts, each successor with its calibration or "uncalibrated",
    the endpoints when more than one), and the empty answers with their finish reasons: scorecard.md and
    report.html show the same strings."""
    v = card.verdicts
    lines = []
    if v and v.any_verdict():  # an offline-judged run has none of these
        successor = ", ".join(e.judge for e in v.successors) or None
        cited = "; ".join(judge_provenance.describe_calibration(e.calibration, e.request_shape)
                          for e in v.successors) or None
        lines.append(verdict_sources.describe(v.counts(), successor=successor, calibration=cited))
        lines += [line for line in (judge_provenance.origins_line(v.origins), judge_provenance.conflicts_line(
            v.origins)) if line]
        if len(v.endpoints) > 1:
            lines.append("Verdicts come from more than one endpoint: " + ", ".join(
                f"{h} ({n})" for h, n in v.endpoints.items()) + "; the run is comparable only when every verdict "
                "is official.")
        if len(v.invocation_endpoints) > 1:
            lines.append("The run's invocations used these judge endpoints: " + ", ".join(v.invocation_endpoints)
                         + ".")
    empty = card.empty_hypotheses
    if empty and empty.n:
        reasons = ", ".join(f"{k} {n}" for k, n in empty.finish_reasons.items())
        lines.append(f"Empty answers: {empty.n} (judged as written, as upstream does: {empty.judged}); finish "
                     f"reasons: {reasons}.")
    return lines


def render_markdown(card: Scorecard) -> str:
    card = require(card)
    lines = [f"# LongMemEval scorecard — run `{card.run_id}` ({dataset_name(card)})", ""]
    lines += banner_lines(card) + figures_lines(card) + gold_error_lines(card.excluding_gold_errors)
    lines += stability_lines(card) + cost_lines(card) + truncation_lines(card.truncation)
    lines += retrieval_lines(card.retrieval)
    return "\n".join(lines) + "\n"


def banner_lines(card: Scorecard) -> list[str]:
    """The loud lines (pipeline health, the loop's rows) and the NOT COMPARABLE banner with every reason."""
    lines = []
    loud = pipeline_health.loud_lines(card.pipeline_health) + loop_rows.scorecard_lines(card.loop_rows)
    if loud:
        lines += [f"> **{line}**" for line in loud] + [""]
    if card.comparability_notes:
        lines.append("> **NOT COMPARABLE with published LongMemEval results:**")
        lines += [f"> - {n}" for n in card.comparability_notes]
        lines.append("")
    return lines


def figures_lines(card: Scorecard) -> list[str]:
    """The status line, where the verdicts came from, the three headline figures (strict and judged-only), beside
    them the estimate for the official judge when some labels are not official, and the per-type table, with what
    the figures do not cover."""
    ta = card.task_averaged
    n_types = len(ta.types_strict)
    lines = [
        f"Status: **{status_text(card)}** · judged {card.judged}/{card.n_total} · errors {card.errors} · "
        f"not run {card.not_run} · judge {judge_text(card)} · dataset "
        f"{dataset_label.recognition_line(card.dataset.to_dict())}",
        "",
        *[line for text in code_lines(card) for line in (text, "")],
        *[line for text in verdict_lines(card) for line in (text, "")],
        *hypotheses_lines(card),
        f"| figure | strict (all {card.n_total} items; errors/not run = wrong) | "
        f"judged only ({card.judged} items) |",
        "|---|---|---|",
        f"| Overall accuracy (micro) | {acc(card.overall, 'strict')} | {acc(card.overall, 'judged')} |",
        f"| Task-averaged accuracy (macro, {n_types} types) | {metrics.fmt(ta.accuracy_strict)} | "
        f"{task_averaged_judged(card)} |",
        f"| Abstention accuracy (`_abs` ids) | {acc(card.abstention, 'strict')} | "
        f"{acc(card.abstention, 'judged')} |",
        *[f"| {label} | {strict} | {judged} |" for label, strict, judged in estimate_text.rows(card)],
        "",
        *[line for text in [estimate_text.note(card)] if text for line in (text, "")],
        "| question type | n | judged | correct | strict | judged only | 95% Wilson (strict) |"
        + (" estimated for the official judge (strict, not official) |" if card.official_estimate else ""),
        "|---|---:|---:|---:|---:|---:|---|" + ("---|" if card.official_estimate else ""),
    ]
    for qtype, b in card.types_present():
        lines.append(f"| {qtype} | {b.n} | {b.judged} | {b.correct} | "
                     f"{metrics.fmt(b.accuracy_strict)} | {metrics.fmt(b.accuracy_judged)} | "
                     f"{metrics.fmt_interval(b.wilson_strict)} |"
                     + (f" {estimate_text.type_cell(card, qtype)} |" if card.official_estimate else ""))
    if not ta.all_six_types:
        lines += ["", f"Task-averaged figure covers only {n_types} of 6 types: {', '.join(ta.types_strict)}."]
    if card.rows_outside_item_set:
        lines += ["", f"{card.rows_outside_item_set} result rows lie outside the first {card.n_total} items "
                      "and are not scored."]
    if card.unattributed:
        lines += ["", f"{card.unattributed} items beyond the manifest were never run: wrong in the strict "
                      "overall figure, in no per-type figure."]
    return lines


def code_lines(card: Scorecard) -> list[str]:
    """Which code made the scored rows: ``Code: 1a2b3c4d (24 rows)``, or how many rows each version made when
    there is more than one (none for a run made before rows recorded their code)."""
    versions = card.code_versions
    if versions is None:
        return []
    text = versions.describe()
    return [f"Code: **{text}**" if versions.mixed else f"Code: {text}"]


def gold_error_lines(ex: GoldExclusion) -> list[str]:
    """The second figure without the reported gold errors, and the registry's items counted in both."""
    lines = []
    if ex.excluded:
        ids = ", ".join(f"{e.question_id} (#{', #'.join(str(i) for i in e.issues)})" for e in ex.excluded)
        lines += ["", "## Excluding reported gold errors (a second figure; the official one is above)", "",
                  f"Left out (status wrong): {ids}. Strict overall {acc(ex.overall, 'strict')}, task-averaged "
                  f"{metrics.fmt(ex.task_averaged.accuracy_strict)}, abstention "
                  f"{acc(ex.abstention, 'strict')}."]
    if ex.registry_change is not None:
        lines += ["", f"**Note: {ex.registry_change.line()}.**"]
    listed = Counter(e.status for e in ex.listed_not_excluded)
    if listed:
        lines += ["", "Also in the known-defect registry, counted in both figures: " + ", ".join(
            f"{n} {status}" for status, n in sorted(listed.items())) + " (references/known-gold-errors.json)."]
    return lines


def stability_lines(card: Scorecard) -> list[str]:
    """The judged labels whose judge prompt got both yes and no (none when nothing was judged twice)."""
    stab = card.judge_stability
    if not (stab and (stab.repeated_items or stab.unstable_ids)):
        return []
    shown = ", ".join(stab.unstable_ids[:20]) + (" ..." if len(stab.unstable_ids) > 20 else "")
    return ["", "## Judge stability", "",
            f"{len(stab.unstable_ids)} of {card.judged} judged labels are unstable (the same judge "
            f"prompt got both yes and no): {stab.unstable_in_run} in this run's repeated verdicts "
            f"({stab.repeated_items} items judged more than once), {stab.flaky_in_registry} flaky in the "
            f"project's judge-stability.jsonl, {stab.archive_conflicts} with archived official verdicts of both "
            f"labels (scored by the {verdict_archive.CONFLICT_RULE}). Otherwise the first verdict is the official "
            "label."
            + (f" Unstable: {shown}." if shown else "")]


def cost_lines(card: Scorecard) -> list[str]:
    usage = card.usage
    tok, lat, cache = usage.tokens, usage.latency_ms, usage.cache
    return [
        "", "## Cost, tokens, latency", "",
        f"- Cost: {cost_text(card)} ({cost_split(card)}; every row the run wrote, as run_status counts)",
        *batch_lines(card.batches),
        f"- Tokens: generation {tok.generation.tokens_in:,} in / {tok.generation.tokens_out:,} out; "
        f"judge {tok.judge.tokens_in:,} in / {tok.judge.tokens_out:,} out",
        f"- Latency generation: p50 {ms(lat.generation.p50)}, p95 {ms(lat.generation.p95)}, "
        f"max {ms(lat.generation.max)}; judging: p50 {ms(lat.judge.p50)}, "
        f"p95 {ms(lat.judge.p95)}, max {ms(lat.judge.max)}",
        f"- Cache hits: {cache.generation_calls_cached}/{cache.generation_calls} "
        f"generation calls, {cache.judge_cached}/{card.judged} judge calls"
        f"{archive_hits(card)}; retries: generation {usage.retries.generation}, judge "
        f"{usage.retries.judge}",
        f"- Error rows: {card.errors}" + (
            " (" + ", ".join(f"{k} {v}" for k, v in usage.errors_by_kind.items()) + ")" if card.errors else ""),
    ]


def truncation_lines(trunc: Truncation | None) -> list[str]:
    """How often the reader's history was cut to fit (none when it never was)."""
    if not (trunc and trunc.truncated):
        return []
    return ["", "## History truncation", "",
            f"The reader's history was cut to fit the context window on {trunc.truncated} of "
            f"{trunc.items_reporting} items (oldest sessions dropped); {trunc.lost_evidence} of them lost "
            f"an evidence session" + (f", unknown for {trunc.lost_evidence_unknown}"
                                      if trunc.lost_evidence_unknown else "") + "."
            + (f" {trunc.retried_after_too_long} prompt(s) were rejected as too long and retried shorter."
               if trunc.retried_after_too_long else "")]


def retrieval_lines(ret: Retrieval | None) -> list[str]:
    """The session-retrieval table at the k shown here (metrics.json has every k)."""
    if not ret:
        return []
    shown = [k for k in ret.ks if k in MARKDOWN_RETRIEVAL_KS] or list(ret.ks)
    granularity = ", ".join(f"{g} ({n})" for g, n in ret.granularity.items()) or "unreported"
    repeats = (f" {ret.rankings_with_repeated_ids} ranking(s) list a session id twice (a haystack that "
               "repeats a session, upstream #54): scored as given, each copy taking a rank, as upstream's "
               "eval_utils does." if ret.rankings_with_repeated_ids else "")
    lines = ["", "## Session retrieval (session-level metrics)", "",
             f"Metrics of the ranked sessions; retrieval granularity: {granularity} (a turn hit ranks its "
             f"session, so turn-granularity figures are not upstream's turn-level ones).{repeats} "
             f"{ret.scored} items scored ({ret.skipped_abstention} abstention and "
             f"{ret.skipped_no_gold} no-gold items skipped, as upstream does). k = "
             f"{', '.join(map(str, shown))} shown; metrics.json has k = {', '.join(map(str, ret.ks))}.", "",
             "| scope | n | " + " | ".join(f"R_any@{k} | R_all@{k} | NDCG@{k}" for k in shown) + " |",
             "|---|---:|" + "---:|" * (3 * len(shown))]
    for scope in ret.scopes():
        cells = " | ".join(f"{metrics.fmt(scope.mean('recall_any', k))} | "
                           f"{metrics.fmt(scope.mean('recall_all', k))} | "
                           f"{metrics.fmt(scope.mean('ndcg_any', k))}" for k in shown)
        lines.append(f"| {scope.name} | {scope.n} | {cells} |")
    return lines


def cost_text(card: Scorecard) -> str:
    """The run's dollar total, or how many rows' cost is unknown and the known part."""
    cost = card.cost
    return usd(cost.total_usd) if cost.rows_unknown_cost == 0 else (
        f"unknown for {cost.rows_unknown_cost} row(s) (known part {usd(cost.known_total_usd)})")


def cost_split(card: Scorecard) -> str:
    """``memory system $0.0123, judge $0.3008``: the run's cost apart, as ``run_status`` says it."""
    cost = card.cost
    return prices.split_text(
        prices.part_text(cost.generation_usd, cost.known_generation_usd, cost.rows_unknown_generation),
        prices.part_text(cost.judge_usd, cost.known_judge_usd, cost.rows_unknown_judge))


def archive_hits(card: Scorecard) -> str:
    """`` (N of them from the verdict archive)`` when any verdict came from it: cached and archived are not one."""
    archived = card.usage.cache.judge_archived
    return f" ({archived} of them from the verdict archive, no call)" if archived else ""


def batch_lines(batches: Batches | None) -> list[str]:
    """``- Batch API: judge 500 calls in 1 batch at batch prices ($0.61); generation synchronous (500 calls)``."""
    if not batches:
        return []
    parts = []
    for stage, b in batches.stages():
        if b.batch_calls:
            spent = "unknown" if b.batch_usd is None else usd(b.batch_usd)
            sync = f", {b.sync_calls} synchronous" if b.sync_calls else ""
            parts.append(f"{stage} {b.batch_calls} calls in {b.batches} batch"
                         f"{'es' if b.batches != 1 else ''} at batch prices ({spent}){sync}")
        elif b.sync_calls:
            parts.append(f"{stage} synchronous ({b.sync_calls} calls)")
    return ["- Batch API: " + "; ".join(parts)]
