"""Session recall of the rag target's BM25 retrieval on the real `_s` copy, overall and per question type.

Not a test (pytest does not collect tests/benchmarks). Run by hand:
    python tests/benchmarks/bench_rag_recall.py [PATH] [--granularity session|turn] [--limit N]

Retrieval is exactly the rag target's (``plugins/rag.py``: BM25 over USER turns, query = the question, through
``bm25_index``), run on the public item (aliases), mapped back to real ids, scored with ``retrieval_metrics``
over every non-abstention item that has gold. Reference (protocol.md, plain BM25, 418 items): recall_any@5 0.94,
recall_all@5 0.82, recall_all@10 0.90.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

import dataset  # noqa: E402
from records import Question  # noqa: E402
from retrieval_metrics import evaluate, mean_metrics, should_skip  # noqa: E402

DEFAULT = REPO.parent / "shared" / "data" / "longmemeval" / "longmemeval_s_cleaned.499of500.json.xz"
SHOWN = ("recall_any@5", "recall_all@5", "recall_all@10", "ndcg_any@10")


def load_rag():
    spec = importlib.util.spec_from_file_location("bench_rag_target", REPO / "plugins" / "rag.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT, help="dataset file (default: the shared _s copy)")
    parser.add_argument("--granularity", choices=("session", "turn"), default="session",
                        help="BM25 documents: one per session (user turns joined) or one per user turn")
    parser.add_argument("--limit", type=int, default=None, help="stop after this many scored items")
    args = parser.parse_args(argv)
    if not args.path.exists():
        print(f"skipped: {args.path} not present", file=sys.stderr)
        return 0
    rag = load_rag()
    per_type: dict[str, list[dict[str, float]]] = defaultdict(list)
    skipped = 0
    rank_seconds = 0.0
    t_all = time.perf_counter()
    for raw in dataset.iter_items(args.path):
        q = Question.from_dict(raw)
        gold = q.gold_session_ids()
        if should_skip(q.question_id, gold):
            skipped += 1
            continue
        public = q.public()
        t0 = time.perf_counter()
        aliases = rag.bm25_ranking(public, public.question, args.granularity)
        rank_seconds += time.perf_counter() - t0
        ranked = [q.real_session_id(a) for a in aliases]
        per_type[q.question_type].append(evaluate(ranked, gold))
        if args.limit and sum(len(v) for v in per_type.values()) >= args.limit:
            break
    total = time.perf_counter() - t_all
    scored = sum(len(v) for v in per_type.values())
    overall = mean_metrics(row for rows in per_type.values() for row in rows)
    print(f"BM25 {args.granularity} granularity, user turns, query = question: {scored} items scored, "
          f"{skipped} skipped (abstention or no gold)")
    print(f"{'type':28s} {'n':>4s} " + " ".join(f"{k:>14s}" for k in SHOWN))
    for qtype in sorted(per_type):
        means = mean_metrics(per_type[qtype])
        print(f"{qtype:28s} {len(per_type[qtype]):4d} " + " ".join(f"{means[k]:14.3f}" for k in SHOWN))
    print(f"{'ALL':28s} {scored:4d} " + " ".join(f"{overall[k]:14.3f}" for k in SHOWN))
    print(f"ranking time per item: {1000 * rank_seconds / max(scored, 1):.1f} ms "
          f"(index + query); wall time incl. reading the file: {total:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
