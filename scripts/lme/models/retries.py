"""The one retry policy for model calls, run by the ``backoff`` library: which failures are retried, how long to wait,
when to give up, and the limiter slot held for one attempt only.

Waits are exponential with full jitter (``uniform(0, min(backoff_max, backoff_base * 2**retry))``) and never
shorter than the server's ``retry-after-ms`` / ``Retry-After``. Attempts are bounded by ``max_attempts``, for a
malformed reply (an unparseable body, or ``{}``) as for any other: at a 10% malformed rate a fixed 3 made about one
call in 1,000 an error row; a call answered 429 keeps being retried until
``RATE_LIMIT_PATIENCE_S`` after its first 429. A call larger than the whole tokens-per-minute budget fails at once
(``too_large_for_tpm``). The backoff sleep happens outside the limiter's slot.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import backoff

from lme.models.provider_errors import ProviderError, classify, outcome, too_large
from lme.models.provider_routes import ProviderSettings, key_env_for
from lme.models.rate_budget import OversizeCall
from lme.core.records import Limiter

OnRetry = Callable[[dict[str, Any]], None]


def _waits(base: float, cap: float) -> Iterator[float]:
    """Full-jitter exponential waits, each at least the failed attempt's ``retry_after`` (``backoff`` sends this
    generator the exception of each failed attempt)."""
    error = yield 0.0
    retry = 0
    while True:
        wait = random.uniform(0.0, min(cap, base * (2 ** retry)))
        retry_after = getattr(error, "retry_after", None)
        if retry_after:
            wait = max(wait, float(retry_after))
        retry += 1
        error = yield wait


RATE_LIMIT_PATIENCE_S = 900.0
"""A call answered 429 keeps being retried past ``max_attempts`` until this long after its first 429: a rate limit
passes, and no item should fail for one however long the run (a pacer makes them rare)."""


def _reply_headers(exc: BaseException) -> Any:
    headers = getattr(exc, "headers", None)
    if headers is None:
        headers = getattr(getattr(exc, "response", None), "headers", None)
    return headers


@dataclass(frozen=True)
class TokenDraw:
    """What one attempt draws on the limiter's token budget."""

    tokens: int | Callable[[], int] = 0
    """The attempt's input tokens: a count, or a function that counts them (the limiter calls it)."""
    extra_tokens: int = 0
    """Tokens the provider counts up front on top of them (OpenAI counts ``max_tokens``)."""


def call_with_retries(
    attempt: Callable[[], Any],
    *,
    provider: str,
    model: str,
    settings: ProviderSettings,
    limiter: Limiter | None = None,
    on_retry: OnRetry | None = None,
    draw: TokenDraw = TokenDraw(),
) -> tuple[Any, int]:
    """Run ``attempt`` under the retry policy; return ``(its result, attempts used)`` or raise ProviderError.

    ``draw`` is what one attempt draws on the limiter's token budget; a result or error with ``headers`` (and a
    result with ``input_tokens``) teaches it."""
    call = _Attempts(attempt, provider, model, settings, limiter, draw, on_retry)
    retrying = backoff.on_exception(
        _waits,
        ProviderError,
        max_tries=None,  # give_up bounds the attempts (max_attempts; longer for rate limits)
        giveup=call.give_up,
        on_backoff=call.report,
        jitter=None,
        logger=None,
        base=float(settings.backoff_base),
        cap=float(settings.backoff_max),
    )(call.once)
    return retrying(), call.tries


class _Attempts:
    """The attempts of one call: each holds a limiter slot for its own length only, and each failure is classified
    into a ``ProviderError`` (what its reply said passed on to the limiter)."""

    def __init__(self, attempt: Callable[[], Any], provider: str, model: str, settings: ProviderSettings,
                 limiter: Limiter | None, draw: TokenDraw, on_retry: OnRetry | None) -> None:
        self.attempt, self.provider, self.model, self.settings = attempt, provider, model, settings
        self.limiter, self.draw, self.on_retry = limiter, draw, on_retry
        self.tries = 0
        self.first_rate_limit: float | None = None

    def once(self) -> Any:
        self.tries += 1
        ticket = self._acquire()
        try:
            result = self.attempt()
        except Exception as exc:  # noqa: BLE001 - classify re-raises what it does not know
            err = self._failed(exc, ticket)
            if err is not exc:
                raise err from None
            raise
        except BaseException:  # KeyboardInterrupt, SystemExit...: the slot must not outlive the attempt
            self._release("error", ticket)
            raise
        self._release("ok", ticket, headers=getattr(result, "headers", None),
                      used_tokens=getattr(result, "input_tokens", None))
        return result

    def _release(self, outcome: str, ticket: Any, retry_after: float | None = None, **reply: Any) -> None:
        if self.limiter is not None:
            self.limiter.release(self.provider, outcome, retry_after, ticket=ticket, **reply)

    def _acquire(self) -> Any:
        if self.limiter is None:
            return None
        try:
            return self.limiter.acquire(self.provider, model=self.model, tokens=self.draw.tokens,
                                        extra_tokens=self.draw.extra_tokens)
        except OversizeCall as exc:
            raise self._too_large(exc) from None

    def _too_large(self, oversize: OversizeCall) -> ProviderError:
        return too_large(self.provider, self.model, str(oversize).split(": ", 1)[-1], self.tries)

    def _failed(self, exc: Exception, ticket: Any) -> ProviderError:
        """The error to raise for a failed attempt, its slot released; raises at once a call that a 429 showed can
        never fit the budget (say so now, not after its Retry-After)."""
        provider, model, limiter = self.provider, self.model, self.limiter
        try:
            err = classify(exc, provider, model, timeout_s=self.settings.timeout_s,
                           key_env=key_env_for(provider, self.settings))
        except Exception:  # not an API error we know: a reply our parsing did not expect
            self._release("error", ticket)
            return ProviderError("malformed", f"{provider} {model}: unexpected reply "
                                 f"({type(exc).__name__}: {str(exc)[:200]})", attempts=self.tries)
        err.attempts = self.tries
        if err.kind == "rate_limit" and self.first_rate_limit is None:
            self.first_rate_limit = time.monotonic()
        self._release(outcome(err), ticket, err.retry_after, headers=_reply_headers(exc))
        if err.kind == "rate_limit" and hasattr(limiter, "delay"):  # the 429 may have taught a budget too small
            try:
                limiter.delay(provider, model=model, tokens=getattr(ticket, "counted", 0),
                              extra_tokens=self.draw.extra_tokens)
            except OversizeCall as too_big:
                raise self._too_large(too_big) from None
        return err

    def give_up(self, err: ProviderError) -> bool:
        if not err.retryable:
            return True
        if err.attempts < max(1, int(self.settings.max_attempts)):
            return False
        return not (err.kind == "rate_limit" and self.first_rate_limit is not None
                    and time.monotonic() - self.first_rate_limit < RATE_LIMIT_PATIENCE_S)

    def report(self, details: dict[str, Any]) -> None:
        if self.on_retry is not None:
            err = details["exception"]
            self.on_retry({"provider": self.provider, "kind": err.kind, "status": err.status,
                           "attempt": details["tries"], "wait_s": round(float(details["wait"]), 3)})
