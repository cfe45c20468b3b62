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
``ANTHROPIC_BASE_URL``. SDK clients are built once per (provider, base URL, key, timeout) and shared between
threads; the SDKs' own retries are off (``max_retries=0``) so that this module counts every attempt.

Retry policy (the only one in the toolkit), run by the ``backoff`` library, bounded by ``max_attempts`` (a call
answered 429 goes on past it until ``RATE_LIMIT_PATIENCE_S`` after its first 429: rate limits pass):

- retried: HTTP 429 (rate limit), 408, 409, 5xx, Anthropic 529 (overloaded), connection errors (including a
  reset or truncated body), timeouts, and an unparseable JSON body (``malformed``, at most
  ``MALFORMED_MAX_ATTEMPTS`` attempts). The wait is exponential with full jitter
  (``uniform(0, min(backoff_max, backoff_base * 2**retry))``) and never shorter than the server's
  ``retry-after-ms`` / ``Retry-After``.
- not retried: 400 / 401 / 403 / 404 and other 4xx; billing (OpenAI 429 ``insufficient_quota``, Anthropic 400
  "credit balance is too low") as kind ``billing``; an empty reply (no choices, no text) as ``malformed``; a
  refusal as ``refusal``. At temperature 0 the same request would give the same empty reply again. A request
  with ``allow_empty`` (the judge's: upstream labels an empty reply False) gets an empty or blank text back.

The limiter slot is held for one attempt only: ``limiter.acquire`` before it (with the attempt's model and input
tokens, which a pacer reserves: ``rate_pacer``), ``limiter.release`` after it (with the reply's headers, read through
the SDKs' ``with_raw_response``, and its reported input tokens), and the backoff sleep happens outside the slot. A
call larger than a learned or configured tokens-per-minute budget fails at once as kind ``too_large_for_tpm``.
Keys never appear in a Completion or in an error message.
"""

from __future__ import annotations

import hashlib
import math
import os
import random
import re
import sys
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence

import backoff

import command_names
from rate_pacer import OversizeCall
from records import ChatRequest, Completion, Limiter

KINDS = (
    "rate_limit",
    "server",
    "timeout",
    "connection",
    "auth",
    "bad_request",
    "not_found",
    "billing",
    "malformed",
    "refusal",
    "too_large_for_tpm",
)
RETRIED_STATUSES = {408, 409, 429}
MALFORMED_MAX_ATTEMPTS = 3
SETUP_COMMAND = command_names.SETUP
EMBED_BATCH = 256
KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "azure": "AZURE_OPENAI_API_KEY"}
BASE_URL_ENV = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}
_KEY_PATTERN = re.compile(r"\b(sk-[A-Za-z0-9_\-]{6,}|Bearer\s+\S+)")

OnRetry = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class ProviderSettings:
    timeout_s: float = 600.0
    max_attempts: int = 8
    base_urls: Mapping[str, str] = field(default_factory=dict)
    """Per provider name; missing names fall back to the SDKs' ``*_BASE_URL`` environment variables."""
    backoff_base: float = 1.0
    backoff_max: float = 60.0
    api_key_envs: Mapping[str, str] = field(default_factory=dict)
    """Optional per provider name: which environment variable holds its key (default: see module docstring)."""
    azure: Mapping[str, str] = field(default_factory=dict)
    """Azure OpenAI: ``endpoint``, ``deployment``, ``api_version`` (config ``providers.azure``)."""


class ProviderError(Exception):
    """A model call that did not give a usable reply. ``str(err)`` is a readable one-line message, keys scrubbed."""

    headers: Any = None
    """The reply's headers when the call was answered but its reply refused (empty, refusal): for the pacer."""

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
                                 self.retryable))


def _rebuild_error(kind: str, message: str, attempts: int, status: int | None, retry_after: float | None,
                   retryable: bool) -> ProviderError:
    return ProviderError(kind, message, attempts, status, retry_after, retryable=retryable)


def scrub(text: str) -> str:
    """Remove every known key value, and anything shaped like a key, from ``text``."""
    for name, value in os.environ.items():
        if name.endswith("_API_KEY") and len(value) >= 6 and value in text:
            text = text.replace(value, "[redacted]")
    return _KEY_PATTERN.sub("[redacted]", text)


ESTIMATE_CHARS_PER_TOKEN = 4.3
"""Characters per token of the estimate: below every ratio measured on the real ``_s`` prompts with o200k and
cl100k (4.32-4.96), so the estimate stays at or a little above OpenAI's count there (numbers: ``reader.py``)."""


