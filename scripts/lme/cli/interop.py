"""Exchange files with upstream LongMemEval's evaluation scripts.

Usage:
    python scripts/interop.py export RUN_DIR OUT_HYP_FILE [--eval-results] [--reference OUT_REF]
    python scripts/interop.py import EVAL_RESULTS_FILE REF_FILE [--allow-unofficial] [--count-duplicates] [--json]

export writes the run's hypotheses in upstream's input format (one ``{"question_id", "hypothesis"}`` JSON line
each). With --eval-results it also writes ``<OUT_HYP_FILE>.eval-results-gpt-4o``: the judged lines plus
``"autoeval_label": {"model", "label"}``, byte for byte as upstream's evaluate_qa.py writes them, so upstream's
print_qa_metrics.py can score our run. --reference writes a JSON list of ``{"question_id", "question_type"}``
usable as its ref_file. import reads such an eval-results file (ours or upstream's) and scores it with
metrics.score against a dataset file or a run's manifest.json, counting every line as print_qa_metrics.py does.
A file with a question on more than one line is refused (exit 2, naming them) unless --count-duplicates.

Example:
    python scripts/interop.py export .longmemeval-benchmarks/runs/base out/base.jsonl --eval-results
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Sequence

from lme.core import cli_parser
from lme.score import metrics
from lme.score import interop


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli_parser.documented_parser(__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    exp = sub.add_parser("export", help="write upstream-format files from a run")
    exp.add_argument("run_dir", type=Path, help="run (or snapshot) directory")
    exp.add_argument("out", type=Path, help="hypotheses JSONL to write")
    exp.add_argument("--eval-results", action="store_true",
                     help=f"also write <out>{interop.EVAL_SUFFIX} with our labels")
    exp.add_argument("--reference", type=Path, help="also write a ref_file (question ids and types) here")
    imp = sub.add_parser("import", help="score an eval-results file with metrics.score")
    imp.add_argument("eval_results", type=Path, help=f"a *{interop.EVAL_SUFFIX} file")
    imp.add_argument("reference", type=Path, help="the dataset file or a run's manifest.json")
    imp.add_argument("--allow-unofficial", action="store_true", help="score a file judged by another model")
    imp.add_argument("--count-duplicates", action="store_true",
                     help="score a file with a question on several lines: every line counts, as in upstream's "
                          "print_qa_metrics.py")
    imp.add_argument("--json", action="store_true",
                     help="print the full metrics record as JSON, with eval_results: the file's lines and duplicates")
    args = parser.parse_args(argv)

    if args.command == "export":
        written = [interop.export_hypotheses(args.run_dir, args.out)]
        if args.eval_results:
            written.append(interop.export_eval_results(args.run_dir, args.out))
        if args.reference:
            written.append(interop.export_reference(args.run_dir, args.reference))
        for path in written:
            print(path)
        return 0
    results = interop.import_eval_results(args.eval_results, args.reference, allow_unofficial=args.allow_unofficial,
                                          count_duplicates=args.count_duplicates)
    if results.duplicates():
        print(f"note: {interop.duplicates_line(results)}; every line counted, as upstream's print_qa_metrics.py "
              "counts them", file=sys.stderr)
    scored = metrics.score(*results.scoring_input())
    if args.json:
        print(json.dumps({**scored.to_dict(), "eval_results": results.summary()}, indent=2))
        return 0
    for qtype, block in scored.per_type.items():
        print(f"{qtype}: {metrics.fmt(block.accuracy_judged)} ({block.judged})")
    ta, ab = scored.task_averaged, scored.abstention
    print(f"Task-averaged accuracy (judged only): {metrics.fmt(ta.accuracy_judged)}")
    print(f"Overall accuracy (judged only): {metrics.fmt(scored.overall.accuracy_judged)} "
          f"({scored.judged}); strict over {scored.n_total}: {metrics.fmt(scored.overall.accuracy_strict)}")
    print(f"Abstention accuracy (judged only): {metrics.fmt(ab.accuracy_judged)} ({ab.judged})")
    return 0
