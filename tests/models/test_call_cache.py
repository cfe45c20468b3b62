"""The call cache: content-addressed on every request field; --no-cache skips reads but still writes."""

from __future__ import annotations

import gc
import sqlite3
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from lme.core.errors import UserError
from lme.models import call_cache
from lme.models.call_cache import CallCache
from lme.models.run_gateway import RunGateway
from lme.core.records import ChatRequest, Completion


def request(**over) -> ChatRequest:
    base = dict(provider="openai", model="gpt-4o", messages=({"role": "user", "content": "hi"},), max_tokens=10)
    base.update(over)
    return ChatRequest(**base)


def completion(text="yes") -> Completion:
    return Completion(text=text, tokensIn=5, tokensOut=1, latencyMs=12.0, provider="openai",
                      model="gpt-4o-2024-08-06", request_id="r1", attempts=3)


def test_identical_request_is_served_from_cache_marked_cached(tmp_path):
    cache = CallCache(tmp_path)
    assert cache.get(request()) is None
    cache.put(request(), completion())
    hit = cache.get(request())
    assert hit is not None and hit.text == "yes" and hit.cached and hit.model == "gpt-4o-2024-08-06"
    assert hit.attempts == 0 and hit.latencyMs == 0.0
    assert cache.stats() == {"hits": 1, "misses": 1}


def test_any_request_field_changes_the_key(tmp_path):
    cache = CallCache(tmp_path)
    cache.put(request(), completion())
    for changed in (
        request(model="gpt-4o-mini"),
        request(provider="anthropic"),
        request(max_tokens=11),
        request(temperature=0.5),
        request(n=1),
        request(system="be brief"),
        request(messages=({"role": "user", "content": "hi!"},)),
    ):
        assert cache.get(changed) is None


def test_no_cache_mode_skips_reads_but_refreshes_entries(tmp_path):
    CallCache(tmp_path).put(request(), completion("old"))
    fresh = CallCache(tmp_path, read=False)
    assert fresh.get(request()) is None
    fresh.put(request(), completion("new"))
    assert CallCache(tmp_path).get(request()).text == "new"


def test_cache_survives_reopen_and_records_schema_version(tmp_path):
    CallCache(tmp_path).put(request(), completion())
    CallCache(tmp_path)  # migrations are idempotent
    conn = sqlite3.connect(tmp_path / CallCache.FILE_NAME)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 2  # 2: calls.endpoint_host
    assert conn.execute("SELECT count(*) FROM calls").fetchone()[0] == 1


def damage_pages(path, page_size=4096, pages=None):
    """Give pages after the first (the schema's) an invalid page type, as a failing disk would: every page, or
    those numbered in ``pages`` (1 = the first). The log is written into the file first, so the damage is seen."""
    check = sqlite3.connect(path)
    check.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    check.close()
    data = bytearray(path.read_bytes())
    starts = range(page_size, len(data), page_size) if pages is None else [(n - 1) * page_size for n in pages]
    for start in starts:
        data[start] = 0x77
    path.write_bytes(data)
    return bytes(data)


def quarantined(directory):
    return [p for p in directory.glob(f"{CallCache.FILE_NAME}.corrupt-*") if not p.name.endswith("-wal")]


def sound(path):
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        conn.close()


def fill(cache, n=40):
    for i in range(n):
        cache.put(request(max_tokens=i + 1), completion("x" * 3000))


def test_a_cache_opened_damaged_serves_no_entry_keeps_the_file_aside_and_says_so_in_one_line(tmp_path, capsys):
    fill(CallCache(tmp_path))
    damaged = damage_pages(tmp_path / CallCache.FILE_NAME, pages=[7])  # one leaf: most entries still read
    cache = CallCache(tmp_path)  # opening reads every page: nothing is served from a file found damaged
    assert all(cache.get(request(max_tokens=i + 1)) is None for i in range(40))  # a miss: the call is paid again
    err = capsys.readouterr().err
    (moved,) = quarantined(tmp_path)
    assert err.count("\n") == 1 and err.startswith("warning: the call cache")
    assert f"{tmp_path / CallCache.FILE_NAME} is damaged" in err and str(moved) in err and "paid again" in err
    assert moved.read_bytes() == damaged  # kept aside as it was: evidence
    cache.put(request(), completion("fresh"))
    assert CallCache(tmp_path).get(request()).text == "fresh"  # a later run reads the emptied cache
    assert sound(tmp_path / CallCache.FILE_NAME) and capsys.readouterr().err == ""


