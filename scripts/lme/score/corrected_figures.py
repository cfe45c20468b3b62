"""``metrics.json`` ``official_estimate``: a run's figures as the official judge would likely have given them, where
some labels came from a successor (or the run's own non-official judge) rather than the official judge.

Which labels are official and which a non-official judge gave is ``verdict_sources.classify``'s rule (the
``verdicts`` block counts by it). Each non-official judge's calibration is the record its ``verdicts.successors``
or ``judge_agreement`` block cites: the latest ``judge_agreement.py`` measurement of that candidate with the same
request shape. Official labels count as they are; the others are corrected by ``official_estimate`` (Rogan-Gladen,
a parametric-bootstrap interval): each question type with its own rates where the calibration holds at least
``MIN_PER_CLASS`` official yes and official no verdicts of that type, else with the calibration's pooled rates (the
abstention figure likewise, with the abstention items' rates). The overall (micro) and task-averaged figures add
up the corrected types. With one judge, the overall figure is also given under each hypothesis source's own rates
(the systems whose answers the calibration judged): its spread.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from lme.core.facts import is_abstention, is_offline, resolve_judge_model
from lme.core.run_records import ResultRow, RunMeta
from lme.judge import verdict_sources
from lme.judge.request_shapes import describe as describe_shape
from lme.score import official_estimate
from lme.score.scoring_inputs import ScoringInputs
from lme.score.scorecard_record import (EstimateCalibration, EstimatedFigure, OfficialEstimate, Scorecard,
                                        SourceEstimate, SourceSpread)

ASSUMPTION = ("the judge errs on this run's answers as it did on the calibration's: the same sensitivity and "
              "specificity against the official judge (per question type where the calibration has enough items)")
METHOD = (f"Rogan-Gladen per question type: (p + Sp - 1) / (Se + Sp - 1), clipped to [0, 1]; official labels as "
          f"they are; 95% interval: percentiles of a parametric bootstrap ({official_estimate.DRAWS} draws, seed {official_estimate.SEED}) over "
          "Jeffreys Beta posteriors of the calibration's sensitivity and specificity and of the judge's pass rate "
          "on the run's items")
RECORD_FIELDS = ("candidate", "request_shape", "verdict_set_sha256", "measured_at", "n", "source")
"""The fields that name a calibration record (``judge-agreement.jsonl``)."""
POOLED, ABSTENTION = "all", "abstention"


@dataclass
class _Labels:
    """Judged items of one scope (a question type, the abstention items) by who labelled them."""

    official_yes: int = 0
    judged: Counter[str] = field(default_factory=Counter)
    """Per non-official judge: items it labelled."""
    passed: Counter[str] = field(default_factory=Counter)


@dataclass
class _Judge:
    """A non-official judge that labelled some of the run's items, as its calibration is looked up."""

    provider: str
    model: str
    shape: Mapping[str, Any] | None
    verdicts: int = 0

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"


@dataclass
class _Split:
    """A run's judged labels split by origin: official, each non-official judge's, and those neither."""

    by_type: dict[str, _Labels] = field(default_factory=dict)
    abstention: _Labels = field(default_factory=_Labels)
    judges: dict[str, _Judge] = field(default_factory=dict)
    neither: Counter[str] = field(default_factory=Counter)
    official: int = 0

    def add(self, meta: RunMeta, qid: str, qtype: str, row: ResultRow) -> None:
        verdict = row.judgment
        if not row.judged or verdict is None:
            return
        scopes = [self.by_type.setdefault(qtype, _Labels())] + ([self.abstention] if is_abstention(qid) else [])
        why = "offline" if is_offline(verdict.provider) else verdict_sources.classify(verdict, meta.endpoints)[1]
        if why is None:
            self.official += 1
            for labels in scopes:
                labels.official_yes += bool(verdict.label)
            return
        if why not in ("successor", "judge"):
            self.neither[why] += 1
            return
        model = resolve_judge_model(verdict.requested_model or verdict.model)
        judge = self.judges.setdefault(f"{verdict.provider}:{model}",
                                       _Judge(verdict.provider, model, verdict.request_shape))
        judge.verdicts += 1
        for labels in scopes:
            labels.judged[judge.name] += 1
            labels.passed[judge.name] += bool(verdict.label)


def _split(meta: RunMeta, rows: Mapping[str, ResultRow], types: Mapping[str, str]) -> _Split:
    split = _Split()
    for qid, qtype in types.items():
        row = rows.get(qid)
        if row is not None:
            split.add(meta, qid, qtype, row)
    return split


