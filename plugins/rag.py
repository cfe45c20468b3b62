"""Target ``rag``: retrieve the item's most relevant sessions, then read the top k with the reader.

Retrieval follows upstream's flat index in what it indexes: documents are the USER turns only, either one document
per session (``granularity=session``: its user turns joined) or one per user turn (``granularity=turn``: a turn hit
ranks its session, at its best turn). The query is the question. The retriever is our BM25 (lowercased, stop words
removed, light stemming; ``bm25_index`` over ``bm25s``), not upstream's flat-bm25 (whitespace split, case kept,
rank_bm25 Okapi); on the ``_s`` copy ours ranks better (``tests/benchmarks/bench_rag_recall.py`` prints both).

Either way the output is a ranking of SESSIONS, and recall/NDCG are computed on it at session level
(``retrieval_metrics``). With ``granularity=turn`` these are therefore not upstream's turn-to-session figures
(upstream counts only hits on ``has_answer`` turns and computes NDCG over turns).

Options:
- ``granularity``: ``session`` (default) | ``turn``.
- ``top_k``: sessions handed to the reader (default 10). If ``top_k`` >= the number of sessions, retrieval
  returns everything: a warning goes to stderr once per process and ``debug.retrieval.top_k_covers_all`` is true.
- ``bm25``: use BM25 (default true).
- ``embed_model``: ``provider:model`` (e.g. ``openai:text-embedding-3-small``) to add dense retrieval through
  ``ctx.llm.embed``; vectors are cached on disk under ``ctx.cache_dir`` (sqlite, key sha256(model + text)).
  With both BM25 and embeddings on, rankings are merged by reciprocal-rank fusion (k=60).
- Reader options as ``full-context``: ``mode``, ``history_format``, ``context_window``, ``max_tokens``.

``retrieved_session_ids`` lists ALL sessions, ranked (not only the top k), so recall@k works for any k.
The top-k sessions are shown to the reader in date order.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import sqlite3
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence

_SCRIPTS = str(Path(__file__).resolve().parent.parent / "scripts")
if _SCRIPTS not in sys.path:  # loaded by path: make the toolkit's modules importable
    sys.path.insert(0, _SCRIPTS)

import reader  # noqa: E402
from bm25_index import BM25Index, rank_grouped  # noqa: E402
from records import ChatRequest, Hypothesis, PublicItem, TargetContext  # noqa: E402

NAME = "rag"
GRANULARITIES = ("session", "turn")
RRF_K = 60
EMBED_MAX_CHARS = 20_000
"""Embedding inputs are cut to this many characters (embedding models accept about 8k tokens)."""


def _truthy(value: Any) -> bool:
    return value if isinstance(value, bool) else str(value).strip().lower() not in ("0", "false", "no", "off", "")


def settings(options: Mapping[str, Any]) -> dict[str, Any]:
    granularity = str(options.get("granularity", "session"))
    if granularity not in GRANULARITIES:
        raise ValueError(f"rag option granularity must be one of {GRANULARITIES}, got {granularity!r}")
    top_k = int(options.get("top_k", 10))
    if top_k < 1:
        raise ValueError(f"rag option top_k must be >= 1, got {top_k}")
    embed_model = options.get("embed_model") or None
    use_bm25 = _truthy(options.get("bm25", True))
    if not use_bm25 and not embed_model:
        raise ValueError("rag needs a retriever: keep bm25 on or set embed_model=provider:model")
    return {"granularity": granularity, "top_k": top_k, "bm25": use_bm25, "embed_model": embed_model}


def describe(options: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": NAME, **settings(options), **reader.reader_settings(options)}


# --------------------------------------------------------------------------- documents and rankings


def documents(item: PublicItem, granularity: str) -> tuple[list[str], list[str]]:
    """(texts, session aliases) of the user-turn documents."""
    texts: list[str] = []
    owners: list[str] = []
    for session in item.sessions:
        user_turns = [t.content for t in session.turns if t.role == "user"]
        if granularity == "session":
            texts.append(" ".join(user_turns))
            owners.append(session.session_id)
        else:
            for content in user_turns:
                texts.append(content)
                owners.append(session.session_id)
    return texts, owners


def _grouped(order: Sequence[int], owners: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for i in order:
        if owners[i] not in seen:
            seen.add(owners[i])
            out.append(owners[i])
    return out


def bm25_ranking(item: PublicItem, query: str, granularity: str) -> list[str]:
    texts, owners = documents(item, granularity)
    return [str(sid) for sid, _ in rank_grouped(BM25Index(texts, ids=owners), query)]


class EmbeddingCache:
    """Vectors on disk in sqlite, keyed by sha256(model + NUL + text). Safe for concurrent items (one connection
    per call, WAL). ``directory=None`` keeps nothing."""

    def __init__(self, directory: str | None) -> None:
        self.path = Path(directory) / "rag-embeddings.sqlite" if directory else None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as db:
                db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector TEXT NOT NULL)")

    def _connect(self) -> sqlite3.Connection:
        import sqlite_store

        return sqlite_store.connect(self.path, autocommit=False)

    @staticmethod
    def key(model: str, text: str) -> str:
        return hashlib.sha256(f"{model}\0{text}".encode("utf-8")).hexdigest()

    def get_many(self, model: str, texts: Sequence[str]) -> dict[str, list[float]]:
        if self.path is None or not texts:
            return {}
        keys = {self.key(model, t): t for t in texts}
        found: dict[str, list[float]] = {}
        with self._connect() as db:
            for key, vector in db.execute(
                f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(keys))})", list(keys)
            ):
                found[keys[key]] = json.loads(vector)
        return found

    def put_many(self, model: str, pairs: Mapping[str, list[float]]) -> None:
        if self.path is None or not pairs:
            return
        with self._connect() as db:
            db.executemany("INSERT OR REPLACE INTO vectors (key, vector) VALUES (?, ?)",
                           [(self.key(model, t), json.dumps(v)) for t, v in pairs.items()])


def embed_texts(ctx: TargetContext, embed_model: str, texts: Sequence[str]) -> tuple[list[list[float]], int]:
    """Vectors for ``texts`` (cache first); returns them and how many were computed by the provider."""
    provider, _, model = embed_model.partition(":")
    if not model:
        raise ValueError(f"rag option embed_model must be provider:model, got {embed_model!r}")
    clipped = [t[:EMBED_MAX_CHARS] if t.strip() else " " for t in texts]
    cache = EmbeddingCache(ctx.cache_dir)
    known = cache.get_many(embed_model, clipped)
    missing = sorted({t for t in clipped if t not in known})
    if missing:
        vectors = ctx.llm.embed(provider, model, missing)
        fresh = dict(zip(missing, vectors))
        cache.put_many(embed_model, fresh)
        known.update(fresh)
    return [known[t] for t in clipped], len(missing)


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def embedding_ranking(item: PublicItem, ctx: TargetContext, query: str, granularity: str,
                      embed_model: str) -> tuple[list[str], int]:
    texts, owners = documents(item, granularity)
    vectors, computed = embed_texts(ctx, embed_model, [query, *texts])
    scores = [_cosine(vectors[0], v) for v in vectors[1:]]
    order = sorted(range(len(texts)), key=lambda i: (-scores[i], i))
    return _grouped(order, owners), computed


def reciprocal_rank_fusion(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> list[str]:
    """Merge best-first rankings: score = sum of 1 / (k + rank); ties keep first-seen order."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, doc in enumerate(ranking, start=1):
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (k + rank)
    first_seen = {doc: i for i, doc in enumerate(d for r in rankings for d in r)}
    return sorted(scores, key=lambda d: (-scores[d], first_seen[d]))


