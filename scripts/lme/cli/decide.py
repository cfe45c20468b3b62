"""Keep or revert a fix: compare the pre-fix snapshot with the post-fix run and apply the loop's decision table.

    net = fixes - regressions (strict, per question, snapshot -> run)
    net >= +1              keep
    net in {0, -1}         keep only with --reusable (infrastructure other fixes build on); else revert
    net <= -2              revert, however right the fix feels

The re-test set is the round's fair trigger set (``trigger_set.py``: the cluster's failing items plus a control
sample of correct ones). The record splits the counts by part (an item wrong in the snapshot can only be fixed, a
right one only broken) and sets the net against the measured noise floor (``noise_floor.py``): the flips
expected from noise on a set of that size and the band a net falls in under noise alone. The table above stays
the decision; a keep whose net lies inside the band is labelled ``keep (within noise)`` (in the record, the
printed line and the history) and is never presented as a fix. Without a noise floor for the run's stack the
label says ``keep (noise not measured)``.

A flip on an item whose judge label is unstable (its repeated verdicts disagree, or the project's
judge-stability.jsonl marks that exact prompt flaky) is noise: the decision uses the net without such flips,
and the record and the printed line name them (never hidden).

With --apply, a revert restores the snapshot's rows and completed marks for every re-tested question (under the
run lock, atomically, with a backup), runs ``git revert --no-edit <fix commit>`` on the loop branch, and rewrites
the run's scorecard. Every decision is appended to ``.longmemeval-benchmarks/decisions.jsonl``.

Usage:
    python scripts/decide.py --snapshot v3 --run-id longmemeval-iter --fix-commit abc1234
    python scripts/decide.py --snapshot v3 --run-id longmemeval-iter --fix-commit abc1234 --apply
    python scripts/decide.py --snapshot v3 --run-id longmemeval-iter --reusable --apply --json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Sequence

from lme.core import cli_parser
from lme.loop import decide


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli_parser.ArgumentParser(loop_command=True, description=__doc__,
                                       formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", type=Path, default=Path.cwd(), help="project root (default: cwd)")
    parser.add_argument("--snapshot", required=True, help="the pre-fix snapshot, v<ROUND> (rounds.py snapshot)")
    parser.add_argument("--run-id", required=True, help="the post-fix run (the loop's run id)")
    parser.add_argument("--reusable", action="store_true", help="the fix is infrastructure later fixes reuse: keep at net 0 or -1")
    parser.add_argument("--fix-commit", help="the fix's commit sha (needed to revert)")
    parser.add_argument("--apply", action="store_true", help="carry out a revert: restore snapshot verdicts, git revert")
    parser.add_argument("--allow-errors", action="store_true", help="decide although re-tested items ended in errors (they count as wrong)")
    parser.add_argument("--json", action="store_true", help="print the decision record as JSON")
    args = parser.parse_args(argv)
    record = decide.run_decision(
        args.project, args.snapshot, args.run_id, reusable=args.reusable, fix_commit=args.fix_commit,
        apply=args.apply, allow_errors=args.allow_errors,
    )
    print(json.dumps(record, indent=2, sort_keys=True) if args.json else decide.describe(record))
    return 0
