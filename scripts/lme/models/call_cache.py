"""A content-addressed cache of model calls in SQLite, so no identical call is paid for twice.

The key is ``ChatRequest.key()``: provider, model id, every request parameter and the full messages. A judge call
(``request.judge``) is also keyed on the endpoint host it went to (``cache_key``), and its row records that host:
a verdict a proxy or another server gave is never served to a run against another host (so never as the official
host's). Judge entries written before hosts were recorded have the bare key, which a judge lookup never asks for:
they are not served (the call is made again, once), so an old entry can never pass for an official one. A
resumed or repeated run, or a re-judge, is served from here. ``read=False`` (``--no-cache``) still writes, so a
confirmation rerun refreshes the cache without reading it. Schema changes are numbered migrations on
``PRAGMA user_version``.

Faults name the file. Opening checks every page (``quick_check``), so entries are never served from a file found
damaged; a damaged file (found then, or by any later statement) is kept aside as ``calls.sqlite3.corrupt-<UTC
time>`` and emptied in place (``cache_repair``, which says why never by a rename), said in one line: the calls it
held are paid again. A lock another process holds is waited for, said on stderr with who holds it where the system
tells, up to ``LOCK_WAIT_S``.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Mapping, TypeVar

from lme.core import fileio
from lme.models import cache_repair, sqlite_store
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


LOCK_WAIT_S = 300.0
"""How long a cache locked by another process is waited for, in all, before the cache is given up."""
BUSY_NOTICE_S = 5.0
"""How long a statement waits silently for a lock before the wait is said on stderr (``_wait_for_lock``)."""

_T = TypeVar("_T")

_REPAIR_LOCK = threading.Lock()
_REPAIRS: dict[str, int] = {}
"""Repairs made in this process, per cache file: a damage several threads (or cache objects) meet is repaired once."""


class CacheFault(sqlite3.DatabaseError):
    """The cache cannot be used; the message names the file and why."""


class CacheLocked(CacheFault):
    """The cache stayed locked by another process for ``LOCK_WAIT_S``: the message names the holder."""


class CacheDamaged(CacheFault):
    """The cache is damaged and could not be repaired in place (its header, or the copy aside, failed)."""


class FoundDamaged(sqlite3.DatabaseError):
    """Opening's check found the file damaged (``cache_repair.first_fault``)."""


