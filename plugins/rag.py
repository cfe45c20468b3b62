"""Target ``rag``: retrieve the item's most relevant sessions, then read the top ones with the reader.

Retrieval is memory-ref's first stage without the writer (``plugins/memory_ref/index.py``, one implementation for
both targets): BM25 over each session's user turns, its best user turn and its assistant turns, fused by score;
the query rewritten from the question's own words, expanded by pseudo-relevance feedback; a bonus for sessions
dated in a window the question names ("two weeks ago"); repeated sessions returned once. ``retriever=plain`` is
the floor: one BM25 document per session (its user turns), query = the question, as upstream's flat index but with
our tokenizer (``tests/benchmarks/bench_rag_recall.py`` prints it beside upstream's flat-bm25, and
``tests/benchmarks/bench_retrieval_configs.py`` every configuration).

The output is a ranking of SESSIONS, and recall/NDCG are computed on it at session level (``retrieval_metrics``).
With ``granularity=turn`` these are therefore not upstream's turn-to-session figures (upstream counts only hits on
``has_answer`` turns and computes NDCG over turns).

Options:
- ``retriever``: ``best`` (default) | ``fused-v1`` | ``plain`` (``index.PRESETS``).
- ``granularity``: ``session`` (default) | ``turn`` (user-turn documents only: a turn hit ranks its session).
- ``top_k``: at most this many sessions reach the reader (default 10); ``adaptive_k`` (default true) shows fewer
  when the retrieval score falls below a fifth of the best, never fewer than ``min_k`` (default 3), except for
  questions that count, order or compare, which get ``top_k`` (``index.adaptive_k``). Never every session: with ``top_k`` >=
  the number of sessions a warning goes to stderr once per process, the row's ``retrieval.top_k_covers_all`` is true,
  and the reader still gets one session fewer than the item has.
- ``bm25``: use the lexical retriever (default true).
- ``embed_model``: ``provider:model`` (e.g. ``openai:text-embedding-3-small``) to add dense retrieval through
  ``ctx.llm.embed``; vectors are cached on disk under ``ctx.cache_dir`` (sqlite, key sha256(model + text)).
  With both on, the rankings are merged by reciprocal-rank fusion (k=60).
- Reader options as ``full-context``: ``mode``, ``history_format``, ``context_window``, ``max_tokens``.

``retrieved_session_ids`` lists every distinct session, ranked (not only the ones read), so recall@k works for any
k. The sessions read are shown to the reader in date order.
"""

from __future__ import annotations

import dataclasses
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence

from lme.target_kit import reader
from lme.targets import ChatRequest, Hypothesis, PublicItem, TargetContext, load_module

_PLUGINS = Path(__file__).resolve().parent

NAME = "rag"
GRANULARITIES = ("session", "turn")


def _memory_ref(module: str) -> Any:
    """A module of the memory_ref package (its retrieval stage is ours too)."""
    return load_module(_PLUGINS / "memory_ref" / "__init__.py", "memory_ref_for_rag").submodule(module)


index = _memory_ref("index")
embed_cache = _memory_ref("embed_cache")


def _truthy(value: Any) -> bool:
    return value if isinstance(value, bool) else str(value).strip().lower() not in ("0", "false", "no", "off", "")


def _positive_int(options: Mapping[str, Any], key: str, default: int) -> int:
    value = int(options.get(key, default))
    if value < 1:
        raise ValueError(f"rag option {key} must be >= 1, got {value}")
    return value


def settings(options: Mapping[str, Any]) -> dict[str, Any]:
    granularity = str(options.get("granularity", "session"))
    if granularity not in GRANULARITIES:
        raise ValueError(f"rag option granularity must be one of {GRANULARITIES}, got {granularity!r}")
    retriever = str(options.get("retriever", "best"))
    if retriever not in index.PRESETS:
        raise ValueError(f"rag option retriever must be one of {sorted(index.PRESETS)}, got {retriever!r}")
    embed_model = options.get("embed_model") or None
    use_bm25 = _truthy(options.get("bm25", True))
    if not use_bm25 and not embed_model:
        raise ValueError("rag needs a retriever: keep bm25 on or set embed_model=provider:model")
    return {"granularity": granularity, "top_k": _positive_int(options, "top_k", 10),
            "adaptive_k": _truthy(options.get("adaptive_k", True)),
            "min_k": _positive_int(options, "min_k", index.ADAPTIVE_MIN_K),
            "retriever": retriever, "bm25": use_bm25, "embed_model": embed_model}


