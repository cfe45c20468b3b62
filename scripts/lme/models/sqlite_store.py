"""Opening the SQLite caches (calls, embeddings, extracted facts) safely from many threads and processes.

WAL lets readers and one writer work at once, and the busy timeout makes writers wait instead of failing. Switching
a new file to WAL needs a moment alone with it, and SQLite does not apply the busy timeout to that switch, so
several workers opening a fresh file together could get "database is locked": the switch is retried briefly, and
skipped once the file is WAL (the mode is stored in the file).

Two faults are told apart here for the caches' owners: a damaged file (``is_corrupt``) and a lock another process
holds (``is_locked``; ``lock_holders`` says who, where the system tells).
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Sequence

from lme.core import fileio

BUSY_TIMEOUT_S = 60.0
"""How long a statement waits, silently, for a lock another connection holds (``connect``'s default; the call
cache waits less, then says so on stderr before it waits longer). Our own writes hold the lock for milliseconds."""

SQLITE_MAGIC = b"SQLite format 3\x00"
_CORRUPT, _NOTADB, _BUSY, _LOCKED = 11, 26, 5, 6


SIDECARS = ("-wal", "-shm", "-journal")
"""The files SQLite keeps beside a database."""


def refuse_links(path: str | Path) -> None:
    """SQLite follows symbolic links: refuse a linked database, sidecar or parent folder first (``fileio``)."""
    for name in (str(path), *(f"{path}{suffix}" for suffix in SIDECARS)):
        fileio.check_no_symlinks(name, include_self=True)


def connect(path: str | Path, *, autocommit: bool = True, busy_timeout_s: float | None = None) -> sqlite3.Connection:
    refuse_links(path)
    busy = BUSY_TIMEOUT_S if busy_timeout_s is None else busy_timeout_s
    conn = sqlite3.connect(str(path), timeout=busy, isolation_level=None if autocommit else "")
    try:
        conn.execute(f"PRAGMA busy_timeout={int(busy * 1000)}")
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


def is_corrupt(err: BaseException, path: str | Path) -> bool:
    """``err`` says the file at ``path`` is damaged: a malformed page, or a header that no longer reads although the
    file starts as an SQLite file (a file that never was one is not ours to repair)."""
    code = getattr(err, "sqlite_errorcode", None)
    if code == _CORRUPT:
        return True
    if code != _NOTADB:
        return False
    try:
        with open(path, "rb") as handle:
            return handle.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


def is_locked(err: BaseException) -> bool:
    """``err`` is a lock another connection held past the busy timeout (never a full disk)."""
    return getattr(err, "sqlite_errorcode", None) in (_BUSY, _LOCKED)


def lock_holders(path: str | Path) -> list[int]:
    """The other processes holding a write lock on the database at ``path`` or its -shm file (in WAL mode a writer
    locks the -shm), as far as the system tells (Linux's /proc/locks); an empty list when it does not. Read
    without opening the files: closing a descriptor of our own would drop this process's SQLite locks."""
    inodes = set()
    for name in (str(path), f"{path}-shm"):
        try:
            inodes.add(os.stat(name).st_ino)
        except OSError:
            pass
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return []
    holders: set[int] = set()
    for line in lines:
        fields = line.split()
        if "->" in fields or len(fields) < 6 or fields[3] != "WRITE" or not fields[4].isdigit():
            continue
        inode = fields[5].rsplit(":", 1)[-1]
        if inode.isdigit() and int(inode) in inodes and int(fields[4]) != os.getpid():
            holders.add(int(fields[4]))
    return sorted(holders)
