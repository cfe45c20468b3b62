"""The loop's termination rule: a run at the target must be confirmed by a clean rerun before the loop ends.

Target: ceil(0.95 * n_total) strict correct — 475 of 500, and also 475 of the 499-item ``_s`` copy (95.2%).
When the loop's run reaches it, ``start`` records a confirmation: a NEW run id, to be run over the full set with
``--no-cache`` (fresh model calls, no cached answer reused). ``finish`` reads that run: if it also reaches the
target the loop ends (``--commit`` commits the loop state and pushes); if not, the confirmation's fresh verdicts
replace the loop run's (the honest, lower baseline; a backup is kept) and the loop goes on.
Both run ids are recorded in ``.longmemeval-benchmarks/confirmation.json``. After the official judge retired the
loop's runs are the successor's (``lme.loop.judge_day``): a confirmation is then reported as the successor's
figure, with the run's official-scale estimate when its metrics.json has one, never as the official target met.

Usage:
    python scripts/confirm.py check --run-id longmemeval-iter          # reached? prints JSON
    python scripts/confirm.py check --exit-status                      # the same; exit 0 reached, 1 not
    python scripts/confirm.py start --run-id longmemeval-iter          # prints the confirmation run id
    python scripts/confirm.py start --resume                           # a pending one's id, else a new one
    bash scripts/parallel_longmemeval.sh 8 133 500 --run-id <that id> --no-cache
    python scripts/confirm.py finish --commit                          # CONFIRMED -> commit + push; else adopt
"""

from __future__ import annotations

import json
import sys
from typing import Sequence

from lme.core import cli_parser
from lme.loop.rules import loop_config
from lme.loop import confirm


def main(argv: Sequence[str] | None = None) -> int:
    parser, sub = cli_parser.loop_command_parser(__doc__)
    p_check = sub.add_parser("check", help="has the run reached ceil(0.95 * n_total) strict correct?")
    p_check.add_argument("--run-id", help="the run (default: config loop.run_id)")
    p_check.add_argument("--exit-status", action="store_true",
                         help="exit 0 when the target is reached and 1 when not (for 'if' in a shell)")
    p_start = sub.add_parser("start", help="record a confirmation rerun (new run id, --no-cache) and print its id")
    p_start.add_argument("--run-id", help="the loop run that reached the target (default: config loop.run_id)")
    p_start.add_argument("--confirm-run-id", help="the new run id (default: <run-id>-confirm-<UTC time>)")
    p_start.add_argument("--resume", action="store_true",
                         help="if a confirmation of this run is pending, print its id instead of refusing")
    p_finish = sub.add_parser("finish", help="judge the confirmation run: end the loop, or adopt its verdicts")
    p_finish.add_argument("--commit", action="store_true", help="when confirmed, commit the loop state and push")
    args = parser.parse_args(argv)
    project = args.project

    if args.command == "check":
        result = confirm.check(project, args.run_id or loop_config(project)["run_id"])
        print(json.dumps(result))
        if args.exit_status and not result["reached"]:
            return 1
    elif args.command == "start":
        record = confirm.start(project, args.run_id or loop_config(project)["run_id"], args.confirm_run_id,
                               resume=args.resume)
        print(record["confirm_run_id"])
        print(f"run it over the full set with --run-id {record['confirm_run_id']} --no-cache, then: confirm.py finish",
              file=sys.stderr)
    else:
        state = confirm.finish(project, commit=args.commit)
        print(json.dumps({k: v for k, v in state.items() if k != "history"}))
        print(confirm.outcome_line(state), file=sys.stderr)
    return 0
