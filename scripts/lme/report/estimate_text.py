"""The estimate of the official judge's accuracy (``Scorecard.official_estimate``) as people read it, beside the raw
figures: the same strings on scorecard.md and report.html. Always called an estimate, never official."""

from __future__ import annotations

from lme.judge.request_shapes import describe as describe_shape
from lme.score import metrics
from lme.score.scorecard_record import EstimateCalibration, EstimatedFigure, OfficialEstimate, Scorecard

NOT_OFFICIAL = "an estimate, not official"


def cell(fig: EstimatedFigure | None, which: str = "strict") -> str:
    """``0.6123 (95% CI [0.571, 0.652])`` (``strict`` or ``judged``); ``none`` when there is no estimate."""
    if fig is None:
        return "—"
    value, interval = (fig.accuracy, fig.ci95) if which == "strict" else (fig.accuracy_judged, fig.ci95_judged)
    if value is None:
        return "none"
    shown = None if interval is None else [interval[0], interval[1]]
    return f"{metrics.fmt(value)} (95% CI {metrics.fmt_interval(shown)})"


def rows(card: Scorecard) -> list[tuple[str, str, str]]:
    """(label, strict, judged only) of the three headline estimates; none when the card has no estimate."""
    est = card.official_estimate
    if est is None:
        return []
    n_types = len(card.task_averaged.types_strict)
    return [(f"{label}, estimated for the official judge ({NOT_OFFICIAL})", cell(fig, "strict"), cell(fig, "judged"))
            for label, fig in (("Overall accuracy (micro)", est.overall),
                               (f"Task-averaged accuracy (macro, {n_types} types)", est.task_averaged),
                               ("Abstention accuracy", est.abstention))]


def type_cell(card: Scorecard, qtype: str) -> str:
    """A question type's strict estimate with its interval, and whose rates corrected it."""
    est = card.official_estimate
    fig = None if est is None else est.per_type.get(qtype)
    if fig is None:
        return "—"
    rates = {"type": "; the type's own rates", "pooled": "; pooled rates"}.get(str(fig.rates)) if fig.corrected else ""
    shown = cell(fig)
    return shown[:-1] + f"{rates})" if rates and shown.endswith(")") else shown


def _calibration(c: EstimateCalibration) -> str:
    record = c.record or {}
    if not record:
        return f"{c.verdicts} label(s) by {c.judge} (uncalibrated)"
    se = "—" if c.sensitivity is None else f"{c.sensitivity:.3f}"
    sp = "—" if c.specificity is None else f"{c.specificity:.3f}"
    sha = str(record.get("verdict_set_sha256") or "?")[:12]
    return (f"{c.verdicts} label(s) by {c.judge}, corrected by its calibration (judge_agreement.py, "
            f"{record.get('measured_at')}, {record.get('n')} items, verdict set {sha}, request shape "
            f"{describe_shape(record.get('request_shape'))}: sensitivity {se}, specificity {sp})")


def _spread(est: OfficialEstimate) -> str:
    spread = est.by_source
    if spread is None:
        return f" No spread across hypothesis sources: {est.spread_note}." if est.spread_note else ""
    left = (f"; {spread.too_few} with fewer than {est.min_per_class} official yes or no left out"
            if spread.too_few else "")
    if spread.min is None:
        return f" No hypothesis source of the calibration has enough items for rates of its own{left}."
    return (f" Under each hypothesis source's own rates: {metrics.fmt(spread.min)}–{metrics.fmt(spread.max)} over "
            f"{len(spread.sources)} source(s){left}.")


def note(card: Scorecard) -> str | None:
    """What the estimate is, whose calibration it rests on, its assumption and spread; or why there is none."""
    est = card.official_estimate
    if est is None:
        return None
    if est.overall.accuracy is None:
        return (f"Estimate for the official judge ({NOT_OFFICIAL}): none, {est.overall.reason}. "
                + "; ".join(_calibration(c) for c in est.calibration) + ".")
    own = sorted({t for c in est.calibration for t in c.rates_by_type})
    rates = (f"each question type with its own rates where the calibration holds at least {est.min_per_class} "
             f"official yes and {est.min_per_class} official no verdicts of it"
             + (f" ({', '.join(own)})" if own else " (none here)") + ", else the calibration's pooled rates")
    return (f"Estimate for the official judge ({NOT_OFFICIAL}): {est.official} official label(s) as they are, "
            + "; ".join(_calibration(c) for c in est.calibration)
            + f"; {rates}; Rogan-Gladen correction, 95% interval from a parametric bootstrap over the calibration's "
            f"and the run's counts. It assumes {est.assumption}." + _spread(est))
