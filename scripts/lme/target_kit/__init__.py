"""Optional helpers a target may use (the built-in targets and memory-ref do), beside the targets stage.

The shared reader prompt and its history rendering (``reader``), a BM25 ranker (``bm25_index``) and SQLite caches
opened safely across workers (``cache_db``); part of the public target API (``lme.targets.api.PUBLIC``). Nothing on the
run path imports them; a target of your own needs only the target API (``from lme.targets import ...``)."""

from lme import lazy_face

_EXPORTS = {
    "answer_with_reader": "lme.target_kit.reader", "complete_reader": "lme.target_kit.reader",
    "build_fitted_request": "lme.target_kit.reader", "reader_settings": "lme.target_kit.reader",
    "render_history": "lme.target_kit.reader", "sort_by_date": "lme.target_kit.reader",
    "BM25Index": "lme.target_kit.bm25_index", "tokenize": "lme.target_kit.bm25_index",
    "query_weights": "lme.target_kit.bm25_index",
    "connect_cache_db": "lme.target_kit.cache_db", "cached_keys": "lme.target_kit.cache_db",
}
"""Name -> the module that holds it (full dotted path, so a rename is found by grep)."""

__all__ = tuple(_EXPORTS)
__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)
