"""SQLite caches for a memory system's own data (memory-ref's facts and embeddings): opened as the toolkit opens
its own (WAL, a busy timeout, no symbolic links), so many workers share one file safely."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Sequence

from lme.models import sqlite_store


def connect_cache_db(path: str | Path, *, autocommit: bool = True) -> sqlite3.Connection:
    """A connection to the SQLite file ``path`` (created if missing), safe to use beside other processes."""
    return sqlite_store.connect(path, autocommit=autocommit)


def cached_keys(path: str | Path, table: str, keys: Sequence[str]) -> set[str]:
    """Which of ``keys`` the table ``table`` (its ``key`` column) of the file ``path`` holds, read-only: nothing is
    created when the file or the table is missing."""
    return sqlite_store.existing_keys(path, table, keys)