@lru_cache(maxsize=None)
def _warn_once(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def rank_sessions(item: PublicItem, ctx: TargetContext, *, with_embeddings: bool = True) -> tuple[list[str], dict]:
    """All session aliases, best first, and the retrieval debug record."""
    cfg = settings(ctx.options)
    rankings: list[list[str]] = []
    info: dict[str, Any] = {"granularity": cfg["granularity"], "top_k": cfg["top_k"], "retrievers": []}
    if cfg["bm25"]:
        rankings.append(bm25_ranking(item, item.question, cfg["granularity"]))
        info["retrievers"].append("bm25")
    if cfg["embed_model"] and with_embeddings:
        ranking, computed = embedding_ranking(item, ctx, item.question, cfg["granularity"], cfg["embed_model"])
        rankings.append(ranking)
        info["retrievers"].append(f"embed:{cfg['embed_model']}")
        info["embeddings_computed"] = computed
    ranked = rankings[0] if len(rankings) == 1 else reciprocal_rank_fusion(rankings)
    # sessions with no user turn still belong in the full ranking (last, in order)
    listed = set(ranked)
    ranked += [s.session_id for s in item.sessions if s.session_id not in listed]
    info["fusion"] = "rrf" if len(rankings) > 1 else None
    info["top_k_covers_all"] = cfg["top_k"] >= len(item.sessions)
    if info["top_k_covers_all"]:
        _warn_once(f"rag top_k={cfg['top_k']} >= the {len(item.sessions)} sessions of an item: retrieval returns "
                   "everything (full context); lower top_k for a real retrieval test")
    return ranked, info


def _top_sessions(item: PublicItem, ranked: Sequence[str], top_k: int) -> list[Any]:
    chosen = set(ranked[:top_k])
    return [s for s in item.sessions if s.session_id in chosen]


def prepare_requests(item: PublicItem, ctx: TargetContext) -> list[ChatRequest]:
    """The reader request for a BM25-only ranking (embedding calls are not previewed)."""
    ranked, _ = rank_sessions(item, ctx, with_embeddings=False)
    top = _top_sessions(item, ranked, settings(ctx.options)["top_k"])
    request, _ = reader.build_fitted_request(item, top, provider=ctx.provider, model=ctx.model,
                                             options=ctx.options, use_provider_count=False)
    return [request]


def generate(item: PublicItem, ctx: TargetContext) -> Hypothesis:
    ranked, info = rank_sessions(item, ctx)
    top = _top_sessions(item, ranked, info["top_k"])
    hyp = reader.answer_with_reader(item, top, ctx, debug={"retrieval": info})
    return dataclasses.replace(hyp, retrieved_session_ids=tuple(ranked))
