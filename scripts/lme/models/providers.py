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
``ANTHROPIC_BASE_URL``. A 200 whose body holds no reply at all (``{}``) is ``malformed`` and retried like an
unparseable body; an empty reply (no choices, no text) is ``malformed`` (not retried) and a refusal ``refusal``; a request
with ``allow_empty`` (the judge's: upstream labels an empty reply False) gets an empty or blank text back. Each
attempt goes through the limiter (a pacer reserves its model and input tokens: ``rate_pacer``) and reports the
reply's headers, read through the SDKs' ``with_raw_response``.

The parts: ``provider_routes`` (routes, settings, the shared SDK clients), ``provider_errors`` (``ProviderError``
and the classification of SDK errors), ``retries`` (the one retry policy), ``token_counts`` (exact and estimated
input tokens). Keys never appear in a Completion or in an error message.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Sequence

from lme.models.provider_errors import KINDS, ProviderError, classify, empty_reply, scrub  # noqa: F401  (the provider layer's interface)
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
from lme.models.request_bodies import anthropic_body, openai_body, request_body  # noqa: F401  (request_body: batches)
from lme.models.retries import OnRetry, TokenDraw, call_with_retries  # noqa: F401
from lme.models.token_counts import count_tokens, count_tokens_how, estimate_tokens, pacing_tokens  # noqa: F401

EMBED_BATCH = 256


@dataclass(frozen=True)
class _Reply:
    """One answered attempt: the parsed reply and what its headers say (``rate_headers`` reads them)."""

    text: str
    response: Any
    stop_reason: str | None
    headers: Any = None

    @property
    def input_tokens(self) -> int | None:
        usage = getattr(self.response, "usage", None)
        value = getattr(usage, "input_tokens", None) or getattr(usage, "prompt_tokens", None)
        return int(value) if isinstance(value, (int, float)) else None


def _answered(raw: Any) -> tuple[Any, Any]:
    """``(parsed reply, headers)`` of a ``with_raw_response`` call: the SDK's own way to read the headers; the
    request it sends is the same (body byte for byte)."""
    return raw.parse(), raw.headers


def _failed_reply(err: ProviderError, headers: Any) -> ProviderError:
    err.headers = headers  # an answered call that we refuse (empty, refusal) still drew on the budget
    return err


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
    where = f"anthropic {request.model}"
    if getattr(message, "content", None) is None:  # a 200 whose body holds no message (``{}``): retried
        raise _failed_reply(ProviderError("malformed", f"{where}: the reply holds no message (no content field)",
                                          retryable=True), headers)
    if message.stop_reason == "refusal":
        raise _failed_reply(ProviderError("refusal", f"{where}: the model refused to answer (stop_reason refusal)"),
                            headers)
    text = "".join(getattr(b, "text", "") for b in (message.content or ()) if getattr(b, "type", "") == "text")
    if not text.strip() and not request.allow_empty:
        raise _failed_reply(empty_reply(where, message.stop_reason, "no text content"), headers)
    return _Reply(text, message, message.stop_reason, headers)


def _send_openai(client: Any, request: ChatRequest, timeout: float) -> _Reply:
    kwargs: dict[str, Any] = {**openai_body(request), "timeout": timeout}
    response, headers = _answered(client.chat.completions.with_raw_response.create(**kwargs))
    where = f"{request.provider} {request.model}"
    if isinstance(response, (str, bytes)) or getattr(response, "choices", None) is None:  # ``{}``: retried
        raise _failed_reply(ProviderError("malformed", f"{where}: the reply holds no completion (no choices field)",
                                          retryable=True), headers)
    if not response.choices:
        raise _failed_reply(ProviderError("malformed", f"{where}: empty reply (no choices)"), headers)
    choice = response.choices[0]
    message = getattr(choice, "message", None)
    if message is None:
        raise _failed_reply(ProviderError("malformed", f"{where}: empty reply (a choice without a message)"), headers)
    refusal = getattr(message, "refusal", None)
    if refusal:
        raise _failed_reply(ProviderError("refusal", f"{where}: the model refused to answer ({str(refusal)[:200]})"),
                            headers)
    text = message.content
    if not isinstance(text, str) or (not text.strip() and not request.allow_empty):
        raise _failed_reply(empty_reply(where, choice.finish_reason, "no message content"), headers)
    return _Reply(text, response, choice.finish_reason, headers)


def _usage(response: Any, request: ChatRequest, text: str) -> tuple[int, int]:
    usage = getattr(response, "usage", None)
    tokens_in = getattr(usage, "input_tokens", None) or getattr(usage, "prompt_tokens", None)
    tokens_out = getattr(usage, "output_tokens", None) or getattr(usage, "completion_tokens", None)
    if tokens_in is None:
        prompt = (request.system or "") + "".join(str(m.get("content", "")) for m in request.messages)
        tokens_in = estimate_tokens(prompt)
    if tokens_out is None:
        tokens_out = estimate_tokens(text)
    return int(tokens_in), int(tokens_out)



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
    text, response, stop_reason = reply.text, reply.response, reply.stop_reason
    tokens_in, tokens_out = _usage(response, request, text)
    return Completion(
        text=text,
        tokensIn=tokens_in,
        tokensOut=tokens_out,
        latencyMs=round((time.monotonic() - started) * 1000.0, 3),
        provider=request.provider,
        model=str(getattr(response, "model", None) or request.model),
        request_id=getattr(response, "_request_id", None) or getattr(response, "id", None),
        attempts=attempts,
        stop_reason=stop_reason,
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
                raise _failed_reply(ProviderError("malformed", f"{provider} {model}: {len(response.data)} embeddings "
                                                  f"for {len(batch)} texts", retryable=True), headers)
            return _Reply("", response, None, headers)

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
