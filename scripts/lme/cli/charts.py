"""PNG charts for a scorecard: per-type accuracy with Wilson intervals, and accuracy over loop rounds.

Usage (library): ``per_type_chart(card, out_png)``; ``history_chart(load_history(path), out_png)``.
CLI: python scripts/charts.py METRICS_JSON OUT_DIR [--history FILE]

Scoring writes SVG charts (``report_svg``) and calls this module only for PNGs asked for (``scorecard.py --png``):
matplotlib costs about a second to import and draw. It is used through its object API (a ``Figure`` saved by the
Agg canvas: no pyplot, no display). Files are written to a temp name and renamed, so a reader never sees half a PNG.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from lme.core import cli_parser
from lme.core.errors import UserError
from lme.store.run_layout import HISTORY_CHART, PER_TYPE_CHART


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli_parser.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("metrics_json", type=Path, help="a run's metrics.json (written by scorecard.py)")
    parser.add_argument("out_dir", type=Path, help="directory for the PNG files")
    parser.add_argument("--history", type=Path, help="loop history (.md table or JSONL) for accuracy over rounds")
    args = parser.parse_args(argv)
    from lme.report import charts  # after parsing: --help and usage errors need no chart code
    if not args.metrics_json.exists():
        raise UserError(f"{args.metrics_json} does not exist", fix="run scorecard.py for the run first")
    card = charts.load_card(args.metrics_json)
    print(charts.per_type_chart(card, args.out_dir / PER_TYPE_CHART))
    if args.history:
        print(charts.history_chart(charts.load_history(args.history), args.out_dir / HISTORY_CHART))
    return 0