def describe(options: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": NAME, **settings(options), **reader.reader_settings(options)}


# --------------------------------------------------------------------------- rankings


def embed_texts(ctx: TargetContext, embed_model: str, texts: Sequence[str]) -> tuple[list[list[float]], int]:
    """Vectors for ``texts`` (cache first); returns them and how many were computed by the provider."""
    try:
        return embed_cache.cached_embed(ctx.llm, embed_model, texts, ctx.cache_dir)
    except ValueError as exc:
        raise ValueError(f"rag option embed_model: {exc}") from None


@lru_cache(maxsize=None)
def _warn_once(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def _embedding_only(item: PublicItem, ctx: TargetContext, embed_model: str) -> tuple[list[int], list[float], int]:
    texts = ["\n".join(index.session_user_text(s.turns))[: index.EMBED_CHARS] for s in item.sessions]
    vectors, computed = embed_texts(ctx, embed_model, [item.question, *texts])
    sims = [index.cosine(vectors[0], v) for v in vectors[1:]]
    ranked, _ = index.dedup_sessions(index.order(sims), item.sessions)
    return ranked, [sims[i] for i in ranked], computed


def rank_sessions(item: PublicItem, ctx: TargetContext, *, with_embeddings: bool = True
                  ) -> tuple[list[str], dict[str, Any]]:
    """Every distinct session alias, best first, and the retrieval debug record (``shown``: how many to read)."""
    cfg = settings(ctx.options)
    info: dict[str, Any] = {"granularity": cfg["granularity"], "top_k": cfg["top_k"], "retrievers": []}
    aggregates = False
    use_embed = bool(cfg["embed_model"]) and with_embeddings
    alias = lambda i: item.sessions[i].session_id  # noqa: E731
    if cfg["bm25"]:
        computed: list[int] = []

        def embed(texts: list[str]) -> list[list[float]]:
            vectors, n = embed_texts(ctx, cfg["embed_model"], texts)
            computed.append(n)
            return vectors

        result = index.retrieve(item.question, item.sessions, question_date=item.question_date,
                                config=index.config_named(cfg["retriever"]), granularity=cfg["granularity"],
                                embed=embed if use_embed else None)
        ranked, scores = result.ranked, result.scores
        aggregates = result.query is not None and result.query.aggregates
        info["retrievers"].append(f"bm25:{cfg['retriever']}")
        info |= {k: v for k, v in result.debug(alias).items() if k in ("query", "feedback_terms",
                                                                         "duplicates_dropped")}
        if use_embed:
            info["embeddings_computed"] = sum(computed)
    elif use_embed:
        ranked, scores, n_computed = _embedding_only(item, ctx, cfg["embed_model"])
        info["embeddings_computed"] = n_computed
    else:  # embeddings only, but not previewed (prepare_requests): history order stands in
        ranked, _ = index.dedup_sessions(range(len(item.sessions)), item.sessions)
        scores = [0.0] * len(ranked)
    if use_embed:
        info["retrievers"].append(f"embed:{cfg['embed_model']}")
    info["fusion"] = "rrf" if len(info["retrievers"]) > 1 else None
    n = len(item.sessions)
    info["top_k_covers_all"] = cfg["top_k"] >= n
    if cfg["adaptive_k"]:
        info["shown"] = index.adaptive_k(scores, cfg["top_k"], min_k=cfg["min_k"], aggregates=aggregates)
    else:
        info["shown"] = min(cfg["top_k"], max(len(ranked) - 1, 1))
    if info["top_k_covers_all"]:
        _warn_once(f"rag top_k={cfg['top_k']} >= the {n} sessions of an item: the reader gets at most "
                   f"{max(n - 1, 1)} of them (retrieval never returns everything); lower top_k for a real "
                   "retrieval test")
    return [alias(i) for i in ranked], info


def _top_sessions(item: PublicItem, ranked: Sequence[str], shown: int) -> list[Any]:
    chosen = set(ranked[:shown])
    return [s for s in item.sessions if s.session_id in chosen]


def prepare_requests(item: PublicItem, ctx: TargetContext) -> list[ChatRequest]:
    """The reader request for a BM25-only ranking (embedding calls are not previewed)."""
    ranked, info = rank_sessions(item, ctx, with_embeddings=False)
    top = _top_sessions(item, ranked, info["shown"])
    request, _ = reader.build_fitted_request(item, top, provider=ctx.provider, model=ctx.model,
                                             options=ctx.options, use_provider_count=False)
    return [request]


def generate(item: PublicItem, ctx: TargetContext) -> Hypothesis:
    ranked, info = rank_sessions(item, ctx)
    top = _top_sessions(item, ranked, info["shown"])
    hyp = reader.answer_with_reader(item, top, ctx, debug={"retrieval": info})
    return dataclasses.replace(hyp, retrieved_session_ids=tuple(ranked),
                               retrieval={"top_k": info["top_k"], "granularity": info["granularity"]})
