"""The loop's noise floor: how often the UNCHANGED system's labels flip when its items are simply run again.

Before the first decision, and again whenever the stack's models change (target, reader, writer, judge), a seeded
sample of the loop run's judged items is run again with the cache bypassed (``parallel_longmemeval.sh
--noise-floor`` does it: ``start`` records the sample's labels and hypothesis hashes and drops the items, the run
resumes them with ``--no-cache``, ``finish`` compares). Per question type it records the test-retest flip rate,
split by cause:

    generation flip   the label changed and so did the hypothesis (the target answered differently)
    judge flip        the label changed on the same hypothesis, or the row's repeated verdicts disagree
                      (``--judge-repeat``, where the run has it)

``decide.py`` turns the rates into the flips expected from noise on a re-test set (sum of its items' type rates)
and a noise band for the net (mean +- 2 sd of fixes - regressions under noise alone): a keep inside the band is
``keep (within noise)``, never a fix.

The record is ``.longmemeval-benchmarks/noise-floor.json`` (committed by the loop: ids, labels, hashes, rates).

Usage:
    python scripts/noise_floor.py check --run-id longmemeval-iter     # exit 0 measured for this stack, 1 not
    python scripts/noise_floor.py start --run-id longmemeval-iter [--sample 60] [--seed S]
    python scripts/noise_floor.py pending --run-id longmemeval-iter   # exit 0 every sampled item re-run, 1 not
    python scripts/noise_floor.py finish --run-id longmemeval-iter
    python scripts/noise_floor.py show
"""

from __future__ import annotations

import sys
from typing import Any, Mapping, Sequence

from lme.core import cli_parser
from lme.loop import noise_floor


def describe(record: Mapping[str, Any]) -> list[str]:
    if record.get("status") != "measured":
        return [f"noise floor: pending ({len(record.get('sample') or [])} sampled items to re-run)"]
    total = record["overall"]
    lines = [f"noise floor ({record['stack']['reader']} reader, judge {record['stack']['judge']}): "
             f"{total['flips']} of {total['n']} sampled labels flipped on a plain re-run "
             f"({total['rate']:.1%}: generation {total['generation_flips']}, judge {total['judge_flips']})"]
    for qtype, b in record["per_type"].items():
        lines.append(f"  {qtype}: {b['flips']}/{b['n']} ({b['rate']:.1%}; generation {b['generation_flips']}, "
                     f"judge {b['judge_flips']})")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser, sub = cli_parser.loop_command_parser(__doc__)
    for name, text in (("check", "exit 0 when the noise floor is measured for the run's stack, else 1"),
                       ("start", "sample, record and drop the items to re-run (once per stack)"),
                       ("pending", "exit 0 when every sampled item is re-run, else 1 (prints how many are left)"),
                       ("finish", "compare the re-run sample with its recorded labels and record the flip rates")):
        p = sub.add_parser(name, help=text)
        p.add_argument("--run-id", required=True, help="the loop's run id")
        if name == "start":
            p.add_argument("--sample", type=int, default=noise_floor.DEFAULT_SAMPLE,
                           help=f"items to re-run (default {noise_floor.DEFAULT_SAMPLE})")
            p.add_argument("--seed", help="the sample's seed (default: derived from the stack)")
    sub.add_parser("show", help="print the recorded noise floor")
    args = parser.parse_args(argv)
    project = args.project
    if args.command == "show":
        record = noise_floor.load(project)
        print("\n".join(describe(record)) if record else "noise floor: not measured")
        return 0
    if args.command == "check":
        _, meta, _, _ = noise_floor.read_run(project, args.run_id)
        record = noise_floor.measured_for(project, meta)
        if record is None:
            old = noise_floor.load(project)
            why = ("pending" if old and old.get("status") == "pending" else
                   "stale: the stack's models changed" if old else "not measured")
            print(f"noise floor: {why}")
            return 1
        print("\n".join(describe(record)))
        return 0
    if args.command == "start":
        record = noise_floor.start(project, args.run_id, size=args.sample, seed=args.seed)
        print(f"noise floor: {len(record['sample'])} sampled item(s) recorded and dropped; "
              f"the run re-runs them with --no-cache", file=sys.stderr)
        return 0
    if args.command == "pending":
        left = noise_floor.pending_ids(project, args.run_id)
        print(f"noise floor: {len(left)} sampled item(s) left to re-run")
        return 1 if left else 0
    record = noise_floor.finish(project, args.run_id)
    print("\n".join(describe(record)))
    return 0
