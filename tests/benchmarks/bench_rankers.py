"""Benchmark the rankers of rag and memory-ref (their shared BM25 retrieval) on the real ``_s`` copy: memory, the
tokenizer memo's hit rate, CPU per item, before (another revision's code, default ``main``) and after (this
checkout) side by side, and the ``bm25s`` library in our index's place. Prints figures with their goals.

    bash tests/venv_python.sh tests/benchmarks/bench_rankers.py [--items 120] [--m-items 12] [--before main]
        [--driver rag,memory-ref] [--driver-items 499] [--driver-m-items 40]

1. Per item, each tree in its own subprocess on the same items: memory-ref's retrieval with the ``best`` preset
   (``rag``'s default ranking is the same code): CPU ms per item, RSS growth per item, and what a per-text memo
   hits (the share of texts tokenized that were tokenized before; the before tree's memo reports its own). Then the
   rankers' RSS extrapolated to a full ``_s`` run (499 items) and to an ``_m``-size run (500 items of ~500
   sessions; measured on items made by joining the haystacks of 10 ``_s`` items): what they hold after the items
   measured, plus the rest at the pace of the second half (a bounded memo stops growing). Goals: < 500 MB and
   < 1 GB.
   Rankings: after's must equal before's, item by item (they are compared here).
2. bm25s, when it can be imported (``pip install bm25s scipy``; it is not one of our requirements): the same
   retrieval with every BM25 index built by bm25s (its sparse score matrix, float64, fed our tokens so the words
   are the same; a weighted query is the sum of its terms' score rows): CPU per item, its import time, and how many
   rankings differ from ours.
3. Real runs of ``run_benchmark.py --target T`` (``--driver``, default rag and memory-ref) on ``--driver-items``
   ``_s`` items, and a rag run on ``--driver-m-items`` ``_m``-size items, against the fake server
   (tests/fake_llm_server.py, latency 0, real SDKs): peak RSS of the whole run (scorecard included) per tree;
   goals < 500 MB (``_s``) and < 1 GB (``_m``-size). The slow part: minutes per run on 2 cores.

Needs ../shared/data/longmemeval/longmemeval_s_cleaned.499of500.json.xz (or LONGMEMEVAL_DATA_DIR); says "skipped"
without it.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path[:0] = [str(HERE)]

from _trees import headline, python_env, trees as find_trees  # noqa: E402

DATA_DIR = Path(os.environ.get("LONGMEMEVAL_DATA_DIR", REPO.parent / "shared" / "data" / "longmemeval"))
S_FILE = DATA_DIR / "longmemeval_s_cleaned.499of500.json.xz"
S_ITEMS, M_ITEMS = 499, 500
RSS_GOAL_S_MB, RSS_GOAL_M_MB = 500, 1000


# --------------------------------------------------------------------------- the worker (one tree, one process)


def _rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class Bm25sIndex:
    """Our ``BM25Index``'s interface over a bm25s index (Lucene BM25 like ours: its scores are ours x (k1 + 1))."""

    def __init__(self, texts: Any, ids: Any = None, *, k1: float = 1.5, b: float = 0.75) -> None:
        import bm25s
        from lme.target_kit import bm25_index

        self.ids = list(ids) if ids is not None else list(range(len(texts)))
        self.docs = [bm25_index._tokens(t) if isinstance(t, str) else tuple(t) for t in texts]
        self._model = bm25s.BM25(k1=k1, b=b, method="lucene", dtype="float64")
        self._model.index([list(d) or [""] for d in self.docs], show_progress=False)
        self._df: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.ids)

    def idf(self, token: str) -> float:
        import math

        df = self._df.get(token)
        if df is None:
            df = self._df[token] = sum(1 for d in self.docs if token in d)
        return math.log(1 + (len(self.docs) - df + 0.5) / (df + 0.5))

    def scores(self, query: Any) -> list[float]:
        import numpy as np
        from lme.target_kit import bm25_index

        weights = bm25_index.query_weights(bm25_index._tokens(query)) if isinstance(query, str) else query
        out = np.zeros(len(self.docs))
        vocab = self._model.vocab_dict
        for token, weight in weights.items():
            if weight and token in vocab and token:
                out += weight * self._model.get_scores_from_ids([vocab[token]])
        return out.tolist()