def estimate_tokens(text: str) -> int:
    """Heuristic token count: characters / ``ESTIMATE_CHARS_PER_TOKEN``, rounded up."""
    return math.ceil(len(text) / ESTIMATE_CHARS_PER_TOKEN)


# ---------------------------------------------------------------------- exact local counts (tiktoken)

TIKTOKEN_ENV = "LONGMEMEVAL_TIKTOKEN"
"""Set to ``0`` to never load tiktoken: OpenAI prompts are then counted by the estimate."""
TIKTOKEN_LOAD_TIMEOUT_S = 15.0
"""tiktoken downloads its BPE file on first use (no timeout of its own); a load slower than this counts as failed."""
_O200K_PREFIXES = ("gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4")
_CL100K_PREFIXES = ("gpt-4", "gpt-3.5")


def tiktoken_encoding_name(model: str) -> str | None:
    """OpenAI's tokenizer for ``model``: o200k_base (gpt-4o, gpt-4.1, o-series, gpt-5), cl100k_base (older gpt-4 and
    gpt-3.5), None for any other model."""
    name = model.lower().rsplit("/", 1)[-1]
    if name.startswith(_O200K_PREFIXES):
        return "o200k_base"
    if name.startswith(_CL100K_PREFIXES):
        return "cl100k_base"
    return None