def test_damage_met_mid_run_by_many_threads_is_repaired_once_and_no_old_connection_disturbs_the_cache(tmp_path,
                                                                                                    capsys):
    """The flake of the first attempt: the damaged file was renamed and a fresh one started under its name, and
    connections still open on the damaged one (other threads, another process) deleted or reset the fresh
    cache's -wal/-shm when they closed ("disk I/O error"). Here every connection outlives the repair and closes
    after it, while the repaired cache is being written."""
    cache = CallCache(tmp_path)
    fill(cache)
    path = tmp_path / CallCache.FILE_NAME
    other_process = hold_open(path)
    raw = sqlite3.connect(path)  # a connection of this process outside the cache object
    raw.execute("SELECT count(*) FROM calls").fetchone()
    start = threading.Barrier(6)

    def worker(n):
        start.wait()
        found = [cache.get(request(max_tokens=i + 1)) for i in range(40)]  # the first read meets the damage
        cache.put(request(max_tokens=100 + n), completion(f"after {n}"))
        return found

    with ThreadPoolExecutor(6) as pool:
        warm = list(pool.map(lambda _: cache.get(request(max_tokens=1)), range(6)))  # each thread's connection
        assert all(hit is not None for hit in warm)
        damage_pages(path)
        results = list(pool.map(worker, range(6)))
    assert all(hit is None for found in results for hit in found)  # nothing read from damaged pages
    err = capsys.readouterr().err
    assert err.count("is damaged") == 1 and len(quarantined(tmp_path)) == 1
    raw.close()
    other_process.stdin.close()  # the other process's connection to the damaged file closes now
    assert other_process.wait() == 0
    gc.collect()  # the pool's threads are gone: their connections close
    assert sound(path)
    reopened = CallCache(tmp_path)
    assert [reopened.get(request(max_tokens=100 + n)).text for n in range(6)] == [f"after {n}" for n in range(6)]
    assert capsys.readouterr().err == ""


HOLD_OPEN = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("SELECT count(*) FROM calls").fetchone()
print("open", flush=True)
sys.stdin.read()
conn.close()
"""


def hold_open(path):
    proc = subprocess.Popen([sys.executable, "-c", HOLD_OPEN, str(path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "open"
    return proc


def test_a_damaged_header_is_one_line_naming_the_file_and_nothing_is_moved_or_changed(tmp_path, capsys):
    fill(CallCache(tmp_path), 3)
    path = tmp_path / CallCache.FILE_NAME
    damage_pages(path, pages=[])
    data = bytearray(path.read_bytes())
    data[16:24] = b"\xff" * 8  # page size and format bytes: SQLite cannot read the file
    path.write_bytes(data)
    with pytest.raises(UserError) as refused:
        CallCache(tmp_path)
    said = str(refused.value)
    assert f"call cache {path} is damaged" in said and "cacheEnabled" in said
    assert path.read_bytes() == bytes(data) and not quarantined(tmp_path)


def test_a_cache_found_damaged_mid_run_that_cannot_be_emptied_is_a_miss_said_once(tmp_path, capsys):
    gateway = RunGateway(cache=CallCache(tmp_path))
    fill(gateway.cache, 3)
    path = tmp_path / CallCache.FILE_NAME
    damage_pages(path, pages=[])
    data = bytearray(path.read_bytes())
    data[16:24] = b"\xff" * 8
    path.write_bytes(data)
    reply = completion("paid")
    gateway._call = lambda req: reply
    assert gateway.complete(request(max_tokens=1)) is reply and gateway.complete(request(max_tokens=2)) is reply
    err = capsys.readouterr().err
    assert err.count("warning: the call cache") == 1 and f"call cache {path} is damaged" in err
    assert "disk full" not in err and path.read_bytes() == bytes(data)


HOLD_LOCK = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("held", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("ROLLBACK")
"""


def hold_lock(path, seconds):
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(path), str(seconds)], stdout=subprocess.PIPE,
                              text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_a_cache_locked_by_another_process_is_waited_for_with_a_line_naming_the_holder(tmp_path, capsys,
                                                                                        monkeypatch):
    monkeypatch.setattr(call_cache, "BUSY_NOTICE_S", 0.2)
    cache = CallCache(tmp_path)
    holder = hold_lock(cache.path, 1.0)
    cache.put(request(), completion())  # waits for the other process, then writes
    holder.wait()
    assert cache.get(request()).text == "yes"
    err = capsys.readouterr().err
    assert f"call cache {cache.path} is locked by" in err and "waiting" in err and err.count("\n") == 1
    if Path("/proc/locks").is_file():
        assert f"pid {holder.pid}" in err
    assert "delete" not in err and "disk full" not in err


def test_a_lock_held_past_the_wait_is_named_never_called_a_full_disk_nor_to_be_deleted(tmp_path, capsys,
                                                                                       monkeypatch):
    monkeypatch.setattr(call_cache, "BUSY_NOTICE_S", 0.1)
    monkeypatch.setattr(call_cache, "LOCK_WAIT_S", 0.3)
    gateway = RunGateway(cache=CallCache(tmp_path))  # a run already under way
    holder = hold_lock(tmp_path / CallCache.FILE_NAME, 1.5)
    try:
        with pytest.raises(UserError) as refused:  # a run opening it now: one line, no advice to delete it
            CallCache(tmp_path)
        said = str(refused.value)
        assert "is locked by" in said and "delete" not in said
        gateway.store(gateway.cache.put, request(), completion())  # mid-run: the cache is given up, said why
    finally:
        holder.wait()
    err = capsys.readouterr().err
    assert f"call cache {gateway.cache.path} is locked by" in err and "no longer cached" in err
    assert "disk full" not in err and "delete" not in err