def worker(tree: Path, items_path: Path, use_bm25s: bool) -> dict[str, Any]:
    sys.path[:0] = [str(tree / "scripts"), str(tree / "plugins")]
    t0 = time.process_time()
    if use_bm25s:
        import bm25s  # noqa: F401
    import_s = time.process_time() - t0
    from lme.core.records import Question
    from lme.target_kit import bm25_index
    from memory_ref import index

    if use_bm25s:
        index.BM25Index = Bm25sIndex
    seen: set[int] = set()
    calls = repeats = 0
    real_tokens = bm25_index._tokens

    def counted(text: str) -> Any:
        nonlocal calls, repeats
        calls += 1
        key = hash(text)
        repeats += key in seen
        seen.add(key)
        return real_tokens(text)

    items = json.loads(items_path.read_text())
    publics = [Question.from_dict(raw).public() for raw in items]
    ids = [raw["question_id"] for raw in items]
    del items
    counting = not hasattr(real_tokens, "cache_info")  # the before tree's lru_cache counts itself
    if counting:
        bm25_index._tokens = counted
    rss0 = _rss_mib()
    cpu = 0.0
    rankings = {}
    rss = []
    for qid, p in zip(ids, publics):
        t = time.process_time()
        result = index.retrieve(p.question, p.sessions, question_date=p.question_date)
        cpu += time.process_time() - t
        rankings[qid] = result.ranked
        rss.append(_rss_mib())
    grown = rss[-1] - rss0
    half = len(rss) // 2
    late = (rss[-1] - rss[half - 1]) / (len(rss) - half) if half else grown  # MiB per item, second half
    if counting:
        hit = repeats / calls if calls else 0.0
    else:
        info = real_tokens.cache_info()
        hit = info.hits / (info.hits + info.misses) if info.hits + info.misses else 0.0
    return {"cpu_ms": cpu / len(ids) * 1000, "rss_per_item": grown / len(ids), "rss_grown": grown, "late": late,
            "text_memo_hits": hit, "import_s": import_s, "rankings": rankings}


# --------------------------------------------------------------------------- the parent


def _run_worker(tree: Path, items_path: Path, env: dict[str, str], *, use_bm25s: bool = False) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, "--worker", str(tree), "--items-file", str(items_path),
                          *(["--bm25s"] if use_bm25s else [])], env=env, capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"worker for {tree} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.splitlines()[-1])


