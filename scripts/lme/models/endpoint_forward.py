"""One request a memory system sent to the target endpoint (``target_endpoint``), sent on through the run's own
provider layer: the call cache, the run's pacer, the retry policy, the route's key and base URL, and a
``CallRecord`` for the item's row.

The request body goes to the provider as it came (the official SDK's generic ``post``: no field is dropped or
added; ``stream`` and ``stream_options`` excepted, since the call is made whole and told back as a stream by
``endpoint_sse``), with the key of the run's route, never the client's. The cache key is the exact body and the
route (``cache_key``), the same rule as the run's own target calls (a target call is not bound to a host); a reply
is cached only when it holds one (``choices``, ``content``, ``data``: an empty ``{}`` is retried as malformed, as
the run's own calls are). A provider's error reaches the client as the provider's status and body once the retry
policy gave up, with ``x-should-retry: false`` (the SDKs' own retries would only repeat ours); an error with no
HTTP reply (connection, timeout, a key that is not set) is a 502 / 504 / 401 in the API's own error shape.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Mapping

from lme.core.records import CallRecord
from lme.models import provider_routes
from lme.models.provider_errors import ProviderError
from lme.models.retries import TokenDraw, call_with_retries
from lme.models.token_counts import estimate_tokens

API_CHAT, API_EMBEDDINGS, API_MESSAGES = "chat.completions", "embeddings", "messages"
APIS = {"v1/chat/completions": API_CHAT, "v1/embeddings": API_EMBEDDINGS, "v1/messages": API_MESSAGES}
"""The endpoint's routes (the path after ``/t/<token>/``) and the API each one is."""
SDK_PATHS = {API_CHAT: "/chat/completions", API_EMBEDDINGS: "/embeddings", API_MESSAGES: "/v1/messages"}
"""Each API's path under the route's SDK client base URL (OpenAI's base URL ends in ``/v1``)."""
REPLY_FIELD = {API_CHAT: "choices", API_EMBEDDINGS: "data", API_MESSAGES: "content"}
"""The field a reply body must hold to be a reply (cached, priced), else it is malformed."""
FORWARDED_HEADERS = ("anthropic-beta",)
"""Request headers that change what the model is asked: sent on, and part of the cache key."""
STREAM_KEYS = ("stream", "stream_options")
ROLE = "memory-system"
"""The ``role`` of a call the memory system made through the endpoint, in its row's ``calls``."""
_RAW_RESPONSE = {"X-Stainless-Raw-Response": "true"}
"""What the SDKs' ``with_raw_response`` sets: ``post`` then returns the raw reply (status, headers, body)."""
_NO_RETRY = {"x-should-retry": "false"}
_STATUS_OF_KIND = {"timeout": 504, "auth": 401, "bad_request": 400, "not_found": 404, "too_large_for_tpm": 429}
_ANTHROPIC_ERROR_TYPE = {"rate_limit": "rate_limit_error", "too_large_for_tpm": "rate_limit_error",
                         "auth": "authentication_error", "bad_request": "invalid_request_error",
                         "not_found": "not_found_error"}


@dataclass(frozen=True)
class EndpointRoutes:
    """Which of the run's provider routes each API surface calls: OpenAI's (chat, embeddings) and Anthropic's."""

    openai: str = "openai"
    anthropic: str = "anthropic"

    @classmethod
    def for_target(cls, target_provider: str) -> "EndpointRoutes":
        """The run's target provider serves the OpenAI surface when it speaks OpenAI's API (``openai``, ``azure``,
        a server with a base URL), else ``openai`` does; ``anthropic`` serves Messages."""
        openai_route = target_provider if target_provider not in ("anthropic", "offline") else "openai"
        return cls(openai=openai_route)

    def provider_for(self, api: str) -> str:
        return self.anthropic if api == API_MESSAGES else self.openai


@dataclass(frozen=True)
class Forwarded:
    """What the endpoint answers: the status, the JSON body, the parsed reply (None: an error), and the call."""

    status: int
    body: bytes
    reply: Mapping[str, Any] | None
    call: CallRecord
    headers: Mapping[str, str]


def error_body(api: str, kind: str, message: str) -> bytes:
    """An error in the shape of ``api``'s own errors (what the client's SDK reads its message from)."""
    if api == API_MESSAGES:
        payload: dict[str, Any] = {"type": "error", "error": {"type": _ANTHROPIC_ERROR_TYPE.get(kind, "api_error"),
                                                              "message": message}}
    else:
        payload = {"error": {"message": message, "type": kind, "param": None, "code": kind}}
    return json.dumps(payload).encode("utf-8")


