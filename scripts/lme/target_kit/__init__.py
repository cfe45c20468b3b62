"""Optional helpers a target may use (the built-in targets and memory-ref do): the shared reader prompt and its
history rendering (``reader``) and a BM25 ranker (``bm25_index``). Nothing on the run path imports them; a target
of your own needs only the target API (``from targets import ...``)."""
