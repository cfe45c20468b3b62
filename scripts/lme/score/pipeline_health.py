"""Is a stage of the memory pipeline broken across a run? Adds up what each row's target declared
(``target.stages``, ``target.truncation``: ``records.PipelineStage``, ``ItemTruncation``; any target may fill them,
memory-ref does) and the ranking it returned, and names a stage broken across the run, with the fix. Silent
before: 0 facts on 499 items, 23,806 malformed writer lines. The target's own ``debug`` is never read.

    a stage    failed on every item that reports it (a warning: failed or fell back on more than half of them)
    retrieval  an empty ranking on every item that returned one (``retrieved_session_ids``)
    truncation the history cut to fit on more than half of the items that report it (a warning)

The scorecard and ``cluster_failures.py`` print the problems as a loud line at the top; ``rounds.py begin``
refuses to start a round while a stage is broken.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from lme.core.codec import Record
from lme.core.run_records import ResultRow

MIN_ITEMS = 3
"""Fewer items reporting a stage than this say nothing about the stage."""


@dataclass(frozen=True)
class Problem(Record):
    """A stage found broken (or warned about): one line, with the fix."""

    stage: str
    line: str
    fix: str


@dataclass(frozen=True)
class PipelineHealth(Record):
    """Per stage, how many items reported each status; the rankings and truncations; the problems found."""

    items: int = 0
    stages: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    retrieval_items: int = 0
    empty_retrieval_items: int = 0
    truncation_items: int = 0
    truncated_items: int = 0
    broken: tuple[Problem, ...] = ()
    warnings: tuple[Problem, ...] = ()


def _stage_problems(statuses: Mapping[str, Counter[str]], details: Mapping[str, Counter[str]]
                    ) -> tuple[list[Problem], list[Problem]]:
    broken, warnings = [], []
    for name, counts in statuses.items():
        n = sum(counts.values())
        said = details[name].most_common(1)
        why = f" ({said[0][0]})" if said and said[0][0] else ""
        fix = f"read the {name} stage of a row (target.stages, and the target's debug)"
        if n >= MIN_ITEMS and counts["failed"] == n:
            broken.append(Problem(name, f"{name}: failed on all {n} items{why}", fix))
        elif n >= MIN_ITEMS and (counts["failed"] + counts["fallback"]) * 2 > n:
            warnings.append(Problem(name, f"{name}: failed or fell back on {counts['failed'] + counts['fallback']}"
                                    f" of {n} items{why}", fix))
    return broken, warnings


def summarise(rows: Iterable[ResultRow]) -> PipelineHealth:
    items = retrieval_items = empty_retrieval = truncation_items = truncated = 0
    statuses: dict[str, Counter[str]] = defaultdict(Counter)
    details: dict[str, Counter[str]] = defaultdict(Counter)
    for row in rows:
        target = row.target
        if target is not None and target.stages:
            items += 1
            for stage in target.stages:
                statuses[stage.name][stage.status] += 1
                if stage.status in ("failed", "fallback"):
                    details[stage.name][stage.detail or ""] += 1
        if target is not None and target.truncation is not None:
            truncation_items += 1
            truncated += target.truncation.truncated
        ranking = None if row.retrieval is None else row.retrieval.retrieved_session_ids
        if ranking is not None:
            retrieval_items += 1
            empty_retrieval += not ranking
    broken, warnings = _stage_problems(statuses, details)
    if retrieval_items >= MIN_ITEMS and empty_retrieval == retrieval_items and "retrieval" not in {
            p.stage for p in broken}:
        broken.append(Problem("retrieval", f"retrieval: nothing ranked on all {retrieval_items} items",
                              "check the target's retriever options (retriever, top_k)"))
    if truncation_items >= MIN_ITEMS and truncated * 2 > truncation_items:
        warnings.append(Problem("truncation", f"history truncated to fit on {truncated} of {truncation_items} items",
                                "give the reader fewer sessions (top_k, an evidence budget) or a model with a "
                                "larger context window"))
    return PipelineHealth(items, {name: dict(sorted(c.items())) for name, c in sorted(statuses.items())},
                          retrieval_items, empty_retrieval, truncation_items, truncated, tuple(broken), tuple(warnings))


def loud_lines(summary: PipelineHealth | None) -> list[str]:
    """The lines to put at the top of a report: one per broken stage (then warnings)."""
    if summary is None:
        return []
    return ([f"PIPELINE BROKEN: {p.line}. Fix: {p.fix}" for p in summary.broken]
            + [f"pipeline warning: {p.line}. Fix: {p.fix}" for p in summary.warnings])