def cache_key(api: str, provider: str, body: Mapping[str, Any], headers: Mapping[str, str]) -> str:
    """The content address of a forwarded call: the API, the route, the headers that change it, the exact body."""
    blob = json.dumps({"target_endpoint": api, "provider": provider, "headers": dict(headers), "body": body},
                      sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _prompt_tokens(body: Mapping[str, Any]) -> int:
    """What a call draws on the pacer's tokens-per-minute budget before the provider says (an estimate)."""
    asked = {k: body[k] for k in ("system", "messages", "input", "tools") if k in body}
    return estimate_tokens(json.dumps(asked, ensure_ascii=False))


def _reply_text(api: str, reply: Mapping[str, Any]) -> str | None:
    if api == API_MESSAGES:
        return "".join(str(b.get("text", "")) for b in reply.get("content") or () if isinstance(b, Mapping)
                       and b.get("type") == "text")
    if api == API_CHAT:
        choices = reply.get("choices") or [{}]
        message = choices[0].get("message") if isinstance(choices[0], Mapping) else None
        return message.get("content") if isinstance(message, Mapping) else None
    return None


def _stop_reason(api: str, reply: Mapping[str, Any]) -> str | None:
    if api == API_MESSAGES:
        return reply.get("stop_reason")
    choices = reply.get("choices") or [{}]
    return choices[0].get("finish_reason") if api == API_CHAT and isinstance(choices[0], Mapping) else None


def _tokens(api: str, reply: Mapping[str, Any], body: Mapping[str, Any]) -> tuple[int, int]:
    """The reply's usage (estimated when it reports none, as the run's own calls are)."""
    usage = reply.get("usage") if isinstance(reply.get("usage"), Mapping) else {}
    tokens_in = usage.get("input_tokens") if api == API_MESSAGES else usage.get("prompt_tokens")
    tokens_out = usage.get("output_tokens") if api == API_MESSAGES else usage.get("completion_tokens")
    if not isinstance(tokens_in, int):
        tokens_in = _prompt_tokens(body)
    if not isinstance(tokens_out, int):
        tokens_out = estimate_tokens(_reply_text(api, reply) or "")
    return int(tokens_in), int(tokens_out)


@dataclass(frozen=True)
class _Answer:
    """One answered attempt (what the retry policy hands the pacer: ``headers``, ``input_tokens``)."""

    reply: Mapping[str, Any]
    headers: Any
    input_tokens: int | None


class _LastFailure:
    """The provider's HTTP reply to the last failed attempt: what the client gets once the retries gave up."""

    def __init__(self) -> None:
        self.status: int | None = None
        self.body = b""
        self.content_type = "application/json"

    def remember(self, exc: BaseException) -> None:
        response = getattr(exc, "response", None)
        status = getattr(response, "status_code", None)
        if not isinstance(status, int):
            self.status = None
            return
        self.status = status
        self.body = bytes(getattr(response, "content", b"") or b"")
        self.content_type = str(response.headers.get("content-type") or "application/json")


@dataclass(frozen=True)
class _Call:
    """One request as it is forwarded: its API, route, body (without the stream keys) and cache key."""

    api: str
    provider: str
    body: Mapping[str, Any]
    headers: Mapping[str, str]

    @property
    def model(self) -> str:
        return str(self.body.get("model") or "")

    @property
    def key(self) -> str:
        return cache_key(self.api, self.provider, self.body, self.headers)


class Forwarder:
    """Forwards the endpoint's requests through a run's gateway (``run_gateway.RunGateway``: its provider
    settings, cache, pacer and counters)."""

    def __init__(self, gateway: Any, routes: EndpointRoutes) -> None:
        self.gateway = gateway
        self.routes = routes
        self.settings = gateway.settings or provider_routes.ProviderSettings()
        self._lock = threading.Lock()
        self.forwarded = 0
        """Requests this forwarder answered (cache hits and errors included)."""

    def forward(self, api: str, request: Mapping[str, Any], headers: Mapping[str, str]) -> Forwarded:
        """Answer one request of ``api`` (``request``: its JSON body; ``headers``: lower-cased)."""
        with self._lock:
            self.forwarded += 1
        call = _Call(api, self.routes.provider_for(api), {k: v for k, v in request.items() if k not in STREAM_KEYS},
                     {h: headers[h] for h in FORWARDED_HEADERS if h in headers})
        cache = self.gateway.cache
        stored = None if cache is None else self.gateway.lookup(cache.get_body, call.key)
        if stored is not None:
            self.gateway.stats.on_call(cached=True)
            return self._answered(call, stored, attempts=0, latency_ms=0.0, request_id=None, cached=True)
        started = time.monotonic()
        failure = _LastFailure()
        try:
            answer, attempts = self._send(call, failure)
        except ProviderError as err:
            return self._refused(call, err, failure, latency_ms=(time.monotonic() - started) * 1000.0)
        self.gateway.stats.on_call(cached=False)
        if cache is not None:
            self.gateway.store(cache.put_body, call.key, call.provider, call.model,
                               {"api": call.api, "headers": dict(call.headers), "body": call.body}, answer.reply)
        request_id = answer.headers.get("x-request-id") or answer.headers.get("request-id")
        return self._answered(call, answer.reply, attempts=attempts, latency_ms=(time.monotonic() - started) * 1000.0,
                              request_id=request_id, cached=False)

    def _send(self, call: _Call, failure: _LastFailure) -> tuple[_Answer, int]:
        settings = self.settings
        route = provider_routes._route(call.provider, settings)
        client = route.client(settings.timeout_s)
        where = f"{call.provider} {call.model} (target endpoint)"
        options = {"headers": {**_RAW_RESPONSE, **call.headers}, "timeout": settings.timeout_s}

        def attempt() -> _Answer:
            try:
                raw = client.post(SDK_PATHS[call.api], body=dict(call.body), cast_to=object, options=options)
            except Exception as exc:
                failure.remember(exc)
                raise
            failure.status = None
            try:
                reply = json.loads(raw.http_response.content)
            except ValueError:
                raise ProviderError("malformed", f"{where}: the reply body is not JSON", retryable=True) from None
            if not isinstance(reply, dict) or reply.get(REPLY_FIELD[call.api]) is None:
                raise ProviderError("malformed", f"{where}: the reply holds no {REPLY_FIELD[call.api]}",
                                    retryable=True)
            usage = reply.get("usage") if isinstance(reply.get("usage"), Mapping) else {}
            used = usage.get("input_tokens", usage.get("prompt_tokens"))
            return _Answer(reply, raw.headers, used if isinstance(used, int) else None)

        extra = 0 if route.kind == "anthropic" else int(call.body.get("max_tokens")
                                                        or call.body.get("max_completion_tokens") or 0)
        return call_with_retries(attempt, provider=call.provider, model=call.model, settings=settings,
                                 limiter=self.gateway.limiter, on_retry=self.gateway.stats.on_retry,
                                 draw=TokenDraw(lambda: _prompt_tokens(call.body), extra_tokens=extra))

    def _record(self, call: _Call, fields: Mapping[str, Any]) -> CallRecord:
        return CallRecord.from_dict({"provider": call.provider, "role": ROLE, **fields,
                                     "endpoint_host": provider_routes.endpoint_host(call.provider, self.settings),
                                     "api": call.api})

    def _answered(self, call: _Call, reply: Mapping[str, Any], *, attempts: int, latency_ms: float,
                  request_id: str | None, cached: bool) -> Forwarded:
        tokens_in, tokens_out = _tokens(call.api, reply, call.body)
        record = self._record(call, {
            "model": str(reply.get("model") or call.model), "tokensIn": tokens_in, "tokensOut": tokens_out,
            "latencyMs": round(latency_ms, 3), "attempts": attempts, "cached": cached,
            "stop_reason": _stop_reason(call.api, reply), "request_id": request_id or reply.get("id"),
            "text": _reply_text(call.api, reply)})
        body = json.dumps(reply, ensure_ascii=False).encode("utf-8")
        return Forwarded(200, body, reply, record, {})

    def _refused(self, call: _Call, err: ProviderError, failure: _LastFailure, *, latency_ms: float) -> Forwarded:
        """The client's answer to a call the retry policy gave up on: the provider's own reply when there was one."""
        record = self._record(call, {"model": call.model, "tokensIn": 0, "tokensOut": 0,
                                     "latencyMs": round(latency_ms, 3), "attempts": err.attempts, "cached": False,
                                     "error": {"kind": err.kind, "status": failure.status or err.status,
                                               "message": err.message[:500]}})
        if failure.status is not None:
            headers = {**_NO_RETRY, "content-type": failure.content_type}
            return Forwarded(failure.status, failure.body, None, record, headers)
        status = _STATUS_OF_KIND.get(err.kind, err.status or 502)
        return Forwarded(status, error_body(call.api, err.kind, str(err)), None, record, dict(_NO_RETRY))
