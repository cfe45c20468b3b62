"""The JSON body of one chat call, built once: the synchronous path and the Batch APIs send the same body.

A batch line carries it as its ``body`` (OpenAI) or ``params`` (Anthropic), so cache keys, prompt hashes and judge
parity hold for batches.
"""

from __future__ import annotations

import re
from typing import Any

from lme.core.records import ChatRequest

REASONING_MODEL = re.compile(r"^(o\d+(-|$)|gpt-5)")
"""OpenAI's reasoning models (``o1``, ``o3-mini``, ``o4-mini``, ``gpt-5``, ``gpt-5.1``...; a ``provider/`` prefix, as
routers write it, is ignored): they reject ``max_tokens`` (they take ``max_completion_tokens``, which also counts
their reasoning) and any ``temperature`` but the default."""


def is_reasoning_model(model: str | None) -> bool:
    """``model`` is an OpenAI reasoning model (see ``REASONING_MODEL``)."""
    return bool(model) and bool(REASONING_MODEL.match(str(model).rsplit("/", 1)[-1].lower()))


def openai_body(request: ChatRequest) -> dict[str, Any]:
    """The Chat Completions body: ``max_tokens`` in the request's ``max_tokens_field``, ``temperature`` unless it is
    None, ``reasoning_effort`` and ``n`` only when set."""
    messages = [{"role": "system", "content": request.system}] if request.system is not None else []
    messages += [dict(m) for m in request.messages]
    body: dict[str, Any] = {
        "model": request.model,
        "messages": messages,
        request.max_tokens_field: request.max_tokens,
    }
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.reasoning_effort is not None:
        body["reasoning_effort"] = request.reasoning_effort
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
    if temperature and request.temperature is not None:
        body["temperature"] = request.temperature
    return body


def request_body(request: ChatRequest, kind: str, *, temperature: bool = True) -> dict[str, Any]:
    """The wire body of ``request`` for an SDK route ``kind`` (``anthropic``, else the Chat Completions shape)."""
    if kind == "anthropic":
        return anthropic_body(request, temperature=temperature)
    return openai_body(request)
