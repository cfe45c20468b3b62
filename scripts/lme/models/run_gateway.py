"""The LLM a run hands to targets and the judge: the provider layer behind the call cache and the limiter.

It also keeps the run's counters (calls, retries by kind, tokens) that the progress line and run-meta show.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
import threading
from typing import Any, Sequence

from lme.models.call_cache import CacheFault, CallCache
from lme.core.facts import returned_model_matches
from lme.core.records import ChatRequest, Completion, Limiter
from lme.models import providers
from lme.models.provider_errors import answered_gone


def cacheable(request: ChatRequest, completion: Completion) -> bool:
    """A judge reply that names another model than asked (a silent swap) is not kept: the judge refuses it, and a
    cached copy would refuse every later run too."""
    return not request.judge or returned_model_matches(request.model, completion.model)


class RunStats:
    """Thread-safe counters for one run invocation."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls = 0
        self.cached_calls = 0
        self.retries = 0
        self.retries_by_kind: dict[str, int] = {}
        self.retry_wait_s = 0.0
        """Backoff sleeps before retries, summed over calls: time lost to failed attempts (429s included)."""

    def on_retry(self, event: dict[str, Any]) -> None:
        with self._lock:
            self.retries += 1
            kind = str(event.get("kind", "unknown"))
            self.retries_by_kind[kind] = self.retries_by_kind.get(kind, 0) + 1
            self.retry_wait_s += float(event.get("wait_s") or 0.0)

    def on_call(self, cached: bool) -> None:
        with self._lock:
            self.calls += 1
            if cached:
                self.cached_calls += 1

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "calls": self.calls,
                "cached_calls": self.cached_calls,
                "retries": self.retries,
                "retries_by_kind": dict(self.retries_by_kind),
                "retry_wait_s": round(self.retry_wait_s, 3),
            }


class RunGateway:
    """Implements ``records.LLM`` for a run: cache first (unless ``--no-cache``), then the provider layer."""

    def __init__(
        self,
        *,
        settings: Any = None,
        cache: CallCache | None = None,
        limiter: Limiter | None = None,
        stats: RunStats | None = None,
    ) -> None:
        self.settings = settings
        self.cache = cache
        self.limiter = limiter
        self.stats = stats or RunStats()
        self._gone: dict[tuple[str, str], Any] = {}
        """Models that answered not_found: later calls to them fail the same way without a request."""
        self._gone_lock = threading.Lock()
        self.cache_write_error: str | None = None
        """Why the cache could not be used (disk full, damaged past repair, locked past the wait); the run goes on
        without caching."""

    def host(self, request: ChatRequest) -> str | None:
        """The endpoint host ``request`` goes to (a judge call's cache entry is bound to it)."""
        return providers.endpoint_host(request.provider, self.settings)

    def cached(self, request: ChatRequest) -> Completion | None:
        """The call cache's reply for ``request`` at this gateway's host (None: not cached, or no cache)."""
        if self.cache is None:
            return None
        return self.lookup(self.cache.get, request, self.host(request) if request.judge else None)

    def lookup(self, get: Any, *args: Any) -> Any:
        """Read the cache; a cache that can no longer be read (damaged past repair, locked past the wait) is a miss
        (the call is made), said once like a write that fails (``store``)."""
        try:
            return get(*args)
        except CacheFault as err:
            self._cache_failed("read", str(err))
            return None

    def complete(self, request: ChatRequest) -> Completion:
        hit = self.cached(request)
        if hit is not None:
            self.stats.on_call(cached=True)
            return hit
        completion = self._call(request)
        if self.cache is not None and cacheable(request, completion):
            self.store(self.cache.put, request, completion)
        return completion

    def mark_gone(self, provider: str, model: str, err: providers.ProviderError) -> None:
        """``provider``'s ``model`` is known gone (the probe got 404/410): its calls fail at once, without a request."""
        with self._gone_lock:
            self._gone[(provider, model)] = err

    def store(self, put: Any, *args: Any) -> None:
        """Write to the cache; a cache that can no longer be written (disk full, damaged past repair, locked by
        another process past ``call_cache.LOCK_WAIT_S``) costs the cache, never the paid reply: the call's row keeps
        it, and one warning says why later calls are not cached."""
        try:
            put(*args)
        except CacheFault as err:  # it names the file and the fault (a lock is never a full disk)
            self._cache_failed("written", str(err))
        except (sqlite3.DatabaseError, OSError) as err:
            self._cache_failed("written", f"{err}: disk full?")

    def _cache_failed(self, verb: str, why: str) -> None:
        with self._gone_lock:
            first, self.cache_write_error = self.cache_write_error is None, why
        if first:
            print(f"warning: the call cache cannot be {verb} ({why}); replies are kept in the run's rows but no "
                  "longer cached", file=sys.stderr, flush=True)

    def gone(self, request: ChatRequest) -> providers.ProviderError | None:
        """A fresh not_found error when ``request``'s model is known gone (one exception object must not cross
        threads), else None."""
        with self._gone_lock:
            gone = self._gone.get((request.provider, request.model))
        if gone is None:
            return None
        fresh = providers.ProviderError(gone.kind, gone.message, attempts=0, status=gone.status)
        fresh.code = gone.code  # what the provider said (model_not_found, or a bare 404) stays said
        return fresh

    def _call(self, request: ChatRequest) -> Completion:
        gone = self.gone(request)
        if gone is not None:
            raise gone
        try:
            completion = providers.complete(
                request, settings=self.settings, limiter=self.limiter, on_retry=self.stats.on_retry
            )
        except providers.ProviderError as err:
            if answered_gone(err):  # a bare 404 (a proxy's missing route) says nothing of the model: not kept
                self.mark_gone(request.provider, request.model, err)
            raise
        self.stats.on_call(cached=False)
        return completion

    def complete_fresh(self, request: ChatRequest) -> Completion:
        """A real call that neither reads nor writes the cache (the judge's repeats: a cached reply would only
        repeat the first verdict, and a stored repeat would replace it)."""
        return self._call(request)

    def embed(self, provider: str, model: str, texts: Sequence[str]) -> list[list[float]]:
        keys = [
            hashlib.sha256(json.dumps([provider, model, t], ensure_ascii=False).encode()).hexdigest()
            for t in texts
        ]
        found: dict[int, list[float]] = {}
        if self.cache is not None:
            for i, key in enumerate(keys):
                vec = self.lookup(self.cache.get_embedding, key)
                if vec is not None:
                    found[i] = vec
        missing = [i for i in range(len(texts)) if i not in found]
        if missing:
            gateway = providers.Gateway(self.settings, limiter=self.limiter, on_retry=self.stats.on_retry)
            vectors = gateway.embed(provider, model, [texts[i] for i in missing])
            for i, vec in zip(missing, vectors):
                found[i] = vec
                if self.cache is not None:
                    self.store(self.cache.put_embedding, keys[i], vec)
        return [found[i] for i in range(len(texts))]
