"""The one definition of every accuracy figure LongMemEval reports.

Upstream (``print_qa_metrics.py``) reports, over the items of a judged file: accuracy per question type (abstention
items count in their base type), the task-averaged accuracy (unweighted mean of the six per-type accuracies, i.e.
macro), the overall accuracy (micro, over all items) and the abstention accuracy (items whose id holds ``_abs``).

We compute each figure twice, and always label which is which:

- strict: the denominator is every item the run covers; an error or an item never run counts as wrong.
- judged-only: the denominator is the judged items; this is what upstream prints when fed a file holding only the
  items that were judged.

Full precision is kept here; callers round (upstream prints 4 decimals) only when rendering for people.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from lme.core import codec
from lme.core.codec import Record
from lme.core.facts import QUESTION_TYPES, is_abstention
from lme.core.run_records import ResultRow, label_of

Z_95 = 1.959963984540054
"""The two-sided 95% normal quantile used for the Wilson interval."""

DISPLAY_DECIMALS = 4
"""Upstream rounds to 4 decimals when printing."""


@dataclass(frozen=True)
class Figures(Record):
    """One metrics block (overall, abstention, a question type): n, judged, correct, both accuracies (strict: over
    all n, judged-only: over the judged items) with their 95% Wilson intervals."""

    n: int = 0
    judged: int = 0
    correct: int = 0
    accuracy_strict: float | None = None
    accuracy_judged: float | None = None
    wilson_strict: tuple[float, float] | None = None
    wilson_judged: tuple[float, float] | None = None
    errors_or_not_run: int | None = codec.field(default=None, omit=None)
    """None in blocks written before it was recorded."""
    __codec_order__ = ("n", "judged", "correct", "errors_or_not_run")

    def accuracy(self, which: str) -> float | None:
        """``strict`` or ``judged``."""
        return self.accuracy_strict if which == "strict" else self.accuracy_judged

    def denominator(self, which: str) -> int:
        return self.n if which == "strict" else self.judged


@dataclass(frozen=True)
class TaskAveraged(Record):
    """The macro figure: the mean of the per-type accuracies over the types present (strict) or judged."""

    accuracy_strict: float | None = None
    accuracy_judged: float | None = None
    types_strict: tuple[str, ...] = ()
    types_judged: tuple[str, ...] = ()
    all_six_types: bool = False


@dataclass(frozen=True)
class Scored(Record):
    """Every figure for a set of items (``score``): the scorecard's fields of the same names."""

    n_total: int
    judged: int
    correct: int
    coverage: float
    unattributed: int
    overall: Figures
    task_averaged: TaskAveraged
    abstention: Figures
    per_type: Mapping[str, Figures]


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float] | None:
    """Wilson score interval ``(low, high)`` for ``successes`` out of ``n``; None when ``n`` is 0."""
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"successes={successes} outside 0..{n}")
    p = successes / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = (z / denom) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    low = 0.0 if successes == 0 else max(0.0, centre - half)  # exact at the ends: no 1e-16 rounding residue
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def _block(labels: Iterable[bool | None]) -> Figures:
    values = list(labels)
    n = len(values)
    judged = sum(1 for v in values if v is not None)
    correct = sum(1 for v in values if v is True)
    return Figures(n=n, judged=judged, correct=correct, errors_or_not_run=n - judged,
                   accuracy_strict=correct / n if n else None, accuracy_judged=correct / judged if judged else None,
                   wilson_strict=wilson_interval(correct, n), wilson_judged=wilson_interval(correct, judged))


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def score(
    labels: Mapping[str, bool | None], types: Mapping[str, str], *, unattributed: int = 0
) -> Scored:
    """Every figure for a set of items.

    ``types`` maps each question id the run covers to its ``question_type``: it defines the strict denominator.
    ``labels`` maps question ids to True/False (judged) or None (error); ids absent from ``labels`` were not run.
    ``unattributed`` counts further items of unknown type never run: wrong in the overall strict figure only.
    Raises ValueError for a label on an id outside ``types`` or an unknown question type.
    """
    stray = [qid for qid in labels if qid not in types]
    if stray:
        raise ValueError(f"{len(stray)} labelled question id(s) are not in the item set, e.g. {stray[0]!r}")
    unknown = sorted({t for t in types.values() if t not in QUESTION_TYPES})
    if unknown:
        raise ValueError(f"unknown question_type {unknown[0]!r}; expected one of {', '.join(QUESTION_TYPES)}")

    by_type: dict[str, list[bool | None]] = {t: [] for t in QUESTION_TYPES}
    abstention: list[bool | None] = []
    every: list[bool | None] = []
    for qid, qtype in types.items():
        label = labels.get(qid)
        by_type[qtype].append(label)
        every.append(label)
        if is_abstention(qid):
            abstention.append(label)

    every.extend([None] * unattributed)

    per_type = {t: _block(v) for t, v in by_type.items()}
    present = tuple(t for t in QUESTION_TYPES if per_type[t].n > 0)
    judged_types = tuple(t for t in present if per_type[t].judged > 0)
    overall = _block(every)
    return Scored(
        n_total=overall.n, judged=overall.judged, correct=overall.correct,
        coverage=overall.judged / overall.n if overall.n else 0.0, unattributed=unattributed, overall=overall,
        task_averaged=TaskAveraged(
            accuracy_strict=_mean([per_type[t].accuracy_strict for t in present]),
            accuracy_judged=_mean([per_type[t].accuracy_judged for t in judged_types]),
            types_strict=present, types_judged=judged_types, all_six_types=len(present) == len(QUESTION_TYPES)),
        abstention=_block(abstention), per_type=per_type)


def display_round(value: float, decimals: int = DISPLAY_DECIMALS) -> float:
    """``value`` rounded as upstream prints it: ``round(np.mean(...), 4)`` is numpy's rounding, which can differ from
    Python's ``round`` on a float (7/160 prints 0.0438 upstream, 0.0437 with Python's). numpy scales by 10**decimals,
    rounds half to even (``rint``) and scales back, each step one float operation; so does this, without importing
    numpy (a third of a second on every scorecard). tests/score/test_metrics.py checks it against numpy itself."""
    value = float(value)
    if not math.isfinite(value):
        return value
    scale = 10.0 ** decimals
    scaled = value * scale
    return value if not math.isfinite(scaled) else math.copysign(round(scaled) / scale, value)


def fmt(value: float | None, decimals: int = DISPLAY_DECIMALS) -> str:
    """A figure as people read it: rounded like upstream, an em dash for an undefined figure."""
    return "—" if value is None else f"{display_round(value, decimals):.{decimals}f}"


def fmt_interval(interval: Sequence[float] | None, decimals: int = 3) -> str:
    return "—" if interval is None else f"[{interval[0]:.{decimals}f}, {interval[1]:.{decimals}f}]"


def strict_labels(
    rows: Mapping[str, ResultRow], types: Mapping[str, str]
) -> dict[str, bool | None]:
    """Labels for ``score``: each covered id's last row label (None for an error row); ids with no row are absent."""
    return {qid: label_of(rows[qid]) for qid in types if qid in rows}
