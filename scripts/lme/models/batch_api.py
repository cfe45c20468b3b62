"""The providers' Batch APIs through the official SDKs: OpenAI Files + Batches, Anthropic Message Batches.

``batches_for(provider, settings)`` gives an adapter with one shape for both; its ``find`` recovers a batch created for
a chunk whose ``submitted`` event a crash cut off. ``parse_line`` turns one result line into a ``Completion``
(``pricing`` ``batch``) or the ``ProviderError`` the synchronous path would have raised for the same answer (``replies``
reads both). Every HTTP call goes through the one retry policy.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from lme.core import fileio
from lme.models import provider_errors, replies, retries
from lme.models.provider_errors import ProviderError
from lme.models.provider_routes import ProviderSettings, _POOL, _route
from lme.core.records import ChatRequest, Completion

OPENAI_ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
OPENAI_ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
LIMITS = {"openai": (50_000, 190 * 1024 * 1024), "anthropic": (100_000, 240 * 1024 * 1024)}
"""(requests, serialized bytes) per batch: the providers' 50,000 / 200 MB and 100,000 / 256 MB, with margins."""
SUPPORTED = ("openai", "anthropic")


@dataclass(frozen=True)
class Remote:
    """A batch as the provider reports it."""

    batch_id: str
    status: str
    ended: bool
    counts: Mapping[str, Any] = field(default_factory=dict)
    output_file_id: str | None = None
    error_file_id: str | None = None
    errors: tuple[str, ...] = ()
    """OpenAI ``errors.data`` (validation of the input file), as ``code line: message``."""


def _counts(obj: Any) -> dict[str, Any]:
    counts = getattr(obj, "request_counts", None)
    if counts is None:
        return {}
    dump = counts.model_dump() if hasattr(counts, "model_dump") else dict(counts)
    return {k: v for k, v in dump.items() if v is not None}


class _Batches:
    provider = ""

    def __init__(self, client: Any, settings: ProviderSettings) -> None:
        self.client = client
        self.settings = settings

    def _call(self, what: str, fn: Any) -> Any:
        result, _ = retries.call_with_retries(fn, provider=self.provider, model=f"batch {what}",
                                              settings=self.settings)
        return result


class OpenAIBatches(_Batches):
    provider = "openai"

    def upload(self, path: Path) -> str:
        def go() -> str:
            with fileio.open_file(path, "rb") as fh:
                return self.client.files.create(file=(Path(path).name, fh), purpose="batch").id
        return self._call("upload", go)

    def create(self, file_id: str, metadata: Mapping[str, str]) -> str:
        return self._call("create", lambda: self.client.batches.create(
            input_file_id=file_id, endpoint=OPENAI_ENDPOINT, completion_window=COMPLETION_WINDOW,
            metadata=dict(metadata)).id)

    def find(self, metadata: Mapping[str, str], since: float, known: set[str], size: int) -> str | None:
        """The newest batch carrying ``metadata`` created after ``since`` (list is newest first)."""
        def go() -> str | None:
            for batch in self.client.batches.list(limit=100):
                if float(batch.created_at or 0) < since:
                    return None
                meta = dict(batch.metadata or {})
                if batch.id not in known and all(meta.get(k) == v for k, v in metadata.items()):
                    return batch.id
            return None
        return self._call("list", go)

    def retrieve(self, batch_id: str) -> Remote:
        batch = self._call("retrieve", lambda: self.client.batches.retrieve(batch_id))
        errors = tuple(f"{e.code} line {e.line}: {e.message}" for e in ((batch.errors.data or [])
                                                                         if batch.errors else []))
        return Remote(batch.id, batch.status, batch.status in OPENAI_ENDED, _counts(batch),
                      batch.output_file_id, batch.error_file_id, errors)

    def results(self, remote: Remote) -> bytes:
        parts = []
        for file_id in (remote.output_file_id, remote.error_file_id):
            if file_id:
                data = self._call("download", lambda f=file_id: self.client.files.content(f).read())
                parts.append(data if data.endswith(b"\n") or not data else data + b"\n")
        return b"".join(parts)

    def cancel(self, batch_id: str) -> None:
        self._call("cancel", lambda: self.client.batches.cancel(batch_id))


