"""Compare two runs question by question: fixes, regressions, net change and an exact McNemar p-value.

Usage:
    python scripts/compare_runs.py BEFORE_DIR AFTER_DIR [--json] [--force]
    python scripts/compare_runs.py --latest [--project P] [--json] [--force]
    python scripts/compare_runs.py BEFORE_DIR AFTER_DIR --html [PATH]    # also the diff page (report_html)

``--latest`` compares the project's two most recently STARTED runs (run-meta ``started_at``, the rule
``scorecard.py --latest`` uses; the older one is "before"), so re-scoring an old run never swaps them. With fewer
than two runs it prints "need two runs to compare" and exits 0.

Each argument is a run directory (or a snapshot of one): it holds item-results.jsonl, run-meta.json and
manifest.json. The figures (fixes, regressions, McNemar, per type) count only the items both runs judged; the
others are counted apart and named: judged only in one run (the other never ran it), an error row in one, judged in
neither. Runs judged differently or on a different dataset file are refused unless --force, and forced output says
so. What differs between the runs is named, the code file by file (each row records the code that made it).
Two runs of the same hypotheses (every common question has the same hypothesis text) with different judges are a
judge comparison: --judge-comparison (or --force) compares them, and the output says so, with the judges' label
agreement and Cohen's kappa (judge_agreement.py measures a candidate against the official verdicts the same way).

Example:
    python scripts/compare_runs.py .longmemeval-benchmarks/runs/base .longmemeval-benchmarks/runs/try-2 --json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Sequence

from lme.core import cli_parser
from lme.report import page
from lme.store import run_store
from lme.core.errors import UserError
from lme.score.run_comparison import compare, render_markdown

def latest_two(project: Path) -> tuple[Path, Path] | None:
    """(before, after): the project's two most recently started runs, older first; None with fewer than two."""
    runs = run_store.runs_by_start(Path(project))
    return (runs[1], runs[0]) if len(runs) >= 2 else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli_parser.documented_parser(__doc__, epilog_from=1)
    parser.add_argument("before", type=Path, nargs="?", help="run (or snapshot) directory before the change")
    parser.add_argument("after", type=Path, nargs="?", help="run (or snapshot) directory after the change")
    parser.add_argument("--latest", action="store_true",
                        help="compare the project's two most recently started runs (older = before)")
    cli_parser.add_project_argument(parser, "project root for --latest (default: current dir)")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON instead of Markdown")
    parser.add_argument("--force", action="store_true",
                        help="compare even when the judge or the dataset sha256 differ (output says so)")
    parser.add_argument("--judge-comparison", action="store_true",
                        help="the runs judged the same hypotheses (e.g. run_benchmark.py --hypotheses FILE twice) "
                             "with different judges: compare the judges (label agreement, kappa, flips); refused "
                             "when any hypothesis differs")
    parser.add_argument("--html", nargs="?", const="", metavar="PATH", type=str,
                        help="also write the comparison as a page (default AFTER_DIR/compare-<before id>.html)")
    args = parser.parse_args(argv)
    if args.latest:
        if args.before is not None or args.after is not None:
            raise UserError("--latest picks both runs: give either --latest or BEFORE_DIR AFTER_DIR",
                            fix="drop the directories, or drop --latest")
        pair = latest_two(args.project)
        if pair is None:
            print("need two runs to compare")
            return 0
        args.before, args.after = pair
    elif args.before is None or args.after is None:
        raise UserError("give two run directories (BEFORE_DIR AFTER_DIR), or --latest",
                        fix="e.g. compare_runs.py --latest")
    if args.html is not None:
        html_page, default, result = page.build_compare(args.before, args.after, force=args.force,
                                                        project=args.project, judge_comparison=args.judge_comparison)
        print(f"wrote {page.write_page(Path(args.html) if args.html else default, html_page)}", file=sys.stderr)
    else:
        result = compare(args.before, args.after, force=args.force, judge_comparison=args.judge_comparison)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    else:
        print(render_markdown(result), end="")
    return 0
