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

BUSY_TIMEOUT_S = 60.0


def connect(path: str | Path, *, autocommit: bool = True) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None if autocommit else "")
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
    return conn