def _load_tiktoken(name: str, timeout_s: float = TIKTOKEN_LOAD_TIMEOUT_S) -> Any:
    """``tiktoken.get_encoding(name)`` in a daemon thread, given up after ``timeout_s``; raises on failure."""
    result: dict[str, Any] = {}

    def work() -> None:
        try:
            import tiktoken

            result["encoding"] = tiktoken.get_encoding(name)
        except BaseException as exc:  # noqa: BLE001 - reported to the caller below
            result["error"] = exc

    thread = threading.Thread(target=work, name=f"tiktoken-load-{name}", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        raise TimeoutError(f"loading tiktoken {name} took over {timeout_s:g} s")
    if "error" in result:
        raise result["error"]
    return result["encoding"]


class _Encodings:
    """tiktoken encodings, each loaded once per process; a failed load is remembered and never retried."""

    def __init__(self, loader: Callable[[str], Any] = _load_tiktoken) -> None:
        self._loader = loader
        self._lock = threading.Lock()
        self._loaded: dict[str, Any] = {}
        self._failed: dict[str, str] = {}

    def loaded(self, name: str) -> bool:
        """Whether ``name`` is loaded already (asking never loads it)."""
        with self._lock:
            return name in self._loaded and os.environ.get(TIKTOKEN_ENV, "").strip() != "0"

    def get(self, name: str) -> Any | None:
        if os.environ.get(TIKTOKEN_ENV, "").strip() == "0":
            return None
        with self._lock:  # held during the one load, so concurrent first calls wait for it instead of repeating it
            if name in self._loaded:
                return self._loaded[name]
            if name in self._failed:
                return None
            try:
                self._loaded[name] = self._loader(name)
            except Exception as exc:  # noqa: BLE001 - no network, no tiktoken, a bad cache: estimate instead
                self._failed[name] = f"{type(exc).__name__}: {str(exc)[:200]}"
                print(f"warning: tiktoken {name} is unavailable ({self._failed[name]}); OpenAI prompts are counted "
                      f"by an estimate for the rest of this process", file=sys.stderr)
                return None
            return self._loaded[name]


_ENCODINGS = _Encodings()
"""Process-wide on purpose: the BPE file is loaded (or found missing) once, not once per item."""

_COUNTS: "OrderedDict[str, int]" = OrderedDict()
"""Exact counts made in this process (``count_tokens_how``), by request key: the pacer reserves them."""
_COUNTS_LOCK = threading.Lock()
_COUNTS_KEPT = 64


def _remember_count(request: ChatRequest, count: int) -> None:
    key = request.key()
    with _COUNTS_LOCK:
        _COUNTS[key] = count
        _COUNTS.move_to_end(key)
        while len(_COUNTS) > _COUNTS_KEPT:
            _COUNTS.popitem(last=False)

OPENAI_TOKENS_PER_MESSAGE = 3
OPENAI_REPLY_PRIMING_TOKENS = 3
"""Chat Completions overhead as OpenAI documents it: 3 tokens around each message, 3 to start the reply."""


def tiktoken_count(request: ChatRequest) -> int | None:
    """The exact input tokens of an OpenAI chat request (text, chat overhead); None without a tokenizer."""
    name = tiktoken_encoding_name(request.model)
    encoding = _ENCODINGS.get(name) if name else None
    if encoding is None:
        return None
    texts = ([request.system] if request.system is not None else []) + [str(m.get("content", ""))
                                                                          for m in request.messages]
    return OPENAI_REPLY_PRIMING_TOKENS + sum(OPENAI_TOKENS_PER_MESSAGE + len(encoding.encode(t, disallowed_special=()))
                                             for t in texts)


# ---------------------------------------------------------------------- clients


class _ClientPool:
    """SDK clients, built once per (kind, base URL, key fingerprint, timeout) and reused by every thread.

    Also remembers which Anthropic models reject ``temperature``.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clients: dict[tuple[str, str | None, str, float, tuple[str, str] | None], Any] = {}
        self._no_temperature: set[str] = set()
        """Anthropic models that answered 400 to a ``temperature``: later calls leave it out."""

    def rejects_temperature(self, model: str) -> bool:
        with self._lock:
            return model in self._no_temperature

    def mark_rejects_temperature(self, model: str) -> None:
        with self._lock:
            self._no_temperature.add(model)

    def get(self, kind: str, base_url: str | None, api_key: str, timeout: float,
            azure: tuple[str, str] | None = None) -> Any:
        fingerprint = hashlib.sha256(api_key.encode("utf-8")).hexdigest()[:16]
        key = (kind, base_url, fingerprint, float(timeout), azure)
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                client = _build_client(kind, base_url, api_key, timeout, azure)
                self._clients[key] = client
            return client


def _rejects_temperature(exc: BaseException) -> bool:
    """A 400 saying the model takes no ``temperature`` (Claude models after Opus 4.6 reject the parameter)."""
    return getattr(exc, "status_code", None) == 400 and "temperature" in _status_message(exc).lower()


def _build_client(kind: str, base_url: str | None, api_key: str, timeout: float,
                  azure: tuple[str, str] | None = None) -> Any:
    if kind == "anthropic":
        import anthropic

        return anthropic.Anthropic(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout)
    import openai

    if kind == "azure":
        deployment, api_version = azure or ("", "")
        return openai.AzureOpenAI(api_key=api_key, azure_endpoint=base_url, azure_deployment=deployment,
                                  api_version=api_version, max_retries=0, timeout=timeout)

    return openai.OpenAI(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout)


_POOL = _ClientPool()
"""Process-wide on purpose: SDK clients hold connection pools, and building one per call would defeat them."""


@dataclass(frozen=True)
class _Route:
    kind: str
    """``anthropic``, ``openai`` or ``azure`` (the SDK client and wire format)."""
    base_url: str | None
    api_key: str
    azure: tuple[str, str] | None = None
    """``(deployment, api_version)`` of an Azure route."""

    def client(self, timeout: float) -> Any:
        return _POOL.get(self.kind, self.base_url, self.api_key, timeout, self.azure)


def _env_name(provider: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", provider).upper() + "_API_KEY"


def _route(provider: str, settings: ProviderSettings) -> _Route:
    if provider == "offline":
        raise ProviderError(
            "bad_request",
            "provider 'offline' has no chat model: the offline target and offline judge run without this layer; "
            "pick a model provider (anthropic, openai, or one with a base_url) for model calls",
        )
    base_url = settings.base_urls.get(provider) or None
    if provider == "azure":
        endpoint, deployment, api_version = azure_target(settings)
        env = settings.api_key_envs.get(provider, KEY_ENV[provider])
        key = os.environ.get(env, "").strip()
        if not key:
            raise ProviderError("auth", f"{env} is not set: export the key of your Azure OpenAI resource")
        return _Route("azure", endpoint, key, (deployment, api_version))
    if provider in KEY_ENV:
        kind = provider
        base_url = base_url or os.environ.get(BASE_URL_ENV[provider]) or None
        env = settings.api_key_envs.get(provider, KEY_ENV[provider])
        key = os.environ.get(env, "").strip()
        if not key:
            raise ProviderError("auth", f"{env} is not set: export it or run {SETUP_COMMAND}")
        return _Route(kind, base_url, key)
    if base_url is None:
        raise ProviderError(
            "bad_request",
            f"unknown provider {provider!r}: use anthropic, openai or offline, or give it a base URL "
            f"(config providers.{provider}.base_url) to call it as an OpenAI-compatible server",
        )
    env = settings.api_key_envs.get(provider)
    candidates = [env] if env else [_env_name(provider), "OPENAI_API_KEY"]
    key = next((os.environ[c].strip() for c in candidates if os.environ.get(c, "").strip()), "EMPTY")
    return _Route("openai", base_url, key)


AZURE_FIELDS = ("endpoint", "deployment", "api_version")


def azure_target(settings: ProviderSettings) -> tuple[str, str, str]:
    """``(endpoint, deployment, api_version)`` of the Azure route; a ProviderError naming what is missing."""
    azure = dict(settings.azure)
    azure.setdefault("endpoint", os.environ.get("AZURE_OPENAI_ENDPOINT", ""))
    missing = [f for f in AZURE_FIELDS if not str(azure.get(f) or "").strip()]
    if missing:
        raise ProviderError("bad_request", f"provider azure needs {', '.join(missing)} in the config's "
                            "providers.azure (endpoint, deployment, api_version)")
    return str(azure["endpoint"]).rstrip("/"), str(azure["deployment"]), str(azure["api_version"])


SDK_DEFAULT_BASE_URLS = {"openai": "https://api.openai.com/v1/", "anthropic": "https://api.anthropic.com"}
"""What ``openai.OpenAI().base_url`` / ``anthropic.Anthropic().base_url`` resolve to with no base URL and no
``*_BASE_URL`` variable (tests compare these with the installed SDKs, so a change there is caught)."""


def resolved_base_url(provider: str, settings: ProviderSettings | None = None) -> str | None:
    """Where ``provider``'s calls go, as its SDK client resolves it: ``base_urls``, then the SDK's environment
    variable, then the SDK's default host (``https://api.openai.com/v1/``); Azure:
    ``<endpoint>/openai/deployments/<deployment>/``. No call, and no SDK import (a run records this before its
    signal handlers are in place). None for ``offline`` or an Azure route missing its settings."""
    settings = settings or ProviderSettings()
    if provider == "offline":
        return None
    base_url = settings.base_urls.get(provider) or None
    if provider == "azure":
        try:
            endpoint, deployment, _ = azure_target(settings)
        except ProviderError:
            return None
        return f"{endpoint}/openai/deployments/{deployment}/"
    if provider in SDK_DEFAULT_BASE_URLS:
        return base_url or os.environ.get(BASE_URL_ENV[provider]) or SDK_DEFAULT_BASE_URLS[provider]
    return base_url


def _key_env_for(provider: str, settings: ProviderSettings) -> str:
    if provider in settings.api_key_envs:
        return settings.api_key_envs[provider]
    return KEY_ENV.get(provider, _env_name(provider))


# ---------------------------------------------------------------------- errors


def _retry_after(headers: Any) -> float | None:
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) / scale)
        except ValueError:
            continue  # an HTTP date: rare from these APIs, fall back to our own backoff
    return None


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


def classify(exc: BaseException, provider: str, model: str, settings: ProviderSettings) -> ProviderError:
    """Turn an SDK (or parsing) exception into a ProviderError with the kind and retry decision of our policy."""
    if isinstance(exc, ProviderError):
        return exc
    where = f"{provider} {model}"
    if _sdk_error(exc, "APITimeoutError"):
        return ProviderError("timeout", f"{where}: no reply within {settings.timeout_s:g} s", retryable=True)
    if _sdk_error(exc, "APIConnectionError"):
        cause = exc.__cause__ or exc
        return ProviderError("connection", f"{where}: connection failed ({type(cause).__name__}: {cause})",
                             retryable=True)
    if _sdk_error(exc, "APIStatusError"):
        status = int(exc.status_code)
        text = _status_message(exc)
        code = _error_code(exc)
        retry_after = _retry_after(getattr(exc.response, "headers", None))
        env = _key_env_for(provider, settings)
        if status == 429 and code == "insufficient_quota":
            return ProviderError("billing", f"{where}: the run is blocked on billing: the account is out of quota "
                                 f"(HTTP 429 insufficient_quota: {text}); add credit, then resume", status=status)
        if status == 400 and "credit balance" in text.lower():
            return ProviderError("billing", f"{where}: the run is blocked on billing: the credit balance is too "
                                 f"low (HTTP 400: {text}); add credit, then resume", status=status)
        if status == 429 and "request too large" in text.lower():  # OpenAI: bigger than the whole TPM budget
            return _too_large(provider, model, f"the provider refused it as larger than the tokens-per-minute "
                              f"budget (HTTP 429: {text})", 1)
        if status == 429:
            return ProviderError("rate_limit", f"{where}: rate limited (HTTP 429: {text})", status=status,
                                 retry_after=retry_after, retryable=True)
        if status == 408:
            return ProviderError("timeout", f"{where}: request timeout (HTTP 408: {text})", status=status,
                                 retry_after=retry_after, retryable=True)
        if status == 409 or status >= 500:
            return ProviderError("server", f"{where}: server error (HTTP {status}: {text})", status=status,
                                 retry_after=retry_after, retryable=True)
        if status in (401, 403):
            return ProviderError("auth", f"{where}: the key in {env} was rejected (HTTP {status}: {text}); "
                                 f"check it or run {SETUP_COMMAND}", status=status)
        if status == 404:
            return ProviderError("not_found", f"{where}: not found (HTTP 404: {text}); check the model name and "
                                 "base URL", status=status)
        return ProviderError("bad_request", f"{where}: request rejected (HTTP {status}: {text})", status=status)
    if isinstance(exc, ValueError):  # json.JSONDecodeError and the SDKs' response validation errors
        return ProviderError("malformed", f"{where}: the reply body is not valid JSON ({exc})", retryable=True)
    if _sdk_error(exc, "APIResponseValidationError"):
        return ProviderError("malformed", f"{where}: the reply does not have the expected shape ({exc})",
                             retryable=True)
    raise exc


def _outcome(err: ProviderError) -> str:
    if err.kind == "rate_limit":
        return "rate_limit"
    if err.kind == TOO_LARGE:
        return "refused"  # the provider did not take it, and no wait would change that
    if err.kind == "server":
        return "server"
    return "error"


# ---------------------------------------------------------------------- one attempt


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
    kwargs: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens,
        "messages": [dict(m) for m in request.messages],
        "timeout": timeout,
    }
    if request.system is not None:
        kwargs["system"] = request.system
    send_temperature = not _POOL.rejects_temperature(request.model)
    if send_temperature:
        kwargs["extra_body"] = {"temperature": request.temperature}
    try:
        message, headers = _answered(client.messages.with_raw_response.create(**kwargs))
    except Exception as exc:
        if not (send_temperature and _rejects_temperature(exc)):
            raise
        _POOL.mark_rejects_temperature(request.model)
        kwargs.pop("extra_body")
        message, headers = _answered(client.messages.with_raw_response.create(**kwargs))
    where = f"anthropic {request.model}"
    if message.stop_reason == "refusal":
        raise _failed_reply(ProviderError("refusal", f"{where}: the model refused to answer (stop_reason refusal)"),
                            headers)
    text = "".join(getattr(b, "text", "") for b in (message.content or ()) if getattr(b, "type", "") == "text")
    if not text.strip() and not request.allow_empty:
        raise _failed_reply(ProviderError("malformed", f"{where}: empty reply (no text content, stop_reason "
                                          f"{message.stop_reason})"), headers)
    return _Reply(text, message, message.stop_reason, headers)


def _send_openai(client: Any, request: ChatRequest, timeout: float) -> _Reply:
    messages = [{"role": "system", "content": request.system}] if request.system is not None else []
    messages += [dict(m) for m in request.messages]
    kwargs: dict[str, Any] = {
        "model": request.model,
        "messages": messages,
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "timeout": timeout,
    }
    if request.n is not None:
        kwargs["n"] = request.n
    response, headers = _answered(client.chat.completions.with_raw_response.create(**kwargs))
    where = f"{request.provider} {request.model}"
    if isinstance(response, (str, bytes)) or not getattr(response, "choices", None):
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
        raise _failed_reply(ProviderError("malformed", f"{where}: empty reply (no message content, finish_reason "
                                          f"{choice.finish_reason})"), headers)
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


# ---------------------------------------------------------------------- the retry loop


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
TOO_LARGE = "too_large_for_tpm"
"""The error kind of a call larger than the whole tokens-per-minute budget: no retry can send it."""


def _too_large(provider: str, model: str, detail: str, attempts: int) -> ProviderError:
    return ProviderError(TOO_LARGE, f"{provider} {model}: {detail}; shorten the prompt (e.g. a smaller context or "
                         "top_k target option), use a model or usage tier with a higher tokens-per-minute limit, or "
                         f"set providers.{provider}.tpm in the config if that budget is wrong", attempts=attempts)


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
                raise _too_large(provider, model, str(exc).split(": ", 1)[-1], tries) from None
        try:
            result = attempt()
        except Exception as exc:  # noqa: BLE001 - classify re-raises what it does not know
            try:
                err = classify(exc, provider, model, settings)
            except Exception:  # not an API error we know: a reply our parsing did not expect
                if limiter is not None:
                    limiter.release(provider, "error", None, ticket=ticket)
                raise ProviderError("malformed", f"{provider} {model}: unexpected reply "
                                    f"({type(exc).__name__}: {str(exc)[:200]})", attempts=tries) from None
            err.attempts = tries
            if err.kind == "rate_limit" and first_rate_limit is None:
                first_rate_limit = time.monotonic()
            if limiter is not None:
                limiter.release(provider, _outcome(err), err.retry_after, ticket=ticket, headers=_reply_headers(exc))
                if err.kind == "rate_limit" and hasattr(limiter, "delay"):  # the 429 taught a budget this call
                    try:  # can never fit: say so now, not after its Retry-After
                        limiter.delay(provider, model=model, tokens=getattr(ticket, "counted", 0),
                                      extra_tokens=extra_tokens)
                    except OversizeCall as too_big:
                        raise _too_large(provider, model, str(too_big).split(": ", 1)[-1], tries) from None
            if err is not exc:
                raise err from None
            raise
        if limiter is not None:
            limiter.release(provider, "ok", None, ticket=ticket, headers=getattr(result, "headers", None),
                            used_tokens=getattr(result, "input_tokens", None))
        return result

    def give_up(err: ProviderError) -> bool:
        if not err.retryable:
            return True
        if err.kind == "malformed":
            return err.attempts >= MALFORMED_MAX_ATTEMPTS
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


def pacing_tokens(request: ChatRequest) -> int:
    """The input tokens a call reserves on a tokens-per-minute budget: the exact count when this process already
    made one for this request (the reader counts its prompt), else tiktoken when its file is loaded, else the
    estimate. Never a network call: the pacer corrects the count with what the provider reports."""
    key = request.key()
    with _COUNTS_LOCK:
        known = _COUNTS.get(key)
    if known is not None:
        return known
    name = tiktoken_encoding_name(request.model)
    if name and _ENCODINGS.loaded(name):
        try:
            counted = tiktoken_count(request)
        except Exception:  # noqa: BLE001 - counting must never fail a call
            counted = None
        if counted is not None:
            return counted
    return estimate_tokens((request.system or "") + "".join(str(m.get("content", "")) for m in request.messages))


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
        tokens=lambda: pacing_tokens(request),
        extra_tokens=0 if route.kind == "anthropic" else int(request.max_tokens or 0),  # OpenAI counts max_tokens
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
                                     on_retry=on_retry, tokens=sum(estimate_tokens(t) for t in batch))
        response = reply.response
        vectors.extend(list(item.embedding) for item in sorted(response.data, key=lambda d: d.index))
    return vectors


def count_tokens_how(request: ChatRequest, settings: ProviderSettings | None = None, *,
                     remote: bool = True) -> tuple[int, str] | None:
    """Exact input tokens and how they were counted, or None (callers then estimate).

    ``provider``: Anthropic's ``messages.count_tokens`` (a network call, only when ``remote``). ``tiktoken``:
    OpenAI's own tokenizer for OpenAI models on any OpenAI-wire provider (local once its file is loaded).
    Best effort: never raises.
    """
    if request.provider == "anthropic":
        if not remote:
            return None
        settings = settings or ProviderSettings()
        try:
            route = _route(request.provider, settings)
            client = route.client(settings.timeout_s)
            kwargs: dict[str, Any] = {"model": request.model, "messages": [dict(m) for m in request.messages]}
            if request.system is not None:
                kwargs["system"] = request.system
            counted = int(client.messages.count_tokens(**kwargs).input_tokens)
        except Exception:  # noqa: BLE001 - counting must never fail a run
            return None
        _remember_count(request, counted)
        return counted, "provider"
    try:
        counted = tiktoken_count(request)
    except Exception:  # noqa: BLE001 - counting must never fail a run
        return None
    if counted is None:
        return None
    _remember_count(request, counted)
    return counted, "tiktoken"


def count_tokens(request: ChatRequest, settings: ProviderSettings | None = None) -> int | None:
    """Exact input tokens (Anthropic's counter, or tiktoken for OpenAI models); None where neither applies."""
    counted = count_tokens_how(request, settings)
    return None if counted is None else counted[0]


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
