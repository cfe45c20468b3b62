"""Un-complete chosen questions of a run so that a resume re-runs exactly those.

Removes every result row and every completed mark of the named question ids, atomically and under the locks of
the run and of each of its shards (a running writer is refused, named by pid), after copying both files to
``<run>/backups/drop-<UTC time>/``. The next ``run_benchmark.py --run-id R``
re-runs exactly those ids (plus any item that had no judged row already). Unknown ids are refused, all named,
and nothing is written.

Usage:
    python scripts/drop_qids.py --run-id longmemeval-iter 0a995998 gpt4_2655b836
    python scripts/drop_qids.py --run-id longmemeval-iter --from-file trigger_set.txt
    python scripts/drop_qids.py --run-id longmemeval-iter --failed        # every wrong or error item

In the loop (the project has a round counter), ``--from-file`` with a trigger-set file also records which ids are
the cluster's failing items and which the control sample (``trigger_set.py``) in
``.longmemeval-benchmarks/retest.json``, for ``decide.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from lme.core import cli_parser
from lme.store import run_store
from lme.score import trigger_set
from lme.core.facts import ROUND_FILE
from lme.score import drop_qids


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli_parser.ArgumentParser(loop_command=True, description=__doc__,
                                       formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", type=Path, default=Path.cwd(), help="project root (default: cwd)")
    parser.add_argument("--run-id", required=True, help="the run to edit (the loop's run id)")
    parser.add_argument("--from-file", type=Path, help="read ids from this file, one per line (# comments allowed)")
    parser.add_argument("--failed", action="store_true", help="drop every id whose last row is wrong or an error")
    parser.add_argument("qids", nargs="*", help="question ids to drop")
    args = parser.parse_args(argv)

    run_dir = run_store.existing_run_dir(args.project, args.run_id)
    ids = list(args.qids)
    parts = None
    if args.from_file:
        ids += drop_qids.read_id_file(args.from_file)
        parts = trigger_set.parse(Path(args.from_file).read_text(encoding="utf-8"))
    if args.failed:
        ids += drop_qids.failed_ids(run_dir)
    result = drop_qids.drop_qids(run_dir, ids)
    round_file = Path(args.project) / ROUND_FILE
    if parts is not None and round_file.exists():
        round_no = drop_qids.loop_round(args.project)
        extra = tuple(q for q in result["dropped"] if q not in parts.ids)
        recorded = trigger_set.TriggerSet(parts.failing + extra, parts.control)
        result["retest"] = str(trigger_set.record_retest(args.project, recorded, run_id=args.run_id,
                                                         round_no=round_no))
        print(f"re-test set of round v{round_no}: {len(recorded.failing)} failing + {len(recorded.control)} "
              f"control item(s)" + ("" if recorded.control else
                                    " (no control items: regressions outside the set go unseen; "
                                    "cluster_failures.py --ids N --out adds them)"), file=sys.stderr)
    print(json.dumps(result, indent=2))
    print(
        f"dropped {len(result['dropped'])} id(s) ({result['rows_removed']} rows, {result['marks_removed']} marks); "
        f"backup in {result['backup']}; resume the run to re-test them",
        file=sys.stderr,
    )
    return 0
