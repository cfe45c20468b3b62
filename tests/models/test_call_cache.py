"""The call cache: content-addressed on every request field; --no-cache skips reads but still writes."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from lme.core.errors import UserError
from lme.models import call_cache, sqlite_store
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


def damage_pages(path, page_size=4096):
    """Every page after the first (the schema's) gets an invalid page type: each lookup meets a damaged page."""
    check = sqlite3.connect(path)
    check.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    check.close()
    data = bytearray(path.read_bytes())
    for start in range(page_size, len(data), page_size):
        data[start] = 0x77
    path.write_bytes(data)


def test_a_damaged_cache_is_moved_aside_said_in_one_line_and_replaced_by_a_fresh_one(tmp_path, capsys):
    writer = CallCache(tmp_path)
    for i in range(20):
        writer.put(request(max_tokens=i + 1), completion("x" * 3000))
    damage_pages(tmp_path / CallCache.FILE_NAME)
    cache = CallCache(tmp_path)
    assert all(cache.get(request(max_tokens=i + 1)) is None for i in range(20))  # a miss: the call is paid again
    err = capsys.readouterr().err
    moved = [p for p in tmp_path.glob(f"{CallCache.FILE_NAME}.corrupt-*") if not p.name.endswith(("-wal", "-shm"))]
    assert len(moved) == 1 and err.count("\n") == 1
    assert f"{tmp_path / CallCache.FILE_NAME}" in err and str(moved[0]) in err and "paid again" in err
    cache.put(request(), completion("fresh"))
    assert CallCache(tmp_path).get(request()).text == "fresh"  # a later run reads the fresh cache
    assert sqlite3.connect(tmp_path / CallCache.FILE_NAME).execute("PRAGMA integrity_check").fetchone() == ("ok",)


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
    monkeypatch.setattr(sqlite_store, "BUSY_TIMEOUT_S", 0.2)
    cache = CallCache(tmp_path)
    holder = hold_lock(cache.path, 1.0)
    cache.put(request(), completion())  # waits for the other process, then writes
    holder.wait()
    assert cache.get(request()).text == "yes"
    err = capsys.readouterr().err
    assert f"call cache {cache.path} is locked by" in err and "waiting" in err
    if Path("/proc/locks").is_file():
        assert f"pid {holder.pid}" in err
    assert "delete" not in err and "disk full" not in err


def test_a_lock_held_past_the_wait_is_named_never_called_a_full_disk_nor_to_be_deleted(tmp_path, capsys,
                                                                                       monkeypatch):
    monkeypatch.setattr(sqlite_store, "BUSY_TIMEOUT_S", 0.1)
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
