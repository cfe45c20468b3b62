"""Bench: memory-ref retrieval WITHOUT models on the real ``_s`` copy (writer off, no embed, no rerank).

Ranks each item's sessions with memory-ref's index (BM25 over session user text and over single user turns, fused
by reciprocal rank) and prints recall_any@5, recall_all@5, recall_all@10 overall and per type, with upstream's
semantics (gold = ``Question.gold_session_ids()``; abstention items and items without gold skipped). Also prints
plain session-level BM25 (the floor: recall_all@10 ~ 0.90) for comparison.

Usage (from the repo root; a few minutes on 2 cores):
    /work/devvenv/bin/python tests/benchmarks/bench_memory_ref_retrieval.py
    /work/devvenv/bin/python tests/benchmarks/bench_memory_ref_retrieval.py --limit 50 --json
"""

from __future__ import annotations

import argparse
import os
import json
import lzma
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Iterator, Sequence

REPO = Path(__file__).resolve().parents[2]
for p in (REPO / "scripts", REPO / "plugins"):
    sys.path.insert(0, str(p))

import ijson  # noqa: E402

from memory_ref import index  # noqa: E402
from records import Question, session_alias  # noqa: E402
from retrieval_metrics import evaluate, should_skip  # noqa: E402

DEFAULT_DATA = Path(os.environ.get("LONGMEMEVAL_DATA_DIR", REPO.parent / "shared" / "data" / "longmemeval")) / "longmemeval_s_cleaned.499of500.json.xz"
REPORTED = ("recall_any@5", "recall_all@5", "recall_all@10")


def iter_questions(path: Path) -> Iterator[Question]:
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rb") as fh:
        for raw in ijson.items(fh, "item", use_float=True):
            yield Question.from_dict(raw)


def plain_bm25(question: Question) -> list[int]:
    texts = ["\n".join(t.content for t in s.turns if t.role == "user") for s in question.sessions]
    return [int(i) for i in index._bm25(texts, list(range(len(texts))), question.question)]


def memory_ref(question: Question) -> list[int]:
    public = question.public()
    return index.retrieve(public.question, public.sessions).ranked


def run(path: Path, limit: int | None) -> dict[str, dict[str, dict[str, float]]]:
    per_system: dict[str, dict[str, list[dict[str, float]]]] = {"memory-ref": defaultdict(list),
                                                                "plain-bm25": defaultdict(list)}
    for n, q in enumerate(iter_questions(path)):
        if limit is not None and n >= limit:
            break
        gold = q.gold_session_ids()
        if should_skip(q.question_id, gold):
            continue
        for name, ranker in (("memory-ref", memory_ref), ("plain-bm25", plain_bm25)):
            ranked_ids = [q.real_session_id(session_alias(i)) or "" for i in ranker(q)]
            scores = evaluate(ranked_ids, gold, ks=(5, 10))
            per_system[name]["overall"].append(scores)
            per_system[name][q.question_type].append(scores)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name, groups in per_system.items():
        out[name] = {}
        for group, rows in groups.items():
            out[name][group] = {"n": len(rows)} | {m: round(sum(r[m] for r in rows) / len(rows), 4) for m in REPORTED}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the _s file (.json or .json.xz)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N items (default: all)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON only")
    args = parser.parse_args(argv)
    if not args.data.exists():  # the real data is not shipped: skip, as every benchmark does without it
        print(f"skipped: no data at {args.data} (pass --data or set LONGMEMEVAL_DATA_DIR)")
        return 0
    started = time.monotonic()
    figures = run(args.data, args.limit)
    if args.json:
        print(json.dumps(figures, indent=2, sort_keys=True))
        return 0
    for name, groups in figures.items():
        print(f"== {name}")
        print(f"{'group':28} {'n':>4} " + " ".join(f"{m:>14}" for m in REPORTED))
        for group in ["overall"] + sorted(g for g in groups if g != "overall"):
            row = groups[group]
            print(f"{group:28} {row['n']:>4} " + " ".join(f"{row[m]:>14.4f}" for m in REPORTED))
    print(f"({time.monotonic() - started:.0f}s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
