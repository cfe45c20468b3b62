"""Generate the small synthetic LongMemEval-format dataset shipped with the plugin.

The sample lets a user try the whole pipeline with no network and no keys (``setup_project.py --sample``). It is
written in the exact upstream item schema: 24 items over all six question types, four abstention items (``_abs``
ids), 5-8 dated sessions per item, evidence sessions whose ids contain ``answer`` (listed in
``answer_session_ids``, turns carrying ``has_answer``), filler sessions, integer answers for counting questions, a
rubric answer for preference questions, knowledge updates with an old and a new value, and temporal questions
over day differences. All text is our own. Generation is deterministic: regenerating gives identical bytes.

Usage:
    python scripts/sample_data.py --out data/sample/longmemeval_sample.json
    python scripts/sample_data.py --check      # exit 1 if the committed file differs from what we generate
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

from lme.core import cli_parser
from lme.data.project_dataset import SAMPLE_DATASET
from lme.devtools import sample_data


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli_parser.documented_parser(__doc__, epilog_from=None)
    parser.add_argument("--out", type=Path, default=SAMPLE_DATASET,
                        help=f"where to write the JSON file (default: data/sample/{SAMPLE_DATASET.name})")
    parser.add_argument("--check", action="store_true",
                        help="do not write; exit 1 if the file at --out differs from what would be generated")
    args = parser.parse_args(argv)
    if args.check:
        expected = sample_data.render(sample_data.build_items())
        actual = args.out.read_text(encoding="utf-8") if args.out.exists() else None
        if actual != expected:
            print(f"{args.out} is out of date: run python scripts/sample_data.py --out {args.out}", file=sys.stderr)
            return 1
        print(f"{args.out} is up to date", file=sys.stderr)
        return 0
    n = sample_data.write_sample(args.out)
    print(str(args.out))
    print(f"wrote {n} items to {args.out}", file=sys.stderr)
    return 0
