"""A model call that did not give a usable reply: ``ProviderError`` (its kind, attempts, HTTP status, Retry-After)
and ``classify``, the one place an SDK exception becomes one of the policy's kinds.

Retried kinds (``retryable``): rate_limit (429), timeout (408, the SDK's own), server (409, 5xx, Anthropic 529),
connection, malformed (an unparseable body, an empty reply). Not retried: auth (401/403), not_found (404, and 410
Gone: a retired model or deployment), bad_request (other 4xx),
billing (OpenAI 429 insufficient_quota, Anthropic 400 "credit balance"), refusal, too_large_for_tpm (larger than
the whole tokens-per-minute budget). Keys never appear in an error message (``scrub``).
"""

from __future__ import annotations

import os
import re
import sys
import time
from typing import Any, Mapping

from lme.core import command_names
from lme.core import endpoint_urls
from lme.models import rate_headers

_KEY_PATTERN = re.compile(r"\b(sk-[A-Za-z0-9_\-]{6,}|Bearer\s+\S+)")


class ProviderError(Exception):
    """A model call that did not give a usable reply. ``str(err)`` is a readable one-line message, keys scrubbed."""

    headers: Any = None
    """The reply's headers when the call was answered but its reply refused (empty, refusal): for the pacer."""
    empty: bool = False
    """The model answered with no text (``empty_reply``): retried as a malformed reply; a reader that still gets
    none after the retries answers ``""`` (upstream judges an empty answer)."""
    finish_reason: str | None = None
    """The provider's finish reason (stop reason) of an empty reply."""
    code: str | None = None
    """The provider's own error code of a 404 (``model_not_found``: the model is not served there)."""

    def __init__(
        self,
        kind: str,
        message: str,
        attempts: int = 1,
        status: int | None = None,
        retry_after: float | None = None,
        *,
        retryable: bool = False,
    ) -> None:
        self.kind = kind
        self.message = scrub(" ".join(str(message).split()))
        self.attempts = attempts
        self.status = status
        self.retry_after = retry_after
        self.retryable = retryable
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "attempts": self.attempts, "status": self.status}

    def __reduce__(self) -> tuple[Any, ...]:  # survives pickling (process pools, subprocess targets)
        return (_rebuild_error, (self.kind, self.message, self.attempts, self.status, self.retry_after,
                                 self.retryable),
                {"empty": self.empty, "finish_reason": self.finish_reason, "code": self.code})


def _rebuild_error(kind: str, message: str, attempts: int, status: int | None, retry_after: float | None,
                   retryable: bool) -> ProviderError:
    """The unpickled error; pickle then sets the state ``__reduce__`` gave (``empty``, ``finish_reason``)."""
    return ProviderError(kind, message, attempts, status, retry_after, retryable=retryable)


def scrub(text: str) -> str:
    """Remove every known key value, anything shaped like a key, and the credentials of any URL from ``text``."""
    for name, value in os.environ.items():
        if name.endswith("_API_KEY") and len(value) >= 6 and value in text:
            text = text.replace(value, "[redacted]")
    return _KEY_PATTERN.sub("[redacted]", endpoint_urls.redact_text(text))


def empty_reply(where: str, finish_reason: Any, detail: str) -> ProviderError:
    """A reply with no text (``detail`` says what was missing): malformed, retried like one, marked ``empty``."""
    err = ProviderError("malformed", f"{where}: empty reply ({detail}, finish_reason {finish_reason})",
                        retryable=True)
    err.empty = True
    err.finish_reason = None if finish_reason is None else str(finish_reason)
    return err


TOO_LARGE = "too_large_for_tpm"
"""The error kind of a call larger than the whole tokens-per-minute budget: no retry can send it."""


def too_large(provider: str, model: str, detail: str, attempts: int) -> ProviderError:
    return ProviderError(TOO_LARGE, f"{provider} {model}: {detail}; shorten the prompt (e.g. a smaller context or "
                         "top_k target option), use a model or usage tier with a higher tokens-per-minute limit, or "
                         f"set providers.{provider}.tpm in the config if that budget is wrong", attempts=attempts)


def _status_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        err = body.get("error", body)
        if isinstance(err, Mapping) and err.get("message"):
            return str(err["message"])[:300]
    return str(getattr(exc, "message", "") or exc)[:300]


def _error_code(exc: Any) -> str | None:
    code = getattr(exc, "code", None)
    if code:
        return str(code)
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        err = body.get("error", body)
        if isinstance(err, Mapping):
            return str(err.get("code") or err.get("type") or "") or None
    return None


