"""Session retrieval of every retriever configuration on the real ``_s`` copy, on both halves, overall and per type.

Not a test (pytest does not collect tests/benchmarks). Run by hand (about 5 minutes on one core):
    nice -n 10 bash tests/venv_python.sh tests/benchmarks/bench_retrieval_configs.py [--data PATH] [--configs a,b] [--json]

Halves: ``scripts/lme/data/holdout.py`` (sha256(question_id) ends in an even hex digit = development half). Weights were
tuned on the development half only; the test half is reported, never tuned on.

Metrics: session level with upstream's semantics (``retrieval_metrics``): gold = ``Question.gold_session_ids()``
(answer sessions with a ``has_answer`` user turn); abstention items and items without gold are skipped (418
scored items on the ``_s`` copy). The retrievers see only the public item (aliases, no labels); their rankings are
mapped back to real ids here. ``dup`` counts rankings that list a real session id twice (the ``_s`` copy repeats a
filler session in 13 histories; a retriever must not return it twice). ``ms`` is ranking time per item,
tokenizing included (the tokenizer's word memo is cleared before each configuration).

Configurations: ``upstream flat-bm25`` (the reference line of ``bench_rag_recall.py``), the presets of
``plugins/memory_ref/index.py`` (``plain``, ``fused-v1`` = memory-ref before issue 19, ``best``), ``best`` minus
(or plus) one feature at a time, ``best`` at turn granularity, and the ``rag`` target's own ranking with default
options (it must equal ``best``). Optional, model-backed: ``--embed-model provider:model`` adds ``best+embed`` (real calls
through the gateway, cached under ``--cache-dir``); ``--facts-cache DIR --writer provider:model`` adds
``best+facts`` from a memory-ref fact cache (cached facts only, no calls). The adaptive-k line shows what the
default reader selection (``index.adaptive_k``, at most top_k 10) keeps.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Sequence

REPO = Path(__file__).resolve().parents[2]
for p in (REPO / "scripts", REPO / "plugins", REPO / "tests" / "benchmarks"):
    sys.path.insert(0, str(p))

from lme.target_kit import bm25_index  # noqa: E402
from lme.data import dataset  # noqa: E402
from lme.data.holdout import HALVES, half_of  # noqa: E402
from memory_ref import index  # noqa: E402
from lme.core.records import PublicItem, Question, TargetContext  # noqa: E402
from lme.score.retrieval_metrics import evaluate, mean_metrics, should_skip  # noqa: E402

DEFAULT_DATA = Path(os.environ.get("LONGMEMEVAL_DATA_DIR", REPO.parent / "shared" / "data" / "longmemeval")) \
    / "longmemeval_s_cleaned.499of500.json.xz"
SHOWN = ("recall_any@5", "recall_all@5", "recall_all@10", "ndcg_any@10")
HEADERS = ("R_any@5", "R_all@5", "R_all@10", "nDCG@10")
Ranker = Callable[[PublicItem], list[int]]


@dataclasses.dataclass
class Scored:
    q: Question
    public: PublicItem
    gold: tuple[str, ...]
    half: str


def load(path: Path) -> list[Scored]:
    out = []
    for raw in dataset.iter_items(path):
        q = Question.from_dict(raw)
        gold = q.gold_session_ids()
        if not should_skip(q.question_id, gold):
            out.append(Scored(q, q.public(), gold, half_of(q.question_id)))
    return out


def preset_ranker(config: index.RetrieverConfig, granularity: str = "session") -> Ranker:
    return lambda p: index.retrieve(p.question, p.sessions, question_date=p.question_date, config=config,
                                    granularity=granularity).ranked


def flat_bm25_ranker() -> Ranker:
    from bench_rag_recall import flat_bm25_ranking

    def rank(p: PublicItem) -> list[int]:
        docs = [" ".join(t.content for t in s.turns if t.role == "user") for s in p.sessions]
        return flat_bm25_ranking(docs, list(range(len(docs))), p.question)
    return rank


def rag_ranker() -> Ranker:
    spec = importlib.util.spec_from_file_location("bench_rag_target", REPO / "plugins" / "rag.py")
    rag = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rag)
    ctx = TargetContext(provider="offline", model="none", llm=None, options={})  # type: ignore[arg-type]

    def rank(p: PublicItem) -> list[int]:
        position = {s.session_id: i for i, s in enumerate(p.sessions)}
        return [position[a] for a in rag.rank_sessions(p, ctx)[0]]
    return rank


def embed_ranker(spec: str, cache_dir: str) -> Ranker:
    from lme.models import providers
    from memory_ref import embed_cache

    gateway = providers.Gateway()

    def embed(texts: list[str]) -> list[list[float]]:
        return embed_cache.cached_embed(gateway, spec, texts, cache_dir)[0]
    return lambda p: index.retrieve(p.question, p.sessions, question_date=p.question_date, embed=embed).ranked


def facts_ranker(cache_dir: str, writer_spec: str) -> tuple[Ranker, dict[str, int]]:
    from memory_ref import writer
    from memory_ref.facts import with_session
    from memory_ref.stack import parse_role

    role = parse_role("writer", writer_spec)
    cache = writer.FactCache(cache_dir)
    seen = {"sessions": 0, "cached": 0}

    def rank(p: PublicItem) -> list[int]:
        facts = []
        for s in p.sessions:
            seen["sessions"] += 1
            cached = cache.get(writer.session_key(role, s))
            if cached is not None:
                seen["cached"] += 1
                facts += [with_session(d, s.session_id, s.date) for d in cached]
        return index.retrieve(p.question, p.sessions, facts, question_date=p.question_date).ranked
    return rank, seen


def configurations(args: argparse.Namespace) -> dict[str, Ranker]:
    best = index.BEST
    out: dict[str, Ranker] = {"upstream flat-bm25": flat_bm25_ranker()}
    for name in ("plain", "fused-v1", "best"):
        out[name] = preset_ranker(index.PRESETS[name])
    ablations = {"-rewrite": {"rewrite": False}, "+turns 0.3": {"turn_weight": 0.3}, "-age cue": {"cue_weight": 0.0},
                 "-assistant": {"assistant_weight": 0.0}, "-feedback": {"feedback_docs": 0},
                 "-time": {"time_weight": 0.0}, "-dedup": {"dedup": False}, "rrf fusion": {"fusion": "rrf"}}
    for label, change in ablations.items():
        out[f"best {label}"] = preset_ranker(dataclasses.replace(best, name=f"best {label}", **change))
    out["best, turn granularity"] = preset_ranker(best, "turn")
    out["rag target (defaults)"] = rag_ranker()
    if args.embed_model:
        out["best+embed"] = embed_ranker(args.embed_model, args.cache_dir)
    if args.facts_cache:
        out["best+facts"] = facts_ranker(args.facts_cache, args.writer)[0]
    if args.configs:
        wanted = [c.strip() for c in args.configs.split(",")]
        out = {k: v for k, v in out.items() if k in wanted}
    return out


def run_config(ranker: Ranker, items: Sequence[Scored]) -> dict[str, Any]:
    bm25_index.forget_words()
    rows: dict[tuple[str, str], list[dict[str, float]]] = defaultdict(list)
    seconds = {h: 0.0 for h in HALVES}
    dups = {h: 0 for h in HALVES}
    for it in items:
        started = time.perf_counter()
        ranked = ranker(it.public)
        seconds[it.half] += time.perf_counter() - started
        real = [it.q.sessions[i].session_id for i in ranked]
        dups[it.half] += len(real) != len(set(real))
        scores = evaluate(real, it.gold, ks=(5, 10))
        rows[(it.half, "ALL")].append(scores)
        rows[(it.half, it.q.question_type)].append(scores)
    out: dict[str, Any] = {}
    for (half, group), group_rows in rows.items():
        means = mean_metrics(group_rows)
        out.setdefault(half, {})[group] = {"n": len(group_rows)} | {k: round(means[k], 4) for k in SHOWN}
    for half in out:
        n = out[half]["ALL"]["n"]
        out[half]["ALL"] |= {"ms": round(1000 * seconds[half] / max(n, 1), 1), "dup": dups[half]}
    return out


def adaptive_line(items: Sequence[Scored], top_k: int = 10) -> dict[str, dict[str, float]]:
    """What the default reader selection keeps: mean k, recall_any@k, recall_all@k, per half."""
    acc: dict[str, list[tuple[int, float, float]]] = defaultdict(list)
    for it in items:
        p = it.public
        result = index.retrieve(p.question, p.sessions, question_date=p.question_date)
        k = index.adaptive_k(result.scores, top_k, aggregates=result.query.aggregates)
        real = [it.q.sessions[i].session_id for i in result.ranked]
        m = evaluate(real, it.gold, ks=(k,))
        acc[it.half].append((k, m[f"recall_any@{k}"], m[f"recall_all@{k}"]))
    return {h: {"mean_k": round(sum(r[0] for r in v) / len(v), 2), "recall_any@k": round(sum(r[1] for r in v) /
                len(v), 4), "recall_all@k": round(sum(r[2] for r in v) / len(v), 4)} for h, v in acc.items()}


def print_tables(figures: dict[str, dict[str, Any]]) -> None:
    width = max(len(name) for name in figures) + 2
    head = " ".join(f"{h:>9}" for h in HEADERS)
    for half in HALVES:
        label = "development half (tuned on)" if half == "dev" else "held-out test half (never tuned on)"
        n = next(iter(figures.values()))[half]["ALL"]["n"]
        print(f"\n== {label}: {n} items, all types")
        print(f"{'configuration':{width}} {head} {'ms/item':>8} {'dup':>4}")
        for name, fig in figures.items():
            row = fig[half]["ALL"]
            print(f"{name:{width}} " + " ".join(f"{row[k]:9.3f}" for k in SHOWN) + f" {row['ms']:8.1f} {row['dup']:4d}")
    for half in HALVES:
        print(f"\n== per question type, {'development' if half == 'dev' else 'held-out test'} half")
        types = sorted(t for t in next(iter(figures.values()))[half] if t != "ALL")
        for qtype in types:
            n = next(iter(figures.values()))[half][qtype]["n"]
            print(f"-- {qtype} ({n} items)")
            for name, fig in figures.items():
                row = fig[half][qtype]
                print(f"   {name:{width}}" + " ".join(f"{row[k]:9.3f}" for k in SHOWN))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the _s file (.json or .json.xz)")
    parser.add_argument("--configs", help="comma-separated configuration names to run (default: all)")
    parser.add_argument("--embed-model", help="provider:model: add best+embed (makes real embedding calls)")
    parser.add_argument("--cache-dir", default=str(REPO / ".longmemeval-benchmarks" / "cache"),
                        help="embedding cache directory for --embed-model")
    parser.add_argument("--facts-cache", help="a memory-ref fact cache directory: add best+facts (no calls)")
    parser.add_argument("--writer", default="openai:gpt-4o-mini", help="the writer whose cached facts to use")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON only")
    args = parser.parse_args(argv)
    if not args.data.exists():  # the real data is not shipped: skip, as every benchmark does without it
        print(f"skipped: no data at {args.data} (pass --data or set LONGMEMEVAL_DATA_DIR)")
        return 0
    started = time.monotonic()
    items = load(args.data)
    figures = {name: run_config(ranker, items) for name, ranker in configurations(args).items()}
    adaptive = adaptive_line(items)
    if args.json:
        print(json.dumps({"configs": figures, "adaptive_k": adaptive}, indent=2, sort_keys=True))
        return 0
    counts = {h: sum(1 for it in items if it.half == h) for h in HALVES}
    print(f"{len(items)} scored items ({counts['dev']} development, {counts['test']} held-out test); "
          "session-level metrics, upstream semantics")
    print_tables(figures)
    print(f"\n== adaptive k of the default reader selection (best; min_k {index.ADAPTIVE_MIN_K}, drop "
          f"{index.ADAPTIVE_DROP}, top_k 10 for questions that count, order or compare)")
    for half, row in adaptive.items():
        print(f"   {half:5} mean k {row['mean_k']:5.2f}  recall_any@k {row['recall_any@k']:.3f}  "
              f"recall_all@k {row['recall_all@k']:.3f}")
    print(f"({time.monotonic() - started:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
