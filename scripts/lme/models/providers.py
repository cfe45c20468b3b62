"""The one call shape over the official ``anthropic`` / ``openai`` SDKs, with the one retry policy.

``complete(ChatRequest) -> Completion`` routes on ``request.provider``:

- ``anthropic``: Messages API, ``system`` as the system parameter. Key: ``ANTHROPIC_API_KEY``. The SDK (1.x+)
  no longer takes ``temperature`` and newer Claude models reject it, so it goes in ``extra_body``; a model that
  answers 400 about it is called again without it, and left without it for the rest of the process.
- ``openai``: Chat Completions, ``system`` as a first system message, ``n`` sent only when set.
  Key: ``OPENAI_API_KEY``.
- any other name with a base URL in ``ProviderSettings.base_urls`` (``openai-compatible``, ``vllm``, ``ollama``,
  ``openrouter``...): Chat Completions at that URL. Key: ``<NAME>_API_KEY`` (e.g. ``OPENROUTER_API_KEY``), else
  ``OPENAI_API_KEY``, else the placeholder ``EMPTY`` that local servers accept.
- ``azure``: Azure OpenAI through the ``openai`` SDK's ``AzureOpenAI`` client: Chat Completions at
  ``<endpoint>/openai/deployments/<deployment>/chat/completions?api-version=<api_version>``, the three named in
  ``ProviderSettings.azure`` (config ``providers.azure``; the endpoint may also come from ``AZURE_OPENAI_ENDPOINT``).
  Key: ``AZURE_OPENAI_API_KEY``. The request's ``model`` stays the snapshot (``gpt-4o-2024-08-06``) the deployment
  serves: that is what the cache, the verdict archive and the official check key on.
- ``offline``: no chat model; the offline target and offline judge never call this module.

Base URLs: ``settings.base_urls[provider]`` when given, else the SDKs' own ``OPENAI_BASE_URL`` /
``ANTHROPIC_BASE_URL``. The reply is read by ``replies``, as the batch path reads it. Keys never appear in a
Completion or in an error message.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Sequence

from lme.models import replies
from lme.models.provider_errors import ProviderError
from lme.models.provider_routes import (  # noqa: F401
    ProviderSettings,
    _POOL,
    _rejects_temperature,
    _route,
    azure_target,
    endpoint_host,
    resolved_base_url,
    shown_base_url,
)
from lme.core.records import ChatRequest, Completion, Limiter
from lme.models.request_bodies import anthropic_body, openai_body
from lme.models.retries import OnRetry, TokenDraw, call_with_retries  # noqa: F401
from lme.models.token_counts import count_tokens_how, estimate_tokens, pacing_tokens  # noqa: F401

EMBED_BATCH = 256


@dataclass(frozen=True)
class _Reply:
    """One answered attempt: the SDK's reply, what it says (``replies``) and its headers (``rate_headers`` reads
    them)."""

    response: Any
    parsed: replies.Reply | None
    headers: Any = None

    @property
    def input_tokens(self) -> int | None:
        return None if self.parsed is None else self.parsed.tokens_in


def _answered(raw: Any) -> tuple[Any, Any]:
    """``(parsed reply, headers)`` of a ``with_raw_response`` call: the SDK's own way to read the headers; the
    request it sends is the same (body byte for byte)."""
    return raw.parse(), raw.headers


def _send_anthropic(client: Any, request: ChatRequest, timeout: float) -> _Reply:
    if request.n not in (None, 1):
        raise ProviderError("bad_request", f"anthropic {request.model}: n={request.n} is not supported (only 1)")
    send_temperature = request.temperature is not None and not _POOL.rejects_temperature(request.model)
    body = anthropic_body(request, temperature=send_temperature)
    kwargs: dict[str, Any] = {k: v for k, v in body.items() if k != "temperature"}
    kwargs["timeout"] = timeout
    if send_temperature:  # the SDK no longer takes it as an argument: the same body key, through extra_body
        kwargs["extra_body"] = {"temperature": body["temperature"]}
    try:
        message, headers = _answered(client.messages.with_raw_response.create(**kwargs))
    except Exception as exc:
        if not (send_temperature and _rejects_temperature(exc)):
            raise
        _POOL.mark_rejects_temperature(request.model)
        kwargs.pop("extra_body")
        message, headers = _answered(client.messages.with_raw_response.create(**kwargs))
    return _read(route_kind="anthropic", response=message, headers=headers, request=request)


def _send_openai(client: Any, request: ChatRequest, timeout: float) -> _Reply:
    kwargs: dict[str, Any] = {**openai_body(request), "timeout": timeout}
    response, headers = _answered(client.chat.completions.with_raw_response.create(**kwargs))
    return _read(route_kind="openai", response=response, headers=headers, request=request)


def _read(*, route_kind: str, response: Any, headers: Any, request: ChatRequest) -> _Reply:
    try:
        parsed = replies.read(route_kind, response, where=f"{request.provider} {request.model}",
                              allow_empty=request.allow_empty)
    except ProviderError as err:
        err.headers = headers  # an answered call that we refuse (empty, refusal) still drew on the budget
        raise
    return _Reply(response, parsed, headers)


def complete(
    request: ChatRequest,
    *,
    settings: ProviderSettings | None = None,
    limiter: Limiter | None = None,
    on_retry: OnRetry | None = None,
) -> Completion:
    """Send ``request`` to its provider under the retry policy. ``latencyMs`` is the wall time of all attempts."""
    settings = settings or ProviderSettings()
    route = _route(request.provider, settings)
    client = route.client(settings.timeout_s)
    send = _send_anthropic if route.kind == "anthropic" else _send_openai
    started = time.monotonic()
    reply, attempts = call_with_retries(
        lambda: send(client, request, settings.timeout_s),
        provider=request.provider,
        model=request.model,
        settings=settings,
        limiter=limiter,
        on_retry=on_retry,
        draw=TokenDraw(lambda: pacing_tokens(request),  # OpenAI counts max_tokens
                       extra_tokens=0 if route.kind == "anthropic" else int(request.max_tokens or 0)),
    )
    parsed, response = reply.parsed, reply.response
    tokens_in, tokens_out = parsed.usage(request)
    return Completion(
        text=parsed.text,
        tokensIn=tokens_in,
        tokensOut=tokens_out,
        latencyMs=round((time.monotonic() - started) * 1000.0, 3),
        provider=request.provider,
        model=str(parsed.model or request.model),
        request_id=getattr(response, "_request_id", None) or parsed.reply_id,
        attempts=attempts,
        stop_reason=parsed.stop_reason,
        endpoint_host=endpoint_host(request.provider, settings),
    )


def embed(
    provider: str,
    model: str,
    texts: Sequence[str],
    *,
    settings: ProviderSettings | None = None,
    limiter: Limiter | None = None,
    on_retry: OnRetry | None = None,
) -> list[list[float]]:
    """Embeddings through the OpenAI embeddings API (``openai`` or an OpenAI-compatible base URL), in order."""
    settings = settings or ProviderSettings()
    route = _route(provider, settings)
    if route.kind != "openai":
        raise ProviderError("bad_request", f"{provider} has no embeddings API here: use openai (e.g. "
                            "text-embedding-3-small) or an OpenAI-compatible base URL")
    client = route.client(settings.timeout_s)
    vectors: list[list[float]] = []
    for start in range(0, len(texts), EMBED_BATCH):
        batch = [str(t) for t in texts[start : start + EMBED_BATCH]]

        def attempt(batch: list[str] = batch) -> _Reply:
            response, headers = _answered(client.embeddings.with_raw_response.create(
                model=model, input=batch, encoding_format="float", timeout=settings.timeout_s))
            if len(response.data) != len(batch):
                err = ProviderError("malformed", f"{provider} {model}: {len(response.data)} embeddings for "
                                    f"{len(batch)} texts", retryable=True)
                err.headers = headers
                raise err
            return _Reply(response, None, headers)

        reply, _ = call_with_retries(attempt, provider=provider, model=model, settings=settings, limiter=limiter,
                                     on_retry=on_retry, draw=TokenDraw(sum(estimate_tokens(t) for t in batch)))
        response = reply.response
        vectors.extend(list(item.embedding) for item in sorted(response.data, key=lambda d: d.index))
    return vectors


class Gateway:
    """The ``LLM`` protocol over this module: one object that serves every provider of a model stack."""

    def __init__(
        self,
        settings: ProviderSettings | None = None,
        *,
        limiter: Limiter | None = None,
        on_retry: OnRetry | None = None,
    ) -> None:
        self.settings = settings or ProviderSettings()
        self.limiter = limiter
        self.on_retry = on_retry

    def complete(self, request: ChatRequest) -> Completion:
        return complete(request, settings=self.settings, limiter=self.limiter, on_retry=self.on_retry)

    def embed(self, provider: str, model: str, texts: Sequence[str]) -> list[list[float]]:
        return embed(provider, model, texts, settings=self.settings, limiter=self.limiter, on_retry=self.on_retry)
