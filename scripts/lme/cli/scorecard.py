"""Score a run: metrics.json, scorecard.md and charts (SVG; PNG with --png) in the run directory; the Markdown
table on stdout.

Usage:
    python scripts/scorecard.py RUN_DIR N_TOTAL VARIANT RUN_ID
    python scripts/scorecard.py --run-id RUN_ID [--project P] [--format md|json] [--no-charts] [--history FILE]
    python scripts/scorecard.py --latest [--project P]
    python scripts/scorecard.py --latest RUN_ID                        # a bare run id: that run (the report command)
    python scripts/scorecard.py --print-latest-id [--project P]
    python scripts/scorecard.py --run-id RUN_ID --compare OTHER_RUN     # also compare-<OTHER>.html (OTHER = before)

Every accuracy is given twice: strict (denominator = all N_TOTAL items; errors and items not run count as wrong)
and judged-only (denominator = judged items). A banner says exactly why a run is not comparable with published
LongMemEval figures (judge, dataset items, top_k covering every session, incomplete run, errors). A second figure
leaves out items whose gold was reported wrong upstream (references/known-gold-errors.json, status ``wrong``); it
never replaces the official one. Unstable judge labels (judge_stability) and a successor judge's measured agreement
are shown when there are any.
Works on completed, interrupted, failed and still-running runs (it only reads the run's files). Every scoring also
writes report.html, a self-contained page with the figures, charts and a drill-down per question
(``report_html``; open it in a browser). A run scored before and unchanged since (``score_fingerprint``: its files,
dataset, project state, the scoring code) is not scored again: its outputs are reused and printed, unless one of
them was made from other inputs (a kill between two writes): then it is scored again.

Example:
    python scripts/scorecard.py --run-id baseline --format json
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

from lme.core import cli_parser
from lme.core import fileio
from lme.core import unattended
from lme.report import outputs
from lme.store import run_store
from lme.core.errors import UserError
from lme.data import dataset


def refuse_contradictions(run_dir: Path, variant: str, run_id: str) -> None:
    """The four-argument form restates what the run's own files say: another id or variant (a pasted command of
    another run) is refused before anything is rewritten, not scored under the wrong name. N_TOTAL may differ on
    purpose (a denominator other than the manifest's, which the scorecard names)."""

    meta = run_store.peek_meta(run_dir) or {}
    hint = f"pass what the run says, or score it with --run-id {meta.get('runId') or run_dir.name}"
    if meta.get("runId") and str(meta["runId"]) != run_id:
        raise UserError(f"RUN_ID {run_id!r} contradicts {run_dir}: its run-meta says run {meta['runId']!r}", fix=hint)
    stored_variant = meta.get("variant")
    if stored_variant and dataset.resolve_variant(variant) != dataset.resolve_variant(str(stored_variant)):
        raise UserError(f"VARIANT {variant} contradicts {run_dir}: the run is a {stored_variant} run", fix=hint)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.print_latest_id:
        latest = run_store.latest_run(args.project, required=False)
        if latest is not None:
            print(latest.name)
        return 0
    run_dir, n_total, variant, run_id = _run_to_score(args)
    if n_total is not None and n_total <= 0:
        raise UserError(f"N_TOTAL must be positive, got {n_total}", fix="pass the number of items, e.g. 500")

    runs_folder = (run_dir.parent,) if run_id is None else ()  # not the four-argument form's: any folder it names
    fileio.clean_leftovers(args.project, *runs_folder)  # killed writes' temps
    return outputs.score_run(run_dir, args.project, outputs.ScoreOptions(
        n_total=n_total, variant=variant, run_id=run_id, fmt=args.format, charts=not args.no_charts,
        html=not args.no_html, history=args.history, compare=args.compare, force=args.force, rescore=args.rescore,
        png=args.png and not args.no_charts))


def _parser() -> cli_parser.ArgumentParser:
    parser = cli_parser.documented_parser(__doc__)
    parser.add_argument("positional", nargs="*", metavar="RUN_DIR N_TOTAL VARIANT RUN_ID",
                        help="the four-argument form: run directory, strict denominator, variant, run id")
    parser.add_argument("--run-id", help="score .longmemeval-benchmarks/runs/<RUN_ID> of the project")
    parser.add_argument("--latest", action="store_true",
                        help="score the most recently started run; --latest RUN_ID (one bare word after it, as the "
                             "report command passes the user's words) scores RUN_ID")
    parser.add_argument("--print-latest-id", action="store_true",
                        help="only print the id of the most recent run (nothing when there is none) and exit")
    cli_parser.add_project_argument(parser, "project root (default: current dir)")
    parser.add_argument("--n-total", type=int, help="strict denominator (default: the manifest's n_total)")
    parser.add_argument("--format", choices=("md", "json"), default="md",
                        help="what stdout carries: the Markdown scorecard (default) or metrics.json")
    parser.add_argument("--no-charts", action="store_true", help="skip the chart files (charts/*.svg)")
    parser.add_argument("--png", action="store_true",
                        help="also draw the charts as PNG files (matplotlib: about a second more)")
    parser.add_argument("--history", type=Path, help="loop history (history_max_effort.md or JSONL): adds a "
                                                     "chart of accuracy over rounds")
    parser.add_argument("--no-html", action="store_true", help="skip report.html")
    parser.add_argument("--compare", metavar="OTHER_RUN",
                        help="also write compare-<OTHER>.html: OTHER_RUN (a run id or directory) before, this run after")
    parser.add_argument("--force", action="store_true",
                        help="with --compare: compare even when the judge or the dataset sha256 differ (page says so)")
    parser.add_argument("--rescore", action="store_true",
                        help="score even when nothing scoring reads changed since the last scoring (default: reuse)")
    return parser


def _run_to_score(args: argparse.Namespace) -> tuple[Path, int | None, str | None, str | None]:
    """(run directory, N_TOTAL, VARIANT, RUN_ID) from the four-argument form, ``--run-id``, or ``--latest``; the
    last three are None unless the four-argument form gave them (``--n-total`` aside)."""
    variant = run_id = None
    n_total = args.n_total
    if args.latest and not args.run_id and len(args.positional) == 1:  # the report command: --latest $ARGUMENTS
        args.run_id, args.positional = args.positional[0], []
    if args.positional:
        if len(args.positional) != 4 or args.run_id or args.latest:
            raise UserError(f"expected RUN_DIR N_TOTAL VARIANT RUN_ID (4 arguments), got {args.positional}",
                            fix="or use --run-id RUN_ID / --latest")
        raw_dir, raw_n, variant, run_id = args.positional
        try:
            n_total = int(raw_n)
        except ValueError:
            raise UserError(f"N_TOTAL must be a whole number, got {raw_n!r}", fix="e.g. 500") from None
        run_dir = Path(raw_dir)
        why = unattended.loop_session()
        if why is not None:  # the scorecard's files are written into RUN_DIR
            unattended.refuse_outside(run_dir, "RUN_DIR", why)
        refuse_contradictions(run_dir, variant, run_id)
    elif args.run_id:
        run_dir = outputs.project_run_dir(args.project, args.run_id)
    elif args.latest:
        run_dir = run_store.latest_run(args.project)
        assert run_dir is not None
    else:
        raise UserError("no run given", fix="pass --run-id RUN_ID, --latest, or RUN_DIR N_TOTAL VARIANT RUN_ID")
    return run_dir, n_total, variant, run_id
