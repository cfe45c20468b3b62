"""Round bookkeeping for the iteration loop: the round counter, pre-fix snapshots, the loop's history log.

``loop_state`` holds the state (standard library only: ``init``, ``current``, ``bump``, ``blocked`` and ``status``
run with a bare ``python3``); ``loop_steps`` changes it.

Files (project root): ``.max_effort_round`` (the last round number started), ``history_max_effort.md`` (one
table row per round; the loop never writes ``history.md``), ``.longmemeval-benchmarks/snapshots/v<N>/`` (the
run's files as they were before round N's fix).

Usage:
    python scripts/rounds.py init                      # create the counter (0) and the history file if missing
    python scripts/rounds.py current                   # print the round number
    python scripts/rounds.py bump                      # increment the counter, print the new round
    python scripts/rounds.py snapshot --run-id longmemeval-iter
    python scripts/rounds.py log --run-id longmemeval-iter --note "baseline"
    python scripts/rounds.py blocked --reason billing
    python scripts/rounds.py status                    # where the loop stands and the step to run next

The loop's steps as one command each (the skill's steps 4, 6 and 8-10; each can simply be run again):
    python scripts/rounds.py begin --run-id longmemeval-iter     # bump, snapshot, log, commit, push (refused on a
                                                                 # broken stack or without its noise floor)
    python scripts/rounds.py commit-fix                          # commit the fix as "fix(v<N>): <proposal>"
    python scripts/rounds.py finish --run-id longmemeval-iter    # decide (revert applied), commit, push

After the official judge retired (a loop run recorded it and said BLOCKED), once the user named a calibrated
successor in the config (successorJudge):
    python scripts/rounds.py successor-baseline --run-id longmemeval-iter   # void the round in flight, re-judge
                                   # every item by the successor from step 1 on; exit 2 and BLOCKED until then
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from lme.core import cli_parser
from lme.core.facts import PROPOSAL_FILE


STEP_COMMANDS = ("snapshot", "log", "begin", "commit-fix", "finish", "successor-baseline")


def build_parser() -> argparse.ArgumentParser:
    parser, sub = cli_parser.loop_command_parser(__doc__)
    sub.add_parser("init", help="create .max_effort_round (0) and history_max_effort.md when missing")
    sub.add_parser("current", help="print the current round number")
    sub.add_parser("bump", help="increment the round counter atomically and print the new round")
    p_snap = sub.add_parser("snapshot", help="copy the run's files to snapshots/v<ROUND>/ (never overwrites)")
    p_snap.add_argument("--run-id", required=True, help="the loop's run id")
    p_snap.add_argument("--round", type=int, default=None, help="round number (default: the current round)")
    p_log = sub.add_parser("log", help="append the run's metrics as a row of history_max_effort.md")
    p_log.add_argument("--run-id", required=True, help="the run whose metrics.json is logged")
    p_log.add_argument("--note", default="", help="free text for the note column (e.g. baseline, kept fix X)")
    p_log.add_argument("--round", type=int, default=None, help="round number (default: the current round)")
    p_blk = sub.add_parser("blocked", help="log that the loop is blocked and needs a human")
    p_blk.add_argument("--reason", required=True,
                       help="'billing' (logged as 'API billing'), 'cost' (the cost gate needs the user), "
                            "'judge-retired' (the official judge is gone, no successor named), or free text")
    sub.add_parser("status", help="print where the loop stands and the skill step to run next")
    p_begin = sub.add_parser("begin", help="step 4: bump, snapshot, log the baseline, commit the state, push")
    p_begin.add_argument("--run-id", required=True, help="the loop's run id")
    p_fix = sub.add_parser("commit-fix", help="step 6: commit the changed files as 'fix(v<N>): <proposal>'")
    p_fix.add_argument("--proposal", type=Path, default=None,
                       help=f"the proposal file, relative to the project (default: {PROPOSAL_FILE})")
    p_finish = sub.add_parser("finish", help="steps 8-10: decide (revert applied), commit the state, push")
    p_finish.add_argument("--run-id", required=True, help="the loop's run id (re-tested after the fix)")
    p_finish.add_argument("--reusable", action="store_true",
                          help="the fix is infrastructure later fixes build on: keep it at net 0 or -1")
    p_finish.add_argument("--allow-errors", action="store_true",
                          help="decide although re-tested items ended in errors (they count as wrong)")
    p_day = sub.add_parser("successor-baseline",
                           help="after the official judge retired: the config's calibrated successor judges the "
                                "loop from here on (the round in flight voided, every item judged again by it)")
    p_day.add_argument("--run-id", required=True, help="the loop's run id")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    project = args.project
    from lme.loop import state  # after parsing: --help and usage errors need none of the loop
    if args.command in STEP_COMMANDS:  # the steps need the venv; init, current, bump, blocked, status do not
        from lme.loop import steps

    if args.command == "init":
        created = state.init(project)
        print(f"created {', '.join(created)}" if created else "already set up", file=sys.stderr)
        print(state.current(project))
    elif args.command == "current":
        print(state.current(project))
    elif args.command == "bump":
        print(state.bump(project))
    elif args.command == "snapshot":
        print(steps.snapshot(project, args.run_id, args.round))
    elif args.command == "log":
        print(steps.log(project, args.run_id, args.note, args.round))
    elif args.command == "blocked":
        print(state.blocked(project, args.reason))
    elif args.command == "status":
        print("\n".join(state.status(project)))
    elif args.command == "begin":
        print(steps.begin(project, args.run_id))
    elif args.command == "commit-fix":
        print(steps.commit_fix(project, args.proposal))
    elif args.command == "successor-baseline":
        from lme.loop import judge_day  # the venv's: the judge's calibration and the verdict archive

        code, lines = judge_day.successor_baseline(project, args.run_id)
        print("\n".join(lines))
        return code
    else:
        print(steps.finish(project, args.run_id, reusable=args.reusable, allow_errors=args.allow_errors))
    return 0