def estimate_block(meta: RunMeta, rows: Mapping[str, ResultRow], types: Mapping[str, str], card: Scorecard,
                   inputs: ScoringInputs) -> OfficialEstimate | None:
    """The ``official_estimate`` of a scored run (``card``: its scorecard, figures made); None when no label came
    from a non-official judge (every verdict official, or none at all, or the run judged offline)."""
    split = _split(meta, rows, types)
    if not split.judges:
        return None
    records = {name: inputs.agreement_of(j.provider, j.model, j.shape)
               for name, j in split.judges.items()}
    calibration = tuple(_calibration(split, j, records[name]) for name, j in split.judges.items())
    block = OfficialEstimate(
        overall=EstimatedFigure(), method=METHOD, calibration=calibration, official=split.official,
        corrected=sum(j.verdicts for j in split.judges.values()), min_per_class=official_estimate.MIN_PER_CLASS,
        assumption=ASSUMPTION, task_averaged=EstimatedFigure(), abstention=EstimatedFigure(), per_type={})
    reason = _blocked(split, records)
    if reason is not None:
        return _without_figures(block, card, split, reason)
    return _with_figures(block, card, split, records)


def _blocked(split: _Split, records: Mapping[str, Mapping[str, Any] | None]) -> str | None:
    """Why no figure can be estimated at all: a judge without a calibration, or labels neither official nor by a
    non-official judge (an official model's verdict made elsewhere, with another shape or prompt, offline)."""
    if split.neither:
        parts = ", ".join(f"{n} {why}" for why, n in sorted(split.neither.items()))
        return (f"{sum(split.neither.values())} verdict(s) are neither official nor a calibrated judge's ({parts}): "
                "nothing relates them to the official scale")
    for name, record in records.items():
        if record is None:
            return (f"{name} is uncalibrated: no judge_agreement.py measurement with its request shape "
                    f"{describe_shape(split.judges[name].shape)} in this project")
        if official_estimate.Rates.from_confusion(record.get("confusion")) is None:
            return f"the calibration record of {name} holds no confusion matrix"
    return None


def _calibration(split: _Split, judge: _Judge, record: Mapping[str, Any] | None) -> EstimateCalibration:
    if record is None:
        return EstimateCalibration(judge.name, judge.verdicts, None)
    pooled = official_estimate.Rates.from_confusion(record.get("confusion"))
    own = [t for t, labels in split.by_type.items() if labels.judged[judge.name] and _type_rates(record, t)]
    return EstimateCalibration(judge.name, judge.verdicts, {k: record.get(k) for k in RECORD_FIELDS},
                               None if pooled is None else pooled.sensitivity,
                               None if pooled is None else pooled.specificity, tuple(own))


def _own_rates(block: Any) -> official_estimate.Rates | None:
    """The rates of a stratum of the record (a type's, the abstention items') when it has enough items."""
    rates = official_estimate.Rates.from_confusion(block.get("confusion")) if isinstance(block, Mapping) else None
    return rates if rates is not None and rates.enough() else None


def _type_rates(record: Mapping[str, Any], qtype: str) -> official_estimate.Rates | None:
    per_type = record.get("per_type")
    return _own_rates(per_type.get(qtype)) if isinstance(per_type, Mapping) else None


def _without_figures(block: OfficialEstimate, card: Scorecard, split: _Split, reason: str) -> OfficialEstimate:
    none = EstimatedFigure(reason=reason)
    per_type = {t: EstimatedFigure(reason=reason, corrected=sum(split.by_type.get(t, _Labels()).judged.values()))
                for t, _ in card.types_present()}
    return replace(block, overall=none, task_averaged=none, abstention=none, per_type=per_type)


