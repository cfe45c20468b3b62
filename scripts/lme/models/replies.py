"""The one reading of an answered chat call, for the synchronous path and the batch path alike.

``read(kind, reply, where=..., allow_empty=...)`` takes an Anthropic message or an OpenAI chat completion, either as
the SDK's parsed object (``providers``) or as the JSON of a batch result line (``batch_api``), and gives its
``Reply`` (text, stop reason, usage, model, id) or raises the ``ProviderError`` it is:

- no reply at all (an Anthropic message without ``content``, a completion without ``choices``: a 200 whose body is
  ``{}``): ``malformed``, retried like an unparseable body;
- no choices, or a choice without a message: ``malformed``, not retried;
- a refusal (Anthropic ``stop_reason`` ``refusal``, an OpenAI ``refusal``): ``refusal``;
- no text (an OpenAI content that is not a string, e.g. a tool call; a blank text unless ``allow_empty``):
  ``empty_reply`` (malformed, retried, marked ``empty``). The judge's requests allow an empty reply: upstream labels
  it False (``'yes' in ''``), so it comes back as the text ``""``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from lme.core.records import ChatRequest
from lme.models.provider_errors import ProviderError, empty_reply
from lme.models.token_counts import estimate_request_tokens, estimate_tokens


@dataclass(frozen=True)
class Reply:
    """What an answered call says. Token counts are None when the reply holds no usage."""

    text: str
    stop_reason: str | None
    tokens_in: int | None
    tokens_out: int | None
    model: str | None
    reply_id: str | None
    """The body's ``id`` (the message's or the completion's)."""

    def usage(self, request: ChatRequest | None) -> tuple[int, int]:
        """``(tokens in, tokens out)``: the reply's usage, else estimates (of ``request``'s prompt, of the text;
        without the request, of the text for both)."""
        tokens_in = self.tokens_in
        if tokens_in is None:
            tokens_in = estimate_tokens(self.text) if request is None else estimate_request_tokens(request)
        return tokens_in, self.tokens_out if self.tokens_out is not None else estimate_tokens(self.text)


def _get(obj: Any, name: str) -> Any:
    """A field of the reply, whether it is the SDK's object or its JSON."""
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def _count(usage: Any, name: str, other_name: str) -> int | None:
    value = _get(usage, name) or _get(usage, other_name)
    return int(value) if value is not None else None


def _reply(body: Any, text: str, stop_reason: Any) -> Reply:
    usage = _get(body, "usage")
    model, reply_id = _get(body, "model"), _get(body, "id")
    return Reply(text, None if stop_reason is None else str(stop_reason),
                 _count(usage, "input_tokens", "prompt_tokens"), _count(usage, "output_tokens", "completion_tokens"),
                 None if model is None else str(model), None if reply_id is None else str(reply_id))


def read(kind: str, reply: Any, *, where: str, allow_empty: bool) -> Reply:
    """The ``Reply`` of an Anthropic message (``kind`` ``anthropic``) or of a chat completion (any other kind),
    else the ``ProviderError`` it is (see the module docstring). ``where`` opens every error message."""
    return _read_message(reply, where, allow_empty) if kind == "anthropic" else \
        _read_completion(reply, where, allow_empty)


def _read_message(message: Any, where: str, allow_empty: bool) -> Reply:
    content = None if isinstance(message, (str, bytes)) else _get(message, "content")
    if content is None:
        raise ProviderError("malformed", f"{where}: the reply holds no message (no content field)", retryable=True)
    stop_reason = _get(message, "stop_reason")
    if stop_reason == "refusal":
        raise ProviderError("refusal", f"{where}: the model refused to answer (stop_reason refusal)")
    text = "".join(str(_get(b, "text") or "") for b in content if _get(b, "type") == "text")
    if not text.strip() and not allow_empty:
        raise empty_reply(where, stop_reason, "no text content")
    return _reply(message, text, stop_reason)


def _read_completion(response: Any, where: str, allow_empty: bool) -> Reply:
    choices = None if isinstance(response, (str, bytes)) else _get(response, "choices")
    if choices is None:
        raise ProviderError("malformed", f"{where}: the reply holds no completion (no choices field)", retryable=True)
    if not choices:
        raise ProviderError("malformed", f"{where}: empty reply (no choices)")
    choice = choices[0]
    message = _get(choice, "message")
    if message is None:
        raise ProviderError("malformed", f"{where}: empty reply (a choice without a message)")
    refusal = _get(message, "refusal")
    if refusal:
        raise ProviderError("refusal", f"{where}: the model refused to answer ({str(refusal)[:200]})")
    text, finish_reason = _get(message, "content"), _get(choice, "finish_reason")
    if not isinstance(text, str) or (not text.strip() and not allow_empty):
        raise empty_reply(where, finish_reason, "no message content")
    return _reply(response, text, finish_reason)
