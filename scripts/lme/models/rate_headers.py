"""Read the rate-limit headers OpenAI and Anthropic put on every reply (429s included) into one record.

- OpenAI: ``x-ratelimit-limit-requests`` / ``-remaining-requests`` and the same for ``-tokens``.
- Anthropic: ``anthropic-ratelimit-requests-limit`` / ``-remaining`` and the same for ``input-tokens`` (the
  input-tokens-per-minute budget; ``tokens`` where a model has only the combined one) and ``output-tokens``.
- Both: ``retry-after`` (seconds, or an HTTP date) and OpenAI's ``retry-after-ms``.

Every limit here is per minute. Anything missing or unreadable is None: a proxy that sends none of these gives an
empty record, and the pacer then paces by the config's ``rpm`` / ``tpm`` alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, Mapping


@dataclass(frozen=True)
class Window:
    """One budget as a reply reports it."""

    limit: float | None = None
    """Per minute."""
    remaining: float | None = None
    """Left when the server answered."""


@dataclass(frozen=True)
class RateHeaders:
    requests: Window
    input_tokens: Window
    """OpenAI: tokens per minute (it counts input and ``max_tokens``); Anthropic: input tokens per minute."""
    output_tokens: Window
    """Anthropic's output-tokens-per-minute budget (reported, not paced)."""
    retry_after: float | None = None

    @property
    def states_limits(self) -> bool:
        """Some budget's limit or remaining is given (a bare ``retry-after`` is not enough)."""
        return any(w.limit is not None or w.remaining is not None
                   for w in (self.requests, self.input_tokens, self.output_tokens))

    @property
    def empty(self) -> bool:
        return self.retry_after is None and not self.states_limits


NO_HEADERS = RateHeaders(Window(), Window(), Window())


def parse_retry_after(headers: Mapping[str, Any], now: float) -> float | None:
    """``retry-after-ms``, else ``retry-after`` in seconds or as an HTTP date; None when absent or unreadable."""
    value = _get(headers, "retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = _get(headers, "retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(str(value)).timestamp() - now)
    except (TypeError, ValueError, IndexError):
        return None


def parse(headers: Mapping[str, Any] | None, now: float | None = None) -> RateHeaders:
    """The rate-limit facts in a reply's headers (httpx headers or any mapping; names in any case)."""
    if not headers:
        return NO_HEADERS
    now = time.time() if now is None else now
    if not hasattr(headers, "get_list"):  # httpx.Headers is case-insensitive already; a plain dict is not
        headers = {str(k).lower(): v for k, v in headers.items()}
    retry_after = parse_retry_after(headers, now)
    if _get(headers, "anthropic-ratelimit-requests-limit") is not None or any(
            _get(headers, f"anthropic-ratelimit-{b}-limit") is not None for b in ("input-tokens", "tokens")):
        def window(budget: str) -> Window:
            prefix = f"anthropic-ratelimit-{budget}-"
            return Window(_number(_get(headers, prefix + "limit")), _number(_get(headers, prefix + "remaining")))

        inputs = window("input-tokens")
        if inputs.limit is None:
            inputs = window("tokens")
        return RateHeaders(window("requests"), inputs, window("output-tokens"), retry_after)

    def openai(budget: str) -> Window:
        return Window(_number(_get(headers, f"x-ratelimit-limit-{budget}")),
                      _number(_get(headers, f"x-ratelimit-remaining-{budget}")))

    return RateHeaders(openai("requests"), openai("tokens"), Window(), retry_after)


def _get(headers: Mapping[str, Any], name: str) -> Any:
    value = headers.get(name)
    return None if value is None or str(value).strip() == "" else value


def _number(value: Any) -> float | None:
    if value is None:
        return None
    try:
        number = float(str(value).strip())
    except ValueError:
        return None
    return number if number >= 0 else None
