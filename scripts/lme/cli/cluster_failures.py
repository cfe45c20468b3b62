"""Group a run's failures by question type and failure mode: step A of the loop's cluster -> diagnose -> propose.

Every item whose last row is not judged correct (strict: errors count) gets one failure mode, first match wins:

    error:<kind>            the row is an error (rate_limit, server, billing, ...): infrastructure, not a fix target
    gold_reported_bad       the id is in references/known-gold-errors.json: do not chase it
    abstention_answered     an ``_abs`` item (should refuse) that the target answered
    abstention_refused_judged_wrong   an ``_abs`` item whose hypothesis does refuse (the offline judge's
                            abstention phrases), judged wrong anyway: read the judge's verdict before the target
    refused_should_answer   a normal item the target refused ("I don't know", "not mentioned", ...)
    retrieval_miss          the row carries retrieval and no gold session is in the top k
    retrieval_partial       some but not all gold sessions are in the top k (multi-session needs all)
    temporal_order          temporal-reasoning, evidence retrieved, a "which first / which last" question:
                            ordering two events (the bypass's order rule), not date arithmetic
    temporal_arithmetic     temporal-reasoning, evidence retrieved: date arithmetic went wrong
    stale_value             knowledge-update, evidence retrieved: an old value was given instead of the latest
    preference_not_personalised   single-session-preference: generic advice instead of the user's preference
    reading_error           evidence retrieved (or no retrieval recorded) and the reader still got it wrong

When rows carry the target's pipeline stages (``target.stages``, which any target may report: memory-ref does),
the stages that did not run as meant (skipped, failed, fell back) are counted per cluster, so a failure can be
pinned on a stage (memory-ref: ``reader skipped`` is its symbolic bypass answering).

Usage:
    python scripts/cluster_failures.py --run-id longmemeval-iter            # Markdown for the agent
    python scripts/cluster_failures.py --run-id longmemeval-iter --json     # JSON records only
    python scripts/cluster_failures.py --run-id longmemeval-iter --ids 1    # cluster 1's ids, one per line
    python scripts/cluster_failures.py --run-id longmemeval-iter --ids 1 --out .longmemeval-benchmarks/trigger_set.txt
    python scripts/cluster_failures.py --run-id longmemeval-iter --ids 1 --control-ratio 2 --out trigger_set.txt

``--ids N`` gives the round's fair re-test set (``trigger_set.py``): cluster N's failing ids, then a control
sample of currently-correct items of the same question types (at least as many, ``--control-ratio``; seeded by
the round, ``--seed``), each part under its ``# failing`` / ``# control`` comment line.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from lme.core import cli_parser
from lme.core import unattended
from lme.store import run_store
from lme.score import trigger_set
from lme.core.errors import UserError
from lme.core.facts import STATE_DIR
from lme.score import cluster_failures


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli_parser.ArgumentParser(loop_command=True, description=__doc__,
                                       formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", type=Path, default=Path.cwd(), help="project root (default: cwd)")
    parser.add_argument("--run-id", help="the run to analyse (the loop's run id)")
    parser.add_argument("--run-dir", type=Path, help="analyse this run or snapshot directory instead of --run-id")
    parser.add_argument("--top-k", type=int, default=10, help="a gold session must rank in the top K to count as retrieved (default 10)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    parser.add_argument("--ids", type=int, metavar="N",
                        help="print only the question ids of cluster N (numbered as in the Markdown), one per line")
    parser.add_argument("--out", type=Path, metavar="FILE",
                        help="with --ids: write the ids to FILE (one per line, replacing it) instead of stdout")
    parser.add_argument("--control-ratio", type=cli_parser.finite_float, default=1.0, metavar="R",
                        help="with --ids: control items per failing item, per type (default 1.0; at least 1)")
    parser.add_argument("--seed", help="with --ids: the control sample's seed (default: the round, v<N>)")
    args = parser.parse_args(argv)
    if not args.run_id and not args.run_dir:
        raise UserError("give --run-id R (or --run-dir PATH)", fix="e.g. --run-id longmemeval-iter")
    if args.top_k < 1:
        raise UserError(f"--top-k {args.top_k} must be >= 1")
    if args.out is not None and args.ids is None:
        raise UserError("--out writes a cluster's ids: it needs --ids N", fix="e.g. --ids 1 --out trigger_set.txt")
    why = unattended.loop_session(loop_command=True)
    if args.out is not None and why is not None:  # the agent writes the trigger set, nothing else
        unattended.refuse_outside(args.out, "--out", why, cwd=Path.cwd() / STATE_DIR, where="the loop's state folder",
                                  fix=f"e.g. --out {STATE_DIR}/trigger_set.txt")
        if Path(args.out).suffix != ".txt":  # never the config or the judge's records the user keeps there
            raise UserError(f"--out {args.out}: in a loop session ({why}) a trigger set is a .txt file",
                            fix=f"e.g. --out {STATE_DIR}/trigger_set.txt")
    run_dir = args.run_dir if args.run_dir else run_store.existing_run_dir(args.project, args.run_id)
    if not Path(run_dir).is_dir():
        raise UserError(f"no run directory at {run_dir}")
    result = cluster_failures.cluster_run(run_dir, top_k=args.top_k)
    if args.ids is not None:
        seed = args.seed or trigger_set.round_seed(args.project)
        chosen = cluster_failures.fair_trigger_set(run_dir, result, args.ids, ratio=args.control_ratio, seed=seed)
        if args.out is None:
            print(trigger_set.render(chosen), end="")
        else:
            trigger_set.write(args.out, chosen)
            short = sum(chosen.shortfall.values())
            print(f"trigger set: {len(chosen.failing)} failing id(s) of cluster {args.ids} + {len(chosen.control)} "
                  f"control id(s) (seed {seed}){f', control short by {short}' if short else ''} written to {args.out}",
                  file=sys.stderr)
        return 0
    shown = json.dumps(result, indent=2, ensure_ascii=False) if args.json else cluster_failures.render_markdown(result)
    print(shown, end="" if not args.json else "\n")
    return 0
