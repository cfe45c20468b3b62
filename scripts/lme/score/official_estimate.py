"""An estimate of the accuracy the official judge would have given a run whose labels came, in whole or in part,
from a calibrated judge (a successor, or another non-official judge): Rogan-Gladen's correction by the judge's
sensitivity and specificity against official verdicts, with a parametric-bootstrap 95% interval. Pure functions,
stdlib only; ``corrected_figures`` gathers the inputs from a run and its calibration records.

Sensitivity (Se) is how often the judge says yes where the official judge said yes, specificity (Sp) how often it
says no where the official judge said no (``judge_agreement.py``'s confusion counts). If the judge passed a
fraction p of the items it labelled, the official judge would have passed a fraction (p + Sp - 1) / (Se + Sp - 1)
of them, clipped to [0, 1] (Rogan & Gladen 1978); defined only when Se + Sp > 1. Items with official labels count
as they are.

The interval: each of ``DRAWS`` draws takes Se and Sp from the Jeffreys Beta posteriors of the calibration's counts
(Beta(a + 1/2, b + 1/2)) and the judge's pass rate on the run's items from the Jeffreys posterior of its k passes
of m; the figure's 2.5th and 97.5th percentiles over the draws are the interval (a fixed seed: the same inputs give
the same interval). A draw in which Se + Sp <= 1 says nothing about those items: it counts at the far end on each
side (the items all wrong for the lower bound, all right for the upper), so a calibration near chance widens the
interval instead of being dropped from it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

MIN_PER_CLASS = 20
"""A stratum of a calibration (a question type, the abstention items, a hypothesis source) gives rates of its own
only with at least this many official yes and this many official no verdicts; a smaller one is corrected with the
calibration's pooled rates."""
DRAWS = 2000
SEED = 20270114
CONFUSION_CELLS = ("official_true_candidate_true", "official_true_candidate_false", "official_false_candidate_true",
                   "official_false_candidate_false")
"""The calibration record's confusion cells (``agreement_figures.CONFUSION_CELLS``): a, b, c, d."""
PRIOR = 0.5
"""Jeffreys: Beta(1/2, 1/2) before the counts."""


@dataclass(frozen=True)
class Rates:
    """A judge's confusion counts against official verdicts on one stratum of its calibration."""

    yes_yes: int
    """Official yes, the judge yes."""
    yes_no: int
    no_yes: int
    no_no: int

    @classmethod
    def from_confusion(cls, confusion: Any) -> "Rates | None":
        """From a calibration record's ``confusion`` block; None when it lacks a cell (an older record)."""
        if not isinstance(confusion, Mapping):
            return None
        cells = [confusion.get(name) for name in CONFUSION_CELLS]
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in cells):
            return None
        return cls(*cells)

    @property
    def official_yes(self) -> int:
        return self.yes_yes + self.yes_no

    @property
    def official_no(self) -> int:
        return self.no_yes + self.no_no

    @property
    def sensitivity(self) -> float | None:
        return self.yes_yes / self.official_yes if self.official_yes else None

    @property
    def specificity(self) -> float | None:
        return self.no_no / self.official_no if self.official_no else None

    def enough(self, minimum: int = MIN_PER_CLASS) -> bool:
        """Enough official yes and no verdicts for rates of its own."""
        return self.official_yes >= minimum and self.official_no >= minimum

    def why_unusable(self) -> str | None:
        """Why these counts cannot correct a figure (None: they can)."""
        se, sp = self.sensitivity, self.specificity
        if se is None:
            return "the calibration holds no official yes verdict, so the judge's sensitivity is unknown"
        if sp is None:
            return "the calibration holds no official no verdict, so the judge's specificity is unknown"
        if se + sp <= 1:
            return (f"sensitivity {se:.3f} + specificity {sp:.3f} <= 1 on the calibration: the judge tells official "
                    "yes from no no better than chance")
        return None

    def draw(self, rng: random.Random) -> tuple[float, float]:
        """(Se, Sp) drawn from their Jeffreys posteriors."""
        return (rng.betavariate(self.yes_yes + PRIOR, self.yes_no + PRIOR),
                rng.betavariate(self.no_no + PRIOR, self.no_yes + PRIOR))


def rogan_gladen(passed: float, sensitivity: float, specificity: float) -> float | None:
    """The official pass rate behind a judge's pass rate ``passed``, clipped to [0, 1]; None when Se + Sp <= 1."""
    youden = sensitivity + specificity - 1
    if youden <= 0:
        return None
    return min(1.0, max(0.0, (passed + specificity - 1) / youden))


@dataclass(frozen=True)
class Part:
    """Items of a run that one calibrated judge labelled, in one stratum: how many, how many it passed, and which
    rates (a key of the ``rates`` given to ``estimate``) correct them."""

    judged: int
    passed: int
    rates: str


@dataclass(frozen=True)
class Scope:
    """One figure to estimate: its strict and judged-only denominators, the correct count of its official labels,
    and its parts (keys of the ``parts`` given to ``estimate``)."""

    n: int
    judged: int
    official_correct: int
    parts: tuple[str, ...] = ()


@dataclass(frozen=True)
class Figure:
    """An estimated accuracy, strict (over ``n``) and judged-only, each with its 95% interval; all None and a
    ``reason`` when there is none."""

    accuracy: float | None
    ci95: tuple[float, float] | None
    accuracy_judged: float | None
    ci95_judged: tuple[float, float] | None
    reason: str | None = None


