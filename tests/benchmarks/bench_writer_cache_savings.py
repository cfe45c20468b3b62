"""Bench: how many writer calls memory-ref's fact cache saves on the real ``_s`` copy.

The writer runs once per session, keyed by (writer model, prompt version, session turns): the date is left out
because ``_s`` gives shared filler sessions a different date in each item. Items of ``_s`` share filler
sessions, so the number of unique contents is the number of writer calls a full run pays for. Prints total
sessions across items, unique contents (what the cache keys on), unique (date, content) pairs (what a date-keyed
cache would pay for), and the calls and share saved.

Usage (from the repo root; under a minute):
    bash tests/venv_python.sh tests/benchmarks/bench_writer_cache_savings.py
"""

from __future__ import annotations

import argparse
import os
import hashlib
import json
import lzma
import sys
from pathlib import Path
from typing import Sequence

import ijson

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DATA = Path(os.environ.get("LONGMEMEVAL_DATA_DIR", REPO.parent / "shared" / "data" / "longmemeval")) / "longmemeval_s_cleaned.499of500.json.xz"


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()


def count(path: Path, limit: int | None = None) -> dict[str, float]:
    total = items = 0
    keyed: set[str] = set()
    content_only: set[str] = set()
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rb") as fh:
        for raw in ijson.items(fh, "item"):
            if limit is not None and items >= limit:
                break
            items += 1
            for day, turns in zip(raw["haystack_dates"], raw["haystack_sessions"]):
                body = [[t["role"], t["content"]] for t in turns]
                total += 1
                keyed.add(_digest([day, body]))
                content_only.add(_digest(body))
    return {"items": items, "sessions_total": total, "unique_contents": len(content_only),
            "unique_date_content_pairs": len(keyed),
            "writer_calls_saved": total - len(content_only),
            "saved_share": round((total - len(content_only)) / total, 4) if total else 0.0}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the _s file (.json or .json.xz)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N items (default: all)")
    args = parser.parse_args(argv)
    if not args.data.exists():  # the real data is not shipped: skip, as every benchmark does without it
        print(f"skipped: no data at {args.data} (pass --data or set LONGMEMEVAL_DATA_DIR)")
        return 0
    print(json.dumps(count(args.data, args.limit), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
