"""Validate the run-state records against ``references/schemas/<name>.schema.json`` (JSON Schema 2020-12).

Every file the toolkit writes or reads under ``.longmemeval-benchmarks/`` has a schema there; ``references/SPEC.md``
describes them in prose. A violation becomes one ``SchemaError`` line: where, which field, what was wrong.

Usage (check a file by hand):
    python scripts/schemas.py config .longmemeval-benchmarks/config.json
    python scripts/schemas.py item-result .longmemeval-benchmarks/runs/<id>/item-results.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from lme.core import cli_parser
from lme.core.errors import UserError
from lme.core import schemas


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli_parser.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("schema", help=f"schema name, one of: {', '.join(schemas.schema_names())}")
    parser.add_argument("file", type=Path, help="a .json file (one record) or .jsonl file (one record per line)")
    args = parser.parse_args(argv)
    if not args.file.is_file():
        raise UserError(f"{args.file}: no such file")
    text = args.file.read_text(encoding="utf-8")
    if args.file.suffix == ".jsonl":
        records = [
            (f"{args.file}:{n}", line) for n, line in enumerate(text.splitlines(), 1) if line.strip()
        ]
    else:
        records = [(str(args.file), text)]
    for where, blob in records:
        try:
            obj = json.loads(blob)
        except json.JSONDecodeError as e:
            raise UserError(f"{where}: not valid JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
        schemas.validate(args.schema, obj, where=where)
    print(f"ok: {len(records)} {args.schema} record(s) in {args.file}", file=sys.stderr)
    return 0
