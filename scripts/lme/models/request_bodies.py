"""The JSON body of one chat call, built once: the synchronous path and the Batch APIs send the same body.

``request_body(request, kind)`` is what the SDK puts on the wire for ``ChatRequest`` ``request``: the Chat
Completions body (``kind`` ``openai``: a first system message, ``n`` only when set) or the Messages body (``kind``
``anthropic``: ``system`` as a parameter, ``temperature`` unless the model rejects it). A batch line carries it as
its ``body`` (OpenAI) or ``params`` (Anthropic), so cache keys, prompt hashes and judge parity hold for batches.
"""

from __future__ import annotations

from typing import Any

from lme.core.records import ChatRequest


def openai_body(request: ChatRequest) -> dict[str, Any]:
    messages = [{"role": "system", "content": request.system}] if request.system is not None else []
    messages += [dict(m) for m in request.messages]
    body: dict[str, Any] = {
        "model": request.model,
        "messages": messages,
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
    }
    if request.n is not None:
        body["n"] = request.n
    return body


def anthropic_body(request: ChatRequest, *, temperature: bool = True) -> dict[str, Any]:
    """``temperature``: False for a model that answered 400 to it (the sync path then leaves it out too)."""
    body: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens,
        "messages": [dict(m) for m in request.messages],
    }
    if request.system is not None:
        body["system"] = request.system
    if temperature:
        body["temperature"] = request.temperature
    return body


def request_body(request: ChatRequest, kind: str, *, temperature: bool = True) -> dict[str, Any]:
    """The wire body of ``request`` for an SDK route ``kind`` (``anthropic``, else the Chat Completions shape)."""
    if kind == "anthropic":
        return anthropic_body(request, temperature=temperature)
    return openai_body(request)
