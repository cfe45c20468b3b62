"""Scoring never looks for a project above a run folder: the scorecard is a function of the run folder and what its
caller passes in (``scoring_inputs.ScoringInputs``). Walking up from a path (``.parent.parent``, ``parents[N]``) is
left to the store, which owns the run layout (``run_discovery.project_holding``); the score, judge and report stages
only climb from their own ``__file__`` (the plugin's code and assets)."""

from __future__ import annotations

import re
from pathlib import Path

LME = Path(__file__).resolve().parents[2] / "scripts" / "lme"
STAGES = ("score", "judge", "report")
WALK_UP = re.compile(r"\.parent\s*\.\s*parent\b|\bparents\s*\[|\bproject_of_run\b|\bproject_holding\b")
OWN_CODE = re.compile(r"Path\(__file__\)")


def test_the_scoring_stages_walk_up_from_no_path_but_their_own_code():
    offenders = []
    for stage in STAGES:
        for path in sorted((LME / stage).rglob("*.py")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if WALK_UP.search(line) and not OWN_CODE.search(line):
                    offenders.append(f"{path.relative_to(LME).as_posix()}:{number}: {line.strip()}")
    assert offenders == [], ("pass what scoring needs from the project in (scoring_inputs.ScoringInputs), or ask "
                             "the store (run_store.scoring_project):\n" + "\n".join(offenders))


def test_the_scorecards_blocks_from_outside_the_run_take_the_inputs_not_a_project():
    """The functions that make the loop, stability and agreement blocks are handed ``inputs``, never a place."""
    scoring = (LME / "score" / "scoring.py").read_text(encoding="utf-8")
    for call in ("loop_rows.summary(inputs.", "stability.summary(covered, set(inputs.flaky))",
                 "judge_provenance.summary(run.meta, covered, inputs)", "estimate_block(run.meta, run.rows, types, "
                 "record, inputs)"):
        assert call in scoring
    assert "StabilityRegistry(" not in scoring and "judge_agreement.latest(" not in scoring
