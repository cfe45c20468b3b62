"""Optional helpers a target may use (the built-in targets and memory-ref do), beside the targets stage.

The shared reader prompt and its history rendering (``reader``), a BM25 ranker (``bm25_index``) and SQLite caches
opened safely across workers (``cache_db``); part of the public target API (``lme.targets.api.PUBLIC``). Nothing on the
run path imports them; a target of your own needs only the target API (``from lme.targets import ...``)."""

from lme.target_kit.bm25_index import BM25Index, query_weights, tokenize
from lme.target_kit.cache_db import cached_keys, connect_cache_db
from lme.target_kit.reader import (
    answer_with_reader,
    build_fitted_request,
    complete_reader,
    reader_settings,
    render_history,
    sort_by_date,
)

__all__ = ("answer_with_reader", "complete_reader", "build_fitted_request", "reader_settings", "render_history",
           "sort_by_date", "BM25Index", "tokenize", "query_weights", "connect_cache_db", "cached_keys")
"""The public names (``lme.targets.api.PUBLIC["lme.target_kit"]``), nothing else."""
