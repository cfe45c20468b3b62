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
from typing import Any, Callable, Iterator

import backoff

from lme.models.provider_errors import ProviderError, classify, outcome, too_large
from lme.models.provider_routes import ProviderSettings, key_env_for
from lme.models.rate_pacer import OversizeCall
from lme.core.records import Limiter

OnRetry = Callable[[dict[str, Any]], None]


def _waits(base: float, cap: float) -> Iterator[float]:
    """Full-jitter exponential waits, each at least the failed attempt's ``retry_after``.

    A ``backoff`` wait generator: ``backoff`` sends it the exception of each failed attempt.
    """
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


def call_with_retries(
    attempt: Callable[[], Any],
    *,
    provider: str,
    model: str,
    settings: ProviderSettings,
    limiter: Limiter | None = None,
    on_retry: OnRetry | None = None,
    tokens: int | Callable[[], int] = 0,
    extra_tokens: int = 0,
) -> tuple[Any, int]:
    """Run ``attempt`` under the retry policy; return ``(its result, attempts used)`` or raise ProviderError.

    ``tokens`` (a count, or a function that counts) and ``extra_tokens`` are what one attempt draws on the
    limiter's token budget; a result or error with ``headers`` (and a result with ``input_tokens``) teaches it."""
    tries = 0
    first_rate_limit: float | None = None

    def one_attempt() -> Any:
        nonlocal tries, first_rate_limit
        tries += 1
        ticket = None
        if limiter is not None:
            try:
                ticket = limiter.acquire(provider, model=model, tokens=tokens, extra_tokens=extra_tokens)
            except OversizeCall as exc:
                raise too_large(provider, model, str(exc).split(": ", 1)[-1], tries) from None
        try:
            result = attempt()
        except Exception as exc:  # noqa: BLE001 - classify re-raises what it does not know
            try:
                err = classify(exc, provider, model, timeout_s=settings.timeout_s,
                               key_env=key_env_for(provider, settings))
            except Exception:  # not an API error we know: a reply our parsing did not expect
                if limiter is not None:
                    limiter.release(provider, "error", None, ticket=ticket)
                raise ProviderError("malformed", f"{provider} {model}: unexpected reply "
                                    f"({type(exc).__name__}: {str(exc)[:200]})", attempts=tries) from None
            err.attempts = tries
            if err.kind == "rate_limit" and first_rate_limit is None:
                first_rate_limit = time.monotonic()
            if limiter is not None:
                limiter.release(provider, outcome(err), err.retry_after, ticket=ticket, headers=_reply_headers(exc))
                if err.kind == "rate_limit" and hasattr(limiter, "delay"):  # the 429 taught a budget this call
                    try:  # can never fit: say so now, not after its Retry-After
                        limiter.delay(provider, model=model, tokens=getattr(ticket, "counted", 0),
                                      extra_tokens=extra_tokens)
                    except OversizeCall as too_big:
                        raise too_large(provider, model, str(too_big).split(": ", 1)[-1], tries) from None
            if err is not exc:
                raise err from None
            raise
        except BaseException:  # KeyboardInterrupt, SystemExit...: the slot must not outlive the attempt
            if limiter is not None:
                limiter.release(provider, "error", None, ticket=ticket)
            raise
        if limiter is not None:
            limiter.release(provider, "ok", None, ticket=ticket, headers=getattr(result, "headers", None),
                            used_tokens=getattr(result, "input_tokens", None))
        return result

    def give_up(err: ProviderError) -> bool:
        if not err.retryable:
            return True
        if err.attempts < max(1, int(settings.max_attempts)):
            return False
        return not (err.kind == "rate_limit" and first_rate_limit is not None
                    and time.monotonic() - first_rate_limit < RATE_LIMIT_PATIENCE_S)

    def report(details: dict[str, Any]) -> None:
        if on_retry is not None:
            err = details["exception"]
            on_retry({"provider": provider, "kind": err.kind, "status": err.status,
                      "attempt": details["tries"], "wait_s": round(float(details["wait"]), 3)})

    retrying = backoff.on_exception(
        _waits,
        ProviderError,
        max_tries=None,  # give_up bounds the attempts (max_attempts; longer for rate limits)
        giveup=give_up,
        on_backoff=report,
        jitter=None,
        logger=None,
        base=float(settings.backoff_base),
        cap=float(settings.backoff_max),
    )(one_attempt)
    return retrying(), tries
