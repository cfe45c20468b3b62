"""Many workers opening one fresh SQLite cache at once never fail with 'database is locked'."""

from __future__ import annotations

import threading

from lme.models import sqlite_store


def test_many_threads_opening_a_fresh_file_all_get_a_wal_connection(tmp_path):
    path = tmp_path / "cache.sqlite3"
    errors: list[BaseException] = []
    modes: list[str] = []
    start = threading.Barrier(16)

    def work(n: int) -> None:
        try:
            start.wait()
            conn = sqlite_store.connect(path)
            conn.execute("CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY)")
            conn.execute("INSERT OR REPLACE INTO t VALUES (?)", (n,))
            modes.append(conn.execute("PRAGMA journal_mode").fetchone()[0])
            conn.close()
        except BaseException as err:  # noqa: BLE001 - surfaced below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and modes == ["wal"] * 16


def test_existing_keys_reads_without_creating_files_and_sees_rows_still_in_the_log(tmp_path):
    db = tmp_path / "c.sqlite3"
    assert sqlite_store.existing_keys(db, "calls", ["a"]) == set() and not db.exists()  # no file: nothing created
    writer = sqlite_store.connect(db)
    writer.execute("CREATE TABLE calls (key TEXT PRIMARY KEY)")
    writer.execute("INSERT INTO calls VALUES ('a')")
    assert sqlite_store.existing_keys(db, "calls", ["a", "b"]) == {"a"}  # read through the open writer's log
    writer.close()  # the last connection checkpoints and removes the log
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.sqlite3"]
    assert sqlite_store.existing_keys(db, "calls", ["a", "b"]) == {"a"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.sqlite3"]  # read as immutable: no -wal/-shm left
    assert sqlite_store.existing_keys(db, "no_such_table", ["a"]) == set()
