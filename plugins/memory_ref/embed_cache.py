"""Embeddings through ``llm.embed``, cached on disk (SQLite, key sha256(provider:model + NUL + text)).

Shared by memory-ref's ``embed`` role and the ``rag`` target's ``embed_model``. Safe for concurrent items (one
short connection per operation, WAL). ``directory=None`` keeps nothing.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any, Mapping, Sequence

CACHE_FILE = "rag-embeddings.sqlite"
MAX_CHARS = 20_000
"""Embedding inputs are cut to this many characters (embedding models accept about 8k tokens)."""


class EmbeddingCache:
    def __init__(self, directory: str | None) -> None:
        self.path = Path(directory) / CACHE_FILE if directory else None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as db:
                db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector TEXT NOT NULL)")

    def _connect(self) -> sqlite3.Connection:
        from lme.target_kit import connect_cache_db

        return connect_cache_db(self.path, autocommit=False)

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


def cached_embed(llm: Any, spec: str, texts: Sequence[str], cache_dir: str | None
                 ) -> tuple[list[list[float]], int]:
    """Vectors for ``texts`` with the model ``spec`` (``provider:model``), cache first; also how many were
    computed by the provider. Empty texts are sent as one space (the API refuses empty input)."""
    provider, _, model = spec.partition(":")
    if not provider or not model:
        raise ValueError(f"an embedding model must be provider:model, got {spec!r}")
    clipped = [t[:MAX_CHARS] if t.strip() else " " for t in texts]
    cache = EmbeddingCache(cache_dir)
    known = cache.get_many(spec, clipped)
    missing = sorted({t for t in clipped if t not in known})
    if missing:
        fresh = dict(zip(missing, llm.embed(provider, model, missing)))
        cache.put_many(spec, fresh)
        known.update(fresh)
    return [known[t] for t in clipped], len(missing)
