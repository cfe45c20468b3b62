"""The call cache: content-addressed on every request field; --no-cache skips reads but still writes."""

from __future__ import annotations

import sqlite3

from lme.models.call_cache import CallCache
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