@dataclass
class _Inputs:
    """``official_estimate.estimate``'s inputs: the scopes, the parts, the rates by key, and which rates each
    type's parts use."""

    scopes: dict[str, official_estimate.Scope] = field(default_factory=dict)
    parts: dict[str, official_estimate.Part] = field(default_factory=dict)
    rates: dict[str, official_estimate.Rates] = field(default_factory=dict)
    rates_of_type: dict[str, str] = field(default_factory=dict)

    def add_parts(self, scope: str, labels: _Labels, records: Mapping[str, Mapping[str, Any]],
                  own: Any) -> tuple[str, ...]:
        """The parts of ``scope`` (one per judge), corrected with ``own(record)`` rates or the pooled ones."""
        keys = []
        for judge, judged in sorted(labels.judged.items()):
            record = records[judge]
            rates = own(record)
            stratum = scope if rates is not None else POOLED
            self.rates[f"{judge}|{stratum}"] = rates or official_estimate.Rates.from_confusion(record.get("confusion"))
            self.parts[f"{judge}|{scope}"] = official_estimate.Part(judged, labels.passed[judge], f"{judge}|{stratum}")
            self.rates_of_type[scope] = "type" if rates is not None else "pooled"
            keys.append(f"{judge}|{scope}")
        return tuple(keys)


def _inputs(card: Scorecard, split: _Split, records: Mapping[str, Mapping[str, Any]]) -> _Inputs:
    inputs = _Inputs()
    every: list[str] = []
    official_yes = 0
    for qtype, figures in card.types_present():
        labels = split.by_type.get(qtype, _Labels())
        keys = inputs.add_parts(qtype, labels, records, lambda rec, t=qtype: _type_rates(rec, t))
        inputs.scopes[qtype] = official_estimate.Scope(figures.n, figures.judged, labels.official_yes, keys)
        every += keys
        official_yes += labels.official_yes
    inputs.scopes["__overall__"] = official_estimate.Scope(card.n_total, card.judged, official_yes, tuple(every))
    abstention = inputs.add_parts(ABSTENTION, split.abstention, records, lambda rec: _own_rates(rec.get(ABSTENTION)))
    inputs.scopes["__abstention__"] = official_estimate.Scope(card.abstention.n, card.abstention.judged,
                                                              split.abstention.official_yes, abstention)
    return inputs


def _figure(fig: official_estimate.Figure, corrected: int | None = None, rates: str | None = None) -> EstimatedFigure:
    return EstimatedFigure(fig.accuracy, fig.ci95, fig.accuracy_judged, fig.ci95_judged, fig.reason, corrected, rates)


def _with_figures(block: OfficialEstimate, card: Scorecard, split: _Split,
                  records: Mapping[str, Mapping[str, Any]]) -> OfficialEstimate:
    inputs = _inputs(card, split, records)
    types = [t for t, _ in card.types_present()]
    figures = official_estimate.estimate(inputs.scopes, inputs.parts, inputs.rates, averaged={"__macro__": types})
    per_type = {t: _figure(figures[t], sum(split.by_type.get(t, _Labels()).judged.values()),
                           inputs.rates_of_type.get(t)) for t in types}
    spread, note = _spread(card, split, records)
    return replace(block, overall=_figure(figures["__overall__"]), task_averaged=_figure(figures["__macro__"]),
                   abstention=_figure(figures["__abstention__"], None, inputs.rates_of_type.get(ABSTENTION)),
                   per_type=per_type, by_source=spread, spread_note=note)


def _spread(card: Scorecard, split: _Split, records: Mapping[str, Mapping[str, Any]]
            ) -> tuple[SourceSpread | None, str | None]:
    """The overall strict point estimate under each hypothesis source's own counts, made the same way (its types'
    own rates where it has enough of them, else its pooled ones); one judge only."""
    if len(split.judges) != 1:
        return None, "several judges labelled this run: no spread across one calibration's sources"
    ((judge, record),) = records.items()
    per_source = record.get("per_source")
    if not isinstance(per_source, Mapping) or not per_source:
        return None, ("the calibration record keeps no per-source counts (measured before they were recorded): "
                      "measure it again with judge_agreement.py")
    sources, too_few = [], 0
    for source, entry in per_source.items():
        rates = official_estimate.Rates.from_confusion(entry.get("confusion")) if isinstance(entry, Mapping) else None
        if rates is None or not rates.enough():
            too_few += 1
            continue
        inputs = _inputs(card, split, {judge: entry})
        overall = inputs.scopes["__overall__"]
        count = official_estimate.corrected_count(overall, inputs.parts, inputs.rates)
        reason = None if count is not None else next(
            (r.why_unusable() for r in inputs.rates.values() if r.why_unusable() is not None), "no estimate")
        sources.append(SourceEstimate(str(source), rates.official_yes + rates.official_no,
                                      None if count is None or not overall.n else count / overall.n, reason))
    values = [s.accuracy for s in sources if s.accuracy is not None]
    return SourceSpread(tuple(sources), min(values, default=None), max(values, default=None), too_few), None