def _sdk_error(exc: BaseException, name: str) -> bool:
    """``exc`` is the SDKs' error class ``name``. Only SDKs already imported are asked: an error from one SDK must
    not cost the import of the other (``anthropic`` takes about a second)."""
    return any(isinstance(exc, getattr(sys.modules[sdk], name)) for sdk in ("openai", "anthropic")
               if sdk in sys.modules and hasattr(sys.modules[sdk], name))


def status_kind(status: int, text: str) -> tuple[str, bool]:
    """The kind of a call (synchronous or in a batch) refused with HTTP ``status`` and ``text``, and whether it is
    retried. A 410 is a retired model or deployment (Azure OpenAI): gone for good, like a 404."""
    if status == 400 and "credit balance" in text.lower():
        return "billing", False
    if status == 429:
        return "rate_limit", True
    if status == 408:
        return "timeout", True
    if status == 409 or status >= 500:
        return "server", True
    if status in (401, 403):
        return "auth", False
    if status in (404, 410):
        return "not_found", False
    return "bad_request", False


def classify(exc: BaseException, provider: str, model: str, *, timeout_s: float, key_env: str) -> ProviderError:
    """Turn an SDK (or parsing) exception into a ProviderError with the kind and retry decision of our policy.
    ``timeout_s``: the client's timeout; ``key_env``: the variable that holds the provider's key (both named in the
    message)."""
    if isinstance(exc, ProviderError):
        return exc
    where = f"{provider} {model}"
    if _sdk_error(exc, "APITimeoutError"):
        return ProviderError("timeout", f"{where}: no reply within {timeout_s:g} s", retryable=True)
    if _sdk_error(exc, "APIConnectionError"):
        cause = exc.__cause__ or exc
        return ProviderError("connection", f"{where}: connection failed ({type(cause).__name__}: {cause})",
                             retryable=True)
    if _sdk_error(exc, "APIStatusError"):
        status = int(exc.status_code)
        text = _status_message(exc)
        code = _error_code(exc)
        headers = getattr(exc.response, "headers", None)
        retry_after = None if headers is None else rate_headers.parse_retry_after(headers, time.time())
        if status == 429 and code == "insufficient_quota":
            return ProviderError("billing", f"{where}: the run is blocked on billing: the account is out of quota "
                                 f"(HTTP 429 insufficient_quota: {text}); add credit, then resume", status=status)
        if status == 429 and "request too large" in text.lower():  # OpenAI: bigger than the whole TPM budget
            return too_large(provider, model, f"the provider refused it as larger than the tokens-per-minute "
                              f"budget (HTTP 429: {text})", 1)
        kind, retryable = status_kind(status, text)
        says = {
            "billing": f"the run is blocked on billing: the credit balance is too low (HTTP 400: {text}); add "
                       "credit, then resume",
            "rate_limit": f"rate limited (HTTP 429: {text})",
            "timeout": f"request timeout (HTTP 408: {text})",
            "server": f"server error (HTTP {status}: {text})",
            "auth": f"the key in {key_env} was rejected (HTTP {status}: {text}); check it or run "
                    f"{command_names.SETUP}",
            "not_found": f"not found (HTTP 404: {text}); check the model name and base URL" if status == 404 else
                         f"gone (HTTP 410: {text}); the model or deployment was retired",
            "bad_request": f"request rejected (HTTP {status}: {text})",
        }[kind]
        err = ProviderError(kind, f"{where}: {says}", status=status, retry_after=retry_after if retryable else None,
                            retryable=retryable)
        if status == 404:
            err.code = code
        return err
    if isinstance(exc, ValueError):  # json.JSONDecodeError and the SDKs' response validation errors
        return ProviderError("malformed", f"{where}: the reply body is not valid JSON ({exc})", retryable=True)
    if _sdk_error(exc, "APIResponseValidationError"):
        return ProviderError("malformed", f"{where}: the reply does not have the expected shape ({exc})",
                             retryable=True)
    raise exc


def outcome(err: ProviderError) -> str:
    """What the limiter is told of a failed attempt: ``rate_limit``, ``refused``, ``server`` or ``error``."""
    if err.kind == "rate_limit":
        return "rate_limit"
    if err.kind == TOO_LARGE:
        return "refused"  # the provider did not take it, and no wait would change that
    if err.kind == "server":
        return "server"
    return "error"


def answered_gone(err: ProviderError) -> bool:
    """The call says the model is not served there any more: 410 Gone, or 404 with OpenAI's ``model_not_found``
    code. A 404 without it (a wrong base URL, a route a gateway lacks) is a refusal to report, not a retirement."""
    return err.kind == "not_found" and (err.status == 410 or err.code == "model_not_found")