def _holder(path: Path) -> str:
    pids = sqlite_store.lock_holders(path)
    return f"pid {', '.join(map(str, pids))}" if pids else "another process (a run or an SQLite tool)"


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
        self._broken: str | None = None
        """Why the damaged file could not be repaired: every later use says so at once (``CacheDamaged``)."""
        self._lock_told_at: float | None = None
        sidecars = [self.path.with_name(self.path.name + suffix) for suffix in ("-wal", "-shm")]
        existed = {path for path in sidecars if path.exists()}
        try:
            fileio.make_dirs(directory)
            self._key = str(self.path.resolve())
            self._guarded(self._check_and_migrate)
        except (OSError, sqlite3.DatabaseError) as err:
            self._forget_failed_open(set(sidecars) - existed)
            raise self._refusal(err) from None

    def _refusal(self, err: BaseException) -> UserError:
        if isinstance(err, CacheLocked):
            return UserError(str(err), fix="let the other run finish or stop it, or set cacheEnabled to false")
        if isinstance(err, CacheDamaged):
            return UserError(str(err), fix="move it aside (it is evidence) when no run uses it, or set cacheEnabled "
                             "to false")
        return UserError(f"the call cache {self.path} cannot be opened ({err})",
                         fix="move or delete it, set cache_dir to a writable folder, or set cacheEnabled to false")

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
            conn = sqlite_store.connect(self.path, busy_timeout_s=BUSY_NOTICE_S)
            self._local.conn = conn
        return conn

    def _guarded(self, action: Callable[[sqlite3.Connection], _T]) -> _T:
        """``action`` on this thread's connection. A damaged file is repaired (once, whichever thread meets it
        first) and the action repeated on the emptied cache; a lock another process holds is waited for, said on
        stderr, up to ``LOCK_WAIT_S`` (``CacheLocked``)."""
        if self._broken is not None:
            raise CacheDamaged(self._broken)
        started, repaired = time.monotonic(), False
        while True:
            with _REPAIR_LOCK:
                seen = _REPAIRS.get(self._key, 0)
            try:
                return action(self._conn())
            except CacheFault:
                raise
            except sqlite3.DatabaseError as err:
                fault = err
            if sqlite_store.is_locked(fault):
                self._wait_for_lock(started)
            elif not isinstance(fault, FoundDamaged) and not sqlite_store.is_corrupt(fault, self.path):
                raise fault
            elif repaired:
                raise self._give_up(fault, "it is still damaged after it was emptied")
            elif self._repair(seen, fault):
                repaired = True
            else:
                self._wait_for_lock(started)  # the repair waits for a lock another process holds

    def _repair(self, seen: int, err: sqlite3.DatabaseError) -> bool:
        """Keep the damaged file aside and empty it in place (``cache_repair``), unless it was repaired since
        ``seen`` by this process or is found sound again (another process repaired it, and said so). False: a lock
        another process holds kept it from being done."""
        with _REPAIR_LOCK:
            if _REPAIRS.get(self._key, 0) != seen:
                return True
            try:
                if cache_repair.first_fault(self._conn(), thorough=True) is None:
                    return True
                moved = cache_repair.reset_in_place(self.path, self._migrate_tables)
            except (OSError, sqlite3.DatabaseError) as failed:
                if sqlite_store.is_locked(failed):
                    return False
                raise self._give_up(err, f"it cannot be emptied in place ({failed})") from None
            _REPAIRS[self._key] = seen + 1
        print(f"warning: the call cache {self.path} is damaged ({err}): it is kept aside as {moved} and the cache "
              "starts empty; the calls it held are paid again", file=sys.stderr, flush=True)
        return True

    def _give_up(self, err: sqlite3.DatabaseError, why: str) -> CacheDamaged:
        self._broken = f"the call cache {self.path} is damaged ({err}); {why}"
        return CacheDamaged(self._broken)

    def _wait_for_lock(self, started: float) -> None:
        """Say once a minute that another process holds the cache; give up after ``LOCK_WAIT_S`` (CacheLocked)."""
        waited = time.monotonic() - started
        who = _holder(self.path)
        if waited >= LOCK_WAIT_S:
            raise CacheLocked(f"the call cache {self.path} is locked by {who} (waited {waited:.0f} s)")
        with self._count_lock:
            now = time.monotonic()
            tell = self._lock_told_at is None or now - self._lock_told_at >= 60
            if tell:
                self._lock_told_at = now
        if tell:
            print(f"note: the call cache {self.path} is locked by {who}; waiting for it (up to {LOCK_WAIT_S:g} s)",
                  file=sys.stderr, flush=True)
        time.sleep(0.05)  # a lock SQLite reports at once (no busy wait) is not retried in a hot loop

    def _check_and_migrate(self, conn: sqlite3.Connection) -> None:
        """Opening: every page is read first, so no entry is served from a damaged file; then the migrations."""
        fault = cache_repair.first_fault(conn)
        if fault is not None:
            raise FoundDamaged(fault)
        self._migrate_tables(conn)

    @staticmethod
    def _migrate_tables(conn: sqlite3.Connection) -> None:
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

    def _lookup(self, sql: str, key: str) -> Any:
        """The JSON the row under ``key`` holds (None: no row, or ``--no-cache``), counted as a hit or a miss."""
        if not self.read:
            return None
        row = self._guarded(lambda c: c.execute(sql, (key,)).fetchone())
        with self._count_lock:
            if row is None:
                self.misses += 1
            else:
                self.hits += 1
        return None if row is None else json.loads(row[0])

    def get(self, request: ChatRequest, host: str | None = None) -> Completion | None:
        """The stored reply of ``request``; ``host``: where the call would go (a judge call's key includes it)."""
        data = self.get_body(cache_key(request, host))
        if data is None:
            return None
        data.update(cached=True, attempts=0, latencyMs=0.0)
        return Completion.from_dict(data)

    def put(self, request: ChatRequest, completion: Completion) -> None:
        """Store ``completion``; a judge call under the host it came from (``completion.endpoint_host``)."""
        response = completion.to_dict()
        for field in ("cached", "billing", "batch_id"):  # a hit is free, however the call was first billed
            response.pop(field, None)
        self._write(
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

    def _write(self, sql: str, params: tuple[Any, ...]) -> None:
        self._guarded(lambda conn: conn.execute(sql, params))

    def get_body(self, key: str) -> dict[str, Any] | None:
        """The stored reply under ``key``: a ``ChatRequest``'s completion, or the reply body of a call the target
        endpoint forwarded (``endpoint_forward.cache_key``)."""
        return self._lookup("SELECT response FROM calls WHERE key = ?", key)

    def put_body(self, key: str, provider: str, model: str, request: Mapping[str, Any],
                 reply: Mapping[str, Any]) -> None:
        """Store the reply body of a call the target endpoint forwarded: the request and the reply as JSON, in the
        table of every call (its keys are another namespace: a ``ChatRequest`` key never equals one)."""
        self._write(
            "INSERT OR REPLACE INTO calls (key, provider, model, request, response, created_at) VALUES (?,?,?,?,?,?)",
            (key, provider, model, json.dumps(request, ensure_ascii=False), json.dumps(reply, ensure_ascii=False),
             time.time()),
        )

    def get_embedding(self, key: str) -> list[float] | None:
        return self._lookup("SELECT vector FROM embeddings WHERE key = ?", key)

    def put_embedding(self, key: str, vector: list[float]) -> None:
        self._write(
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
