"""Many workers opening one fresh SQLite cache at once never fail with 'database is locked'."""

from __future__ import annotations

import threading

import sqlite_store


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
