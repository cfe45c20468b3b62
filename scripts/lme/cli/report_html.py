"""report.html: one self-contained page per run (no network; inline CSS, JS and SVG; data as embedded JSON).

Usage:
    python scripts/report_html.py RUN_DIR [--project P] [--max-text-mb 24] [--history FILE]
    python scripts/report_html.py RUN_DIR --prompt QUESTION_ID       # print the exact prompt(s) of one item

``scorecard.py`` writes ``report.html`` for every run it scores (and ``--compare OTHER`` a diff page, see
``compare_page``); this CLI rebuilds one, with another text budget, or prints a prompt the page left out.

The table's data is plain JSON, parsed at load; the page's bulk (session turns, prompt lines) is one
zlib-compressed, base64 blob after the page's code, which the browser unpacks once the page is idle.

What the page shows: the scorecard's own figures (the card ``scoring.build_scorecard`` computed, formatted by
the scorecard's helpers: nothing is recomputed), charts, a filterable table of every question, and a drill-down
per question: question and date, gold answer, hypothesis, judge reply and prompt sha, the target's debug, the
sessions (evidence marked) with their text, and the exact prompts the target sent.

The data (one record per question, the texts within ``--max-text-mb``, what was left out and why) is
``report_data``'s; a full-context ``_s`` run sends ~200 MB of distinct session text, far more than a page should
carry, so what is left out says so and names the ``--prompt`` command that prints it.

Example:
    python scripts/report_html.py .longmemeval-benchmarks/runs/baseline --max-text-mb 64
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

from lme.core import cli_parser
from lme.store import prompt_store
from lme.score import scoring, scoring_inputs
from lme.core.errors import UserError
from lme.report.page_data import DEFAULT_MAX_TEXT_MB, prompt_keys
from lme.store.run_store import RunData, load_run
from lme.report import page


def print_prompts(run: RunData, question_id: str) -> int:
    row = run.rows.get(question_id)
    if row is None:
        raise UserError(f"run {run.run_id} has no row for question {question_id!r}", fix="check the id in report.html")
    keys = prompt_keys(row)
    if not keys:
        print(f"question {question_id}: the run stored no prompt (the target made no model call, or the run "
              "predates prompts.jsonl)", file=sys.stderr)
        return 0
    store = prompt_store.load(run.path)
    for i, key in enumerate(keys, 1):
        if key not in store.prompts:
            print(f"# request {i}/{len(keys)} {key}: not in prompts.jsonl", file=sys.stderr)
            continue
        request = store.request_text(key)
        print(f"# request {i}/{len(keys)} {request['provider']}:{request['model']} max_tokens={request['max_tokens']} "
              f"key={key}", file=sys.stderr)
        if request["system"] is not None:
            print(f"## system\n{request['system']}")
        for m in request["messages"]:
            print(f"## {m['role']}\n{m['content']}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli_parser.documented_parser(__doc__, epilog_from=1)
    parser.add_argument("run_dir", type=Path, help="a run directory (.longmemeval-benchmarks/runs/<id>)")
    cli_parser.add_project_argument(parser, "project root (for the judge-stability registry)", default=None)
    parser.add_argument("--prompt", metavar="QUESTION_ID", help="print the exact prompt(s) of one question and exit")
    parser.add_argument("--max-text-mb", type=cli_parser.finite_float, default=DEFAULT_MAX_TEXT_MB,
                        help=f"text beyond the evidence sessions embedded in the page (default {DEFAULT_MAX_TEXT_MB:g})")
    parser.add_argument("--history", type=Path, help="loop history (history_max_effort.md): adds accuracy over rounds")
    args = parser.parse_args(argv)
    run = load_run(args.run_dir)
    if args.prompt:
        return print_prompts(run, args.prompt)
    if args.max_text_mb < 0:
        raise UserError(f"--max-text-mb must be >= 0, got {args.max_text_mb:g}", fix="e.g. --max-text-mb 24")
    card = scoring.build_scorecard(run, inputs=scoring_inputs.for_run(run.path, args.project))
    history = page.loop_history(run, args.project, args.history)
    path = page.write_report(run.path, page.build_report(run, card, project=args.project, history=history,
                                                         max_text_mb=args.max_text_mb))
    print(path)
    return 0