def _none(reason: str) -> Figure:
    return Figure(None, None, None, None, reason)


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted ``values`` (linear interpolation between closest ranks); the scorecard's latency
    percentiles and the report's histograms use it too."""
    pos = q * (len(values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


def _share(scope: Scope, count: float, which: str) -> float | None:
    denominator = scope.n if which == "strict" else scope.judged
    return count / denominator if denominator else None


class _Draws:
    """The bootstrap's corrected counts per scope: the low and the high reading of each draw (they differ only
    where a draw's Se + Sp <= 1: the items at the far end on each side)."""

    def __init__(self, scopes: Mapping[str, Scope], parts: Mapping[str, Part], rates: Mapping[str, Rates],
                 draws: int, seed: int) -> None:
        rng = random.Random(seed)
        self.low: dict[str, list[float]] = {name: [] for name in scopes}
        self.high: dict[str, list[float]] = {name: [] for name in scopes}
        used = sorted({parts[key].rates for scope in scopes.values() for key in scope.parts})
        keys = sorted({key for scope in scopes.values() for key in scope.parts})
        for _ in range(draws):
            drawn = {name: rates[name].draw(rng) for name in used}
            shares: dict[str, float | None] = {}
            for key in keys:
                part = parts[key]
                passed = rng.betavariate(part.passed + PRIOR, part.judged - part.passed + PRIOR)
                shares[key] = rogan_gladen(passed, *drawn[part.rates])
            for name, scope in scopes.items():
                base = float(scope.official_correct)
                low = base + sum(parts[k].judged * (shares[k] or 0.0) for k in scope.parts)
                high = base + sum(parts[k].judged * (1.0 if shares[k] is None else shares[k]) for k in scope.parts)
                self.low[name].append(low)
                self.high[name].append(high)

    def interval(self, names: Sequence[str], scopes: Mapping[str, Scope], which: str) -> tuple[float, float] | None:
        """The 95% interval of the mean of the ``names`` scopes' accuracies (one scope: its accuracy)."""
        kept = [(n, scopes[n].n if which == "strict" else scopes[n].judged) for n in names]
        kept = [(n, d) for n, d in kept if d]
        if not kept:
            return None

        def means(counts: Mapping[str, list[float]]) -> list[float]:
            shares = [[c / d for c in counts[n]] for n, d in kept]
            return sorted(sum(draw) / len(kept) for draw in zip(*shares))

        return (quantile(means(self.low), 0.025), quantile(means(self.high), 0.975))


def corrected_count(scope: Scope, parts: Mapping[str, Part], rates: Mapping[str, Rates]) -> float | None:
    """The point estimate of the scope's correct count: its official labels plus each part's corrected passes;
    None when some part's rates are unusable."""
    count = float(scope.official_correct)
    for key in scope.parts:
        part = parts[key]
        if not part.judged:
            continue
        r = rates[part.rates]
        share = None if r.why_unusable() else rogan_gladen(part.passed / part.judged, r.sensitivity or 0.0,
                                                           r.specificity or 0.0)
        if share is None:
            return None
        count += share * part.judged
    return count


def _reason(scope: Scope, parts: Mapping[str, Part], rates: Mapping[str, Rates]) -> str | None:
    for key in scope.parts:
        why = rates[parts[key].rates].why_unusable()
        if why is not None:
            return why
    return None


def estimate(scopes: Mapping[str, Scope], parts: Mapping[str, Part], rates: Mapping[str, Rates], *,
             averaged: Mapping[str, Sequence[str]] | None = None, draws: int = DRAWS, seed: int = SEED
             ) -> dict[str, Figure]:
    """A ``Figure`` per scope, and per ``averaged`` name the mean of those scopes' figures (the task-averaged one:
    strict over the scopes with items, judged-only over those with a judged item). A scope with a part whose rates
    cannot correct it (``Rates.why_unusable``) has none, and says why; so does an average over it."""
    averaged = dict(averaged or {})
    reasons = {name: _reason(scope, parts, rates) for name, scope in scopes.items()}
    usable = {name: scope for name, scope in scopes.items() if reasons[name] is None}
    sampled = _Draws(usable, parts, rates, draws, seed) if usable else None
    out: dict[str, Figure] = {}
    for name, scope in scopes.items():
        if reasons[name] is not None or sampled is None or not scope.n:
            out[name] = _none(str(reasons[name] or "no item"))
            continue
        out[name] = _mean_figure([name], usable, parts, rates, sampled)
    for name, members in averaged.items():
        blocked = next((reasons[m] for m in members if reasons.get(m) is not None), None)
        present = [m for m in members if m in usable and usable[m].n]
        if blocked is not None or sampled is None or not present:
            out[name] = _none(str(blocked or "no type has items"))
            continue
        out[name] = _mean_figure(present, usable, parts, rates, sampled)
    return out


def _mean_figure(names: Sequence[str], scopes: Mapping[str, Scope], parts: Mapping[str, Part],
                 rates: Mapping[str, Rates], sampled: _Draws) -> Figure:
    counts = {n: corrected_count(scopes[n], parts, rates) for n in names}
    values = {}
    for which in ("strict", "judged"):
        shares = [_share(scopes[n], counts[n] or 0.0, which) for n in names]
        kept = [s for s in shares if s is not None]
        values[which] = sum(kept) / len(kept) if kept else None
    return Figure(values["strict"], sampled.interval(names, scopes, "strict"), values["judged"],
                  sampled.interval(names, scopes, "judged"))
