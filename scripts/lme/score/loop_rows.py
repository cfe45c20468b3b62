"""Which code produced a loop run's rows: a run resumed across kept fixes mixes pre-fix rows with re-tested ones.

The loop re-tests only a round's trigger set, so after a kept fix the run's figure adds up rows made before the fix
(every item outside the re-test sets) and rows made after it. That is the loop's working figure, not a clean run
of the current code: the scorecard says so, and only the confirmation rerun (new run id, no cache) is one.
The kept decisions of this run id and their ``retest_ids`` come from ``.longmemeval-benchmarks/decisions.jsonl``,
read by the command that scores (``scoring_inputs``) and passed in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Collection, Iterable, Mapping

from lme.core.codec import Record


@dataclass(frozen=True)
class LoopRows(Record):
    """A run with kept fixes: the kept rounds, and how many of the scored rows were re-tested after one or predate
    them all."""

    kept_rounds: tuple[int, ...]
    retested: int
    pre_fix: int
    rows: int


def kept_fixes(decisions: Iterable[Mapping[str, Any]], run_id: str) -> dict[int, frozenset[str]]:
    """Round -> re-tested ids of the fixes the loop kept in run ``run_id`` (``decisions.jsonl``'s records in
    order: a later decision on a round replaces an earlier one)."""
    kept: dict[int, frozenset[str]] = {}
    for record in decisions:
        if record.get("run_id") != run_id or not isinstance(record.get("round"), int):
            continue
        if record.get("decision") == "keep":
            kept[record["round"]] = frozenset(record.get("retest_ids") or ())
        else:
            kept.pop(record["round"], None)
    return kept


def summary(kept: Mapping[int, Collection[str]], scored: Collection[str]) -> LoopRows | None:
    """The run's ``LoopRows`` (None: no kept fix, ``kept_fixes``), counted over ``scored``, the ids of the rows the
    scorecard scores (as its Code line counts them): items not run yet and re-tested ids outside them are no rows."""
    if not kept:
        return None
    retested = set().union(*kept.values()) & set(scored)
    return LoopRows(tuple(sorted(kept)), len(retested), len(scored) - len(retested), len(scored))


def scorecard_lines(mixed: LoopRows | None) -> list[str]:
    """The scorecard's loud line for the scorecard's ``loop_rows``, if rows are mixed."""
    if mixed is None or not mixed.pre_fix:
        return []
    rounds = ", ".join(f"v{r}" for r in mixed.kept_rounds)
    return [f"MIXED ROWS: {mixed.pre_fix} of {mixed.rows} rows predate the kept fix(es) of {rounds}; "
            f"{mixed.retested} were re-tested after one. This is the loop's working figure, not a clean run of "
            "the current code: the confirmation rerun (new run id, no cache) is."]
