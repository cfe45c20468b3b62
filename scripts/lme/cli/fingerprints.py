"""Recognise a LongMemEval file by its content, not its bytes: one sha256 per item, compared with the releases we
can vouch for (``references/dataset-fingerprints.json``).

An item's fingerprint is the sha256 of its canonical JSON (keys sorted, no whitespace, non-ASCII as ``\\uXXXX``),
so a copy re-serialised with another key order, spacing or item order still matches, while one edited answer,
date or turn does not. The shipped fingerprints cover only files we could check ourselves (the cleaned release's
oracle file, 500 items, and its ``_s`` file, 499 of 500 items); an item with no shipped fingerprint is reported as
unknown, never as a match.

Cost: the fingerprints are computed in the dataset's one streaming pass; on the 257 MB ``_s`` copy that pass takes
1.27x the wall time it takes without them (median of 3 paired runs with farm-bench: about 5.4 s against 4.3 s).

Usage:
    python scripts/fingerprints.py data/longmemeval_s_cleaned.json        # how the file compares, as JSON
    python scripts/fingerprints.py data/longmemeval_oracle.json --hashes  # {question_id: sha256} of the file
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Sequence

from lme.core import cli_parser
from lme.data import fingerprints


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli_parser.documented_parser(__doc__)
    parser.add_argument("path", type=Path, help="a LongMemEval file: .json, .json.xz or .json.gz")
    parser.add_argument("--hashes", action="store_true", help="print {question_id: sha256} instead of the comparison")
    args = parser.parse_args(argv)
    from lme.data import dataset

    info = dataset.scan(args.path)
    if args.hashes:
        print(json.dumps(dict(sorted(info.item_sha256.items())), indent=1))
        return 0
    rec = fingerprints.recognize_file(args.path, info.item_sha256, info.sha256)
    print(json.dumps(rec, indent=2))
    print(rec["summary"], file=sys.stderr)
    return 0
