"""A whole reply told as the event stream a ``stream: true`` request expects: the target endpoint makes the
provider call without streaming (so it is cached, paced, retried and priced like any other) and answers a streaming
client with the reply it got, as one well-formed stream the SDKs' stream helpers parse.

- OpenAI Chat Completions: one ``chat.completion.chunk`` per choice with the role, the content (or refusal) and the
  tool calls, then one with the finish reason; a last chunk with ``usage`` and no choices when the request asked for
  it (``stream_options.include_usage``); then ``data: [DONE]``.
- Anthropic Messages: ``message_start`` (the message without its content), then per content block
  ``content_block_start`` / ``content_block_delta`` (``text_delta``, ``input_json_delta``, ``thinking_delta`` and
  ``signature_delta``; a block of any other type arrives whole in its start event) / ``content_block_stop``, then
  ``message_delta`` (stop reason, output tokens) and ``message_stop``.
"""

from __future__ import annotations

import json
from typing import Any, Iterator, Mapping

CONTENT_TYPE = "text/event-stream"


def _data(payload: Any) -> str:
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"


def _event(name: str, **fields: Any) -> str:
    """An Anthropic event: its name, and its payload of that ``type``."""
    return f"event: {name}\n{_data({'type': name, **fields})}"


# --------------------------------------------------------------------------- OpenAI


def _chunk(reply: Mapping[str, Any], choices: list[dict[str, Any]], *, usage: Any = None) -> dict[str, Any]:
    chunk = {"id": reply.get("id"), "object": "chat.completion.chunk", "created": reply.get("created"),
             "model": reply.get("model"), "system_fingerprint": reply.get("system_fingerprint"), "choices": choices}
    if usage is not None:
        chunk["usage"] = usage
    return chunk


def _choice_delta(choice: Mapping[str, Any]) -> dict[str, Any]:
    message = choice.get("message") or {}
    delta: dict[str, Any] = {"role": message.get("role") or "assistant", "content": message.get("content")}
    if message.get("refusal") is not None:
        delta["refusal"] = message["refusal"]
    calls = message.get("tool_calls")
    if calls:
        delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(calls)]
    return delta


def _openai_events(reply: Mapping[str, Any], include_usage: bool) -> Iterator[str]:
    for choice in reply.get("choices") or ():
        index = choice.get("index", 0)
        yield _data(_chunk(reply, [{"index": index, "delta": _choice_delta(choice), "logprobs": choice.get("logprobs"),
                                    "finish_reason": None}]))
        yield _data(_chunk(reply, [{"index": index, "delta": {}, "logprobs": None,
                                    "finish_reason": choice.get("finish_reason") or "stop"}]))
    if include_usage:
        yield _data(_chunk(reply, [], usage=reply.get("usage")))
    yield "data: [DONE]\n\n"


# --------------------------------------------------------------------------- Anthropic


def _block_events(index: int, block: Mapping[str, Any]) -> Iterator[str]:
    kind = block.get("type")
    if kind == "text":
        yield _event("content_block_start", index=index, content_block={"type": "text", "text": ""})
        yield _event("content_block_delta", index=index, delta={"type": "text_delta", "text": block.get("text", "")})
    elif kind in ("tool_use", "server_tool_use"):
        yield _event("content_block_start", index=index, content_block={**block, "input": {}})
        yield _event("content_block_delta", index=index, delta={
            "type": "input_json_delta", "partial_json": json.dumps(block.get("input") or {}, ensure_ascii=False)})
    elif kind == "thinking":
        yield _event("content_block_start", index=index,
                     content_block={"type": "thinking", "thinking": "", "signature": ""})
        yield _event("content_block_delta", index=index,
                     delta={"type": "thinking_delta", "thinking": block.get("thinking", "")})
        yield _event("content_block_delta", index=index,
                     delta={"type": "signature_delta", "signature": block.get("signature", "")})
    else:  # redacted thinking, tool results...: whole in the start event, as the API streams them
        yield _event("content_block_start", index=index, content_block=dict(block))
    yield _event("content_block_stop", index=index)


def _anthropic_events(reply: Mapping[str, Any]) -> Iterator[str]:
    usage = dict(reply.get("usage") or {})
    start = {**reply, "content": [], "stop_reason": None, "stop_sequence": None, "usage": {**usage, "output_tokens": 0}}
    yield _event("message_start", message=start)
    for index, block in enumerate(reply.get("content") or ()):
        yield from _block_events(index, block)
    yield _event("message_delta", delta={"stop_reason": reply.get("stop_reason"),
                                         "stop_sequence": reply.get("stop_sequence")},
                 usage={"output_tokens": usage.get("output_tokens", 0)})
    yield _event("message_stop")


def stream_body(api: str, reply: Mapping[str, Any], request: Mapping[str, Any]) -> bytes:
    """The event stream of ``reply`` (a whole JSON reply of ``api``) for the streaming ``request``."""
    if api == "messages":
        events = _anthropic_events(reply)
    else:
        options = request.get("stream_options")
        events = _openai_events(reply, bool(isinstance(options, Mapping) and options.get("include_usage")))
    return "".join(events).encode("utf-8")
