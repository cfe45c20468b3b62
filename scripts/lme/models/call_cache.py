"""A content-addressed cache of model calls in SQLite, so no identical call is paid for twice.

The key is ``ChatRequest.key()``: provider, model id, every request parameter and the full messages. A judge call
(``request.judge``) is also keyed on the endpoint host it went to (``cache_key``), and its row records that host:
a verdict a proxy or another server gave is never served to a run against another host (so never as the official
host's). Judge entries written before hosts were recorded have the bare key, which a judge lookup never asks for:
they are not served (the call is made again, once), so an old entry can never pass for an official one. A
resumed or repeated run, or a re-judge, is served from here. ``read=False`` (``--no-cache``) still writes, so a
confirmation rerun refreshes the cache without reading it. Schema changes are numbered migrations on
``PRAGMA user_version``.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Mapping

from lme.core import fileio
from lme.models import sqlite_store
from lme.core.errors import UserError
from lme.core.records import ChatRequest, Completion

_MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE calls (
        key TEXT PRIMARY KEY,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        request TEXT NOT NULL,
        response TEXT NOT NULL,
        created_at REAL NOT NULL
    );
    CREATE TABLE embeddings (
        key TEXT PRIMARY KEY,
        vector TEXT NOT NULL,
        created_at REAL NOT NULL
    );
    """,
    """
    ALTER TABLE calls ADD COLUMN endpoint_host TEXT;
    """,
)


def cache_key(request: ChatRequest, host: str | None) -> str:
    """The cache key of ``request`` sent to ``host``: ``request.key()``, bound to the host for a judge call."""
    if not request.judge:
        return request.key()
    return hashlib.sha256(f"{request.key()}@{host or ''}".encode("utf-8")).hexdigest()


class CallCache:
    """Thread-safe (one connection per thread); safe across processes (SQLite WAL + busy timeout)."""

    FILE_NAME = "calls.sqlite3"

    def __init__(self, directory: Path, *, read: bool = True) -> None:
        self.path = directory / self.FILE_NAME
        self.read = read
        self._local = threading.local()
        self.hits = 0
        self.misses = 0
        self._count_lock = threading.Lock()
        sidecars = [self.path.with_name(self.path.name + suffix) for suffix in ("-wal", "-shm")]
        existed = {path for path in sidecars if path.exists()}
        try:
            fileio.make_dirs(directory)
            self._migrate()
        except (OSError, sqlite3.DatabaseError) as err:
            self._forget_failed_open(set(sidecars) - existed)
            raise UserError(
                f"the call cache {self.path} cannot be opened ({err})",
                fix="move or delete it, set cache_dir to a writable folder, or set cacheEnabled to false",
            ) from None

    def _forget_failed_open(self, created: set[Path]) -> None:
        """A cache that could not be opened (disk full, read-only) leaves nothing behind: close this thread's
        connection and remove the WAL files the attempt created (ones that existed belong to another writer)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            self._local.conn = None
            try:
                conn.close()
            except sqlite3.Error:
                pass
        for path in created:
            try:
                path.unlink()
            except OSError:
                pass  # gone already, or cannot be removed either (a read-only folder): the error still says why

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite_store.connect(self.path)
            self._local.conn = conn
        return conn

    def _migrate(self) -> None:
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            for number, script in enumerate(_MIGRATIONS[version:], start=version + 1):
                for statement in filter(str.strip, script.split(";")):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _count(self, hit: bool) -> None:
        with self._count_lock:
            if hit:
                self.hits += 1
            else:
                self.misses += 1

    def get(self, request: ChatRequest, host: str | None = None) -> Completion | None:
        """The stored reply of ``request``; ``host``: where the call would go (a judge call's key includes it)."""
        if not self.read:
            return None
        row = self._conn().execute("SELECT response FROM calls WHERE key = ?", (cache_key(request, host),)).fetchone()
        self._count(row is not None)
        if row is None:
            return None
        data: dict[str, Any] = json.loads(row[0])
        data.update(cached=True, attempts=0, latencyMs=0.0)
        return Completion.from_dict(data)

    def put(self, request: ChatRequest, completion: Completion) -> None:
        """Store ``completion``; a judge call under the host it came from (``completion.endpoint_host``)."""
        response = completion.to_dict()
        for field in ("cached", "billing", "batch_id"):  # a hit is free, however the call was first billed
            response.pop(field, None)
        self._conn().execute(
            "INSERT OR REPLACE INTO calls (key, provider, model, request, response, created_at, endpoint_host) "
            "VALUES (?,?,?,?,?,?,?)",
            (
                cache_key(request, completion.endpoint_host),
                request.provider,
                request.model,
                json.dumps(request.canonical(), ensure_ascii=False),
                json.dumps(response, ensure_ascii=False),
                time.time(),
                completion.endpoint_host,
            ),
        )

    def get_body(self, key: str) -> dict[str, Any] | None:
        """The stored reply body of a call the target endpoint forwarded (``endpoint_forward.cache_key``)."""
        if not self.read:
            return None
        row = self._conn().execute("SELECT response FROM calls WHERE key = ?", (key,)).fetchone()
        self._count(row is not None)
        return None if row is None else json.loads(row[0])

    def put_body(self, key: str, provider: str, model: str, request: Mapping[str, Any],
                 reply: Mapping[str, Any]) -> None:
        """Store the reply body of a call the target endpoint forwarded: the request and the reply as JSON, in the
        table of every call (its keys are another namespace: a ``ChatRequest`` key never equals one)."""
        self._conn().execute(
            "INSERT OR REPLACE INTO calls (key, provider, model, request, response, created_at) VALUES (?,?,?,?,?,?)",
            (key, provider, model, json.dumps(request, ensure_ascii=False), json.dumps(reply, ensure_ascii=False),
             time.time()),
        )

    def get_embedding(self, key: str) -> list[float] | None:
        if not self.read:
            return None
        row = self._conn().execute("SELECT vector FROM embeddings WHERE key = ?", (key,)).fetchone()
        self._count(row is not None)
        return None if row is None else json.loads(row[0])

    def put_embedding(self, key: str, vector: list[float]) -> None:
        self._conn().execute(
            "INSERT OR REPLACE INTO embeddings (key, vector, created_at) VALUES (?,?,?)",
            (key, json.dumps(vector), time.time()),
        )

    def stats(self) -> dict[str, int]:
        with self._count_lock:
            return {"hits": self.hits, "misses": self.misses}


def cached_keys(directory: Path, keys: list[str]) -> set[str]:
    """Which request keys (``ChatRequest.key()``) the cache in ``directory`` holds, without creating or writing
    anything: what a dry run counts as free."""
    return sqlite_store.existing_keys(Path(directory) / CallCache.FILE_NAME, "calls", keys)
