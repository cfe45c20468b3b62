"""Opening the SQLite caches (calls, embeddings, extracted facts) safely from many threads and processes.

WAL lets readers and one writer work at once, and the busy timeout makes writers wait instead of failing. Switching
a new file to WAL needs a moment alone with it, and SQLite does not apply the busy timeout to that switch, so
several workers opening a fresh file together could get "database is locked": the switch is retried briefly, and
skipped once the file is WAL (the mode is stored in the file).
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Sequence

from lme.core import fileio

BUSY_TIMEOUT_S = 60.0


SIDECARS = ("-wal", "-shm", "-journal")
"""The files SQLite keeps beside a database."""


def refuse_links(path: str | Path) -> None:
    """SQLite follows symbolic links: refuse a linked database, sidecar or parent folder first (``fileio``)."""
    for name in (str(path), *(f"{path}{suffix}" for suffix in SIDECARS)):
        fileio.check_no_symlinks(name, include_self=True)


def connect(path: str | Path, *, autocommit: bool = True) -> sqlite3.Connection:
    refuse_links(path)
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None if autocommit else "")
    try:
        conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        for attempt in range(50):
            try:
                if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    conn.execute("PRAGMA journal_mode=WAL")
                break
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) and "busy" not in str(err):
                    raise
                time.sleep(0.01 * (attempt + 1))
        conn.execute("PRAGMA synchronous=NORMAL")
    except BaseException:
        conn.close()  # a file that cannot be opened (disk full, read-only) is not left open with its -wal/-shm
        raise
    return conn


def existing_keys(path: str | Path, table: str, keys: Sequence[str]) -> set[str]:
    """Which of ``keys`` the ``key`` column of ``table`` holds, read-only: a missing or unreadable file is an
    empty set and nothing is created (dry runs look here before a run has written anything). With no write-ahead
    log beside the file, every row is in it: it is opened ``immutable``, so SQLite creates no -wal/-shm files;
    otherwise read-only through the existing log."""
    path = Path(path)
    if not keys or not path.is_file():
        return set()
    wal = Path(f"{path}-wal")
    mode = "ro" if wal.is_file() and wal.stat().st_size > 0 else "ro&immutable=1"
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode={mode}", uri=True, timeout=5)
        try:
            found: set[str] = set()
            unique = sorted(set(keys))
            for start in range(0, len(unique), 500):
                chunk = unique[start:start + 500]
                marks = ",".join("?" * len(chunk))
                found.update(row[0] for row in conn.execute(f"SELECT key FROM {table} WHERE key IN ({marks})", chunk))
            return found
        finally:
            conn.close()
    except sqlite3.Error:
        return set()
