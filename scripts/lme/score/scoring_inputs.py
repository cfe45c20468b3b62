"""What a scorecard takes from outside its run folder, as one record the caller passes in: the loop's kept fixes of
the run (``decisions.jsonl``: the MIXED ROWS banner), the prompts the judge-stability registry marks flaky, and the
judge-agreement measurements (a successor judge's calibration, the estimate of the official accuracy).

The scorecard is a function of the run folder and this record: the scoring functions take it, never a project to
look in. The command that knows the project reads it (``read``); ``ScoringInputs()`` scores a run on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from lme.core import fileio
from lme.core.facts import DECISIONS_FILE
from lme.judge import agreement as judge_agreement
from lme.judge import stability as judge_stability
from lme.score import loop_rows
from lme.store import run_store


@dataclass(frozen=True)
class ScoringInputs:
    """The facts from outside the run a scorecard uses; each empty by default (nothing known beyond the run)."""

    kept_fixes: Mapping[int, frozenset[str]] = field(default_factory=dict)
    """The loop's kept rounds of this run id and the ids each re-tested (``loop_rows.kept_fixes``)."""
    flaky: frozenset[judge_stability.Key] = frozenset()
    """(question_id, judge model, prompt sha256) the judge-stability registry marks flaky."""
    agreement: tuple[Mapping[str, Any], ...] = ()
    """The judge-agreement registry's measurements, in order (``judge_agreement.records``)."""

    def agreement_of(self, provider: str | None, model: str | None,
                     shape: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
        """The last measurement of ``provider:model`` with ``shape`` (``judge_agreement.latest_of``)."""
        return judge_agreement.latest_of(self.agreement, provider, model, shape=shape)


def read(project: Path | None, run_id: str) -> ScoringInputs:
    """The inputs the project ``project`` holds for run ``run_id`` (empty when None or it holds none)."""
    if project is None:
        return ScoringInputs()
    decisions = Path(project) / DECISIONS_FILE
    records = [r for _, r in fileio.iter_jsonl(decisions, skip_bad=True)] if decisions.exists() else []
    return ScoringInputs(kept_fixes=loop_rows.kept_fixes(records, run_id),
                         flaky=frozenset(judge_stability.StabilityRegistry(project).flaky()),
                         agreement=judge_agreement.records(project))


def for_run(run_dir: Path, project: Path | None = None) -> ScoringInputs:
    """What a command scores ``run_dir`` with: the inputs of the project the run records or is held by
    (``run_store.scoring_project``), else of ``project`` (the command's own)."""
    meta = run_store.peek_meta(run_dir)
    run_id = str(meta.get("runId") or Path(run_dir).name) if isinstance(meta, dict) else Path(run_dir).name
    return read(run_store.scoring_project(run_dir) or project, run_id)