class AnthropicBatches(_Batches):
    provider = "anthropic"

    def create(self, requests: Sequence[Mapping[str, Any]]) -> str:
        return self._call("create", lambda: self.client.messages.batches.create(requests=list(requests)).id)

    def find(self, metadata: Mapping[str, str], since: float, known: set[str], size: int) -> str | None:
        """Anthropic batches carry no metadata: the newest unledgered batch created after ``since`` with ``size``
        requests (the collect step checks its custom_ids before any result is used)."""
        def go() -> str | None:
            for batch in self.client.messages.batches.list(limit=100):
                if batch.created_at.timestamp() < since:
                    return None
                if batch.id not in known and sum(int(v or 0) for v in _counts(batch).values()) == size:
                    return batch.id
            return None
        return self._call("list", go)

    def retrieve(self, batch_id: str) -> Remote:
        batch = self._call("retrieve", lambda: self.client.messages.batches.retrieve(batch_id))
        return Remote(batch.id, batch.processing_status, batch.processing_status == "ended", _counts(batch))

    def results(self, remote: Remote) -> bytes:
        def go() -> bytes:
            return b"".join((json.dumps(r.model_dump(mode="json"), ensure_ascii=False) + "\n").encode("utf-8")
                            for r in self.client.messages.batches.results(remote.batch_id))
        return self._call("results", go)

    def cancel(self, batch_id: str) -> None:
        self._call("cancel", lambda: self.client.messages.batches.cancel(batch_id))


def batches_for(provider: str, settings: ProviderSettings) -> OpenAIBatches | AnthropicBatches:
    route = _route(provider, settings)
    client = route.client(settings.timeout_s)
    return AnthropicBatches(client, settings) if route.kind == "anthropic" else OpenAIBatches(client, settings)


def rejects_temperature(model: str) -> bool:
    return _POOL.rejects_temperature(model)


# --------------------------------------------------------------------------- one result line


def _status_error(status: int, message: str, where: str) -> ProviderError:
    kind, retryable = provider_errors.status_kind(status, message)
    return ProviderError(kind, f"{where}: HTTP {status} in a batch: {message}", status=status, retryable=retryable)


_ANTHROPIC_STATUS = {"rate_limit_error": 429, "api_error": 500, "overloaded_error": 529, "timeout_error": 408,
                     "authentication_error": 401, "permission_error": 403, "not_found_error": 404,
                     "invalid_request_error": 400, "billing_error": 400}


def parse_line(provider_kind: str, line: Mapping[str, Any], *, provider: str, model: str, allow_empty: bool,
               batch_id: str, request: ChatRequest | None = None) -> Any:
    """A ``Completion`` for an answered request (its reply read by ``replies``, as the synchronous path reads it;
    a missing usage estimated from ``request``'s prompt when given), else a ``ProviderError`` (``batch_expired`` /
    ``batch_cancelled`` for requests the provider never ran)."""
    where = f"{provider} {model}"
    if provider_kind == "anthropic":
        result = dict(line.get("result") or {})
        kind = result.get("type")
        if kind in ("expired", "canceled"):
            return ProviderError(f"batch_{'expired' if kind == 'expired' else 'cancelled'}",
                                 f"{where}: the batch {batch_id} ended before this request ran ({kind})",
                                 retryable=kind == "expired")
        if kind != "succeeded":
            error = dict((result.get("error") or {}).get("error") or {})
            status = _ANTHROPIC_STATUS.get(str(error.get("type")), 400)
            return _status_error(status, str(error.get("message", "")), where)
        body, request_id = result.get("message"), None
    else:
        response = line.get("response")
        if not response:
            code = str((line.get("error") or {}).get("code") or "batch_expired")
            kind = "batch_cancelled" if "cancel" in code else "batch_expired"
            return ProviderError(kind, f"{where}: the batch {batch_id} ended before this request ran ({code})",
                                 retryable=kind == "batch_expired")
        status = int(response.get("status_code") or 0)
        body = response.get("body")
        if status != 200:
            error = body.get("error") if isinstance(body, dict) else None
            return _status_error(status, str((error or {}).get("message", body)), where)
        request_id = response.get("request_id")
    try:
        reply = replies.read(provider_kind, body or {}, where=f"{where} in batch {batch_id}", allow_empty=allow_empty)
    except ProviderError as err:
        return err
    tokens_in, tokens_out = reply.usage(request)
    return Completion(text=reply.text, tokensIn=tokens_in, tokensOut=tokens_out, latencyMs=0.0, provider=provider,
                      model=str(reply.model or model), request_id=request_id or reply.reply_id, attempts=1,
                      stop_reason=reply.stop_reason, pricing="batch", batch_id=batch_id)
