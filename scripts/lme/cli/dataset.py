"""Stream and validate a LongMemEval file (plain, ``.xz`` or ``.gz``), hashing it in the same pass.

The ``_m`` file is about 2.75 GB, so nothing here reads a whole file: ``ijson`` parses a reader that feeds sha256
as it goes, and ``bounded_json.items`` builds one item at a time from its events, within bounds (nesting depth,
string sizes, Unicode text: a nesting bomb is refused in one line naming the item, at a few lists' cost). Each item
is checked against ``references/schemas/item.schema.json``.

Usage:
    python scripts/dataset.py data/longmemeval_s_cleaned.json          # prints the file's scan as JSON
    python scripts/dataset.py data/longmemeval_oracle.json.xz --ids 001be529,e47becba
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from lme.core import cli_parser
from lme.data import dataset


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli_parser.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", type=Path, help="a LongMemEval file: .json, .json.xz or .json.gz")
    parser.add_argument("--ids", default=None, help="comma-separated question ids that must be present")
    parser.add_argument("--limit", type=int, default=None, help="count only the first N (selected) items")
    args = parser.parse_args(argv)
    ids = [i for i in args.ids.split(",") if i] if args.ids else None
    questions, info = dataset.load_questions(args.path, limit=args.limit, ids=ids)
    out = info.to_dict()
    out["selected"] = len(questions)
    print(json.dumps(out, indent=2))
    official = info.official_name
    print(
        f"{info.items} items, sha256 {info.sha256[:12]}..., "
        + (f"the official {official}" if official else "not a known official file"),
        file=sys.stderr,
    )
    if info.duplicate_sessions:
        print(f"{len(info.duplicate_sessions)} item(s) list a haystack session twice (upstream issue #54; kept as "
              f"given): {', '.join(sorted(info.duplicate_sessions))}", file=sys.stderr)
    return 0