def _m_size_items(items: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """``n`` items of ~500 sessions: each keeps its question and takes the haystacks of the next 9 items too."""
    out = []
    for i in range(n):
        group = [items[(i * 10 + j) % len(items)] for j in range(10)]
        first = dict(group[0])
        for key in ("haystack_session_ids", "haystack_dates", "haystack_sessions"):
            first[key] = [v for it in group for v in it[key]]
        first["haystack_session_ids"] = [f"{sid}~{k}" for k, sid in enumerate(first["haystack_session_ids"])]
        out.append(first)
    return out


def _bm25s_importable(env: dict[str, str]) -> bool:
    return subprocess.run([sys.executable, "-c", "import bm25s, scipy"], env=env, capture_output=True).returncode == 0


def _driver_runs(trees: dict[str, Path], runs: list[tuple[str, str, Path, int]], tmp: Path,
                 env: dict[str, str]) -> None:
    """``runs``: (target, size label, dataset file, items) per real run, each with every tree."""
    sys.path[:0] = [str(REPO / "scripts"), str(REPO / "tests")]
    from fake_llm_server import FakeLLMServer
    from run_project import make_project

    with FakeLLMServer(log_bodies=False) as server:
        run_env = dict(env, OPENAI_BASE_URL=server.openai_base_url, ANTHROPIC_BASE_URL=server.anthropic_base_url,
                       OPENAI_API_KEY="sk-bench-dummy", ANTHROPIC_API_KEY="sk-bench-dummy")
        for target, size, data, n in runs:
            goal = RSS_GOAL_M_MB if size == "_m-size" else RSS_GOAL_S_MB
            for label, tree in trees.items():
                project = make_project(tmp / f"driver-{target}-{size}-{label}", dataset=data, variant="_s",
                                       target=target, concurrency=8, cacheEnabled=False, maxAttempts=3)
                t0 = time.monotonic()
                done = subprocess.run([sys.executable, str(HERE / "_peak_rss.py"), str(tree / "scripts" /
                                       "run_benchmark.py"), "--project", str(project), "--progress", "quiet", "--yes"],
                                      env=run_env, capture_output=True, text=True)
                peak = max((float(x.split("=")[1]) for x in done.stderr.splitlines()
                            if x.startswith("peak_rss_mib=")), default=0.0)
                print(f"  driver {target:<11} {label:<6} {n} {size} items: peak RSS {peak:6.0f} MiB (goal < {goal} MB), "
                      f"{time.monotonic() - t0:5.0f} s, exit {done.returncode}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=120, help="_s items ranked per tree (default 120)")
    parser.add_argument("--m-items", type=int, default=12, help="_m-size items ranked per tree (default 12)")
    parser.add_argument("--before", default="main", help="the revision to compare with (default main; '' for none)")
    parser.add_argument("--driver", default="rag,memory-ref",
                        help="targets for real runs on _s items (default rag,memory-ref; '' for none)")
    parser.add_argument("--driver-items", type=int, default=S_ITEMS, help="_s items per driver run (default all)")
    parser.add_argument("--driver-m-items", type=int, default=40,
                        help="_m-size items of a real rag run (default 40; 0 for none)")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--items-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--bm25s", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.items_file, args.bm25s)))
        return 0
    if not S_FILE.exists():
        print(f"skipped: {S_FILE} not found")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        env = python_env(tmp / "pycache")
        items = json.loads(lzma.open(S_FILE).read())
        s_path, m_path = tmp / "s.json", tmp / "m.json"
        s_path.write_text(json.dumps(items[: args.items]))
        m_path.write_text(json.dumps(_m_size_items(items, args.m_items)))
        sessions = sum(len(it["haystack_sessions"]) for it in items[: args.items]) / args.items
        del items
        trees = find_trees(args.before, tmp)
        print(f"# rankers (memory-ref's retrieval, preset best; rag ranks with it): {args.items} _s items "
              f"({sessions:.0f} sessions each), {args.m_items} _m-size items; {headline(args.before, trees)}")
        results = {label: {"s": _run_worker(tree, s_path, env), "m": _run_worker(tree, m_path, env)}
                   for label, tree in trees.items()}
        for label, r in results.items():
            s, m = r["s"], r["m"]
            # what the rankers hold after n items, extrapolated at the pace of the second half of the items (a
            # bounded memo stops growing; an unbounded one keeps its pace)
            full_s = s["rss_grown"] + s["late"] * (S_ITEMS - args.items)
            full_m = m["rss_grown"] + m["late"] * (M_ITEMS - args.m_items)
            print(f"  {label:<6} _s: {s['cpu_ms']:6.1f} ms CPU/item, RSS +{s['rss_grown']:5.0f} MiB over {args.items} "
                  f"items (+{s['late']:5.2f} MiB/item in the second half), text memo hits {s['text_memo_hits']:.0%}; "
                  f"_m-size: {m['cpu_ms']:7.1f} ms/item, +{m['rss_grown']:5.0f} MiB over {args.m_items} (+{m['late']:5.2f}"
                  f"/item late)")
            print(f"  {label:<6} rankers' RSS growth over a full _s run ~{full_s:6.0f} MiB (goal < {RSS_GOAL_S_MB} MB "
                  f"for the whole run), over an _m-size run ~{full_m:6.0f} MiB (goal < {RSS_GOAL_M_MB} MB)")
        if "before" in results:
            b, a = results["before"], results["after"]
            same = all(b[k]["rankings"] == a[k]["rankings"] for k in ("s", "m"))
            print(f"  after/before CPU per item: _s {a['s']['cpu_ms'] / b['s']['cpu_ms']:.2f}, _m-size "
                  f"{a['m']['cpu_ms'] / b['m']['cpu_ms']:.2f}; rankings identical to before's: {same}")
        if _bm25s_importable(env):
            lib = _run_worker(REPO, s_path, env, use_bm25s=True)
            ours = results["after"]["s"]
            differ = sum(1 for q, r in lib["rankings"].items() if r != ours["rankings"][q])
            print(f"  bm25s  _s: {lib['cpu_ms']:6.1f} ms CPU/item ({lib['cpu_ms'] / ours['cpu_ms']:.2f}x ours), its "
                  f"import {lib['import_s']:.2f} s CPU per process, rankings differing from ours: {differ} of "
                  f"{len(ours['rankings'])}")
        else:
            print("  bm25s: not importable here (pip install bm25s scipy to compare); not one of our requirements")
        runs = []
        if args.driver:
            s_data = tmp / "s_subset.json"
            s_data.write_text(json.dumps(json.loads(lzma.open(S_FILE).read())[: args.driver_items]))
            runs += [(target, "_s", s_data, args.driver_items) for target in args.driver.split(",")]
        if args.driver_m_items:
            m_data = tmp / "m_subset.json"
            m_data.write_text(json.dumps(_m_size_items(json.loads(lzma.open(S_FILE).read()), args.driver_m_items)))
            runs.append(("rag", "_m-size", m_data, args.driver_m_items))
        if runs:
            _driver_runs(trees, runs, tmp, env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
