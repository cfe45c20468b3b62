"""A damaged SQLite cache repaired in place: its bytes kept aside as evidence, its content replaced by an empty
cache through SQLite itself.

Why in place, never by renaming the file: SQLite finds a database's -wal and -shm files by the name the database
was opened by. A connection opened before a rename still reaches for ``<old name>-wal`` and ``-shm``: the last one
to close deletes them, and one opening its -shm resets it, so a fresh cache started under the old name loses its
log to connections still open on the damaged file, in this run's other threads or in another run ("disk I/O
error" on the fresh cache, or worse). Replacing the content through SQLite's backup API is an ordinary write
transaction on the same file: every connection, in any thread or process, sees the empty cache at its next
statement, and no file is renamed or deleted.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Callable

from lme.core import fileio
from lme.models import sqlite_store


def first_fault(conn: sqlite3.Connection, *, thorough: bool = False) -> str | None:
    """The first fault SQLite's own check finds in the file of ``conn`` (``quick_check``: every page read;
    ``thorough``: ``integrity_check``, indexes against their tables too), None when it is sound."""
    pragma = "integrity_check(1)" if thorough else "quick_check(1)"
    try:
        said = str(conn.execute(f"PRAGMA {pragma}").fetchone()[0])
    except sqlite3.DatabaseError as err:
        if sqlite_store.is_locked(err):
            raise
        return str(err)
    return None if said == "ok" else said.splitlines()[-1]  # past "*** in database main ***"


def quarantine_name(path: Path) -> Path:
    """``<name>.corrupt-<UTC time>``, numbered when that is taken (a second damage within the second)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    moved = path.with_name(f"{path.name}.corrupt-{stamp}")
    for number in range(2, 1000):
        if not any(Path(f"{moved}{suffix}").exists() for suffix in ("", "-wal")):
            return moved
        moved = path.with_name(f"{path.name}.corrupt-{stamp}-{number}")
    raise FileExistsError(f"{moved} exists")


def copy_aside(path: Path) -> Path:
    """Copy the database at ``path`` and its write-ahead log (the pages not yet in the file) to the quarantine name
    and ``<that>-wal``, durably; returns the quarantine name. Nothing is moved: connections keep their files."""
    moved = quarantine_name(path)
    for suffix in ("", "-wal"):
        source = Path(f"{path}{suffix}")
        if suffix and not source.is_file():
            continue
        with fileio.open_file(source, "rb") as src, fileio.open_file(f"{moved}{suffix}", "xb") as dest:
            shutil.copyfileobj(src, dest, 1 << 20)
            dest.flush()
            os.fsync(dest.fileno())
    fileio.fsync_dir(path.parent)
    return moved


def reset_in_place(path: Path, build: Callable[[sqlite3.Connection], None]) -> Path:
    """Keep the damaged database at ``path`` aside (``copy_aside``, under its write lock so no writer changes it
    meanwhile), then replace its content by an empty database that ``build`` lays out; returns the copy's name.
    Raises ``sqlite3.DatabaseError`` (nothing copied, nothing changed) when SQLite cannot write the file at all (a
    damaged header), ``OSError`` when the copy cannot be made (the file is left as it was)."""
    conn = sqlite_store.connect(path)
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
            moved = copy_aside(path)
        finally:
            conn.execute("ROLLBACK")
        empty = sqlite3.connect(":memory:", isolation_level=None)
        try:
            empty.execute(f"PRAGMA page_size={page_size}")  # a WAL file takes a backup of its own page size only
            build(empty)
            empty.backup(conn)
        finally:
            empty.close()
    finally:
        conn.close()
    return moved
