"""Where a model call goes: the provider's route (SDK client kind, base URL, key, Azure deployment), the settings that
choose it, and the SDK clients, built once per route and shared by every thread.

Routes: ``anthropic`` (the Messages API), ``openai`` (Chat Completions), ``azure`` (Azure OpenAI's client:
``<endpoint>/openai/deployments/<deployment>/``), any other name with a base URL (an OpenAI-compatible server;
key ``<NAME>_API_KEY``, else ``OPENAI_API_KEY``, else ``EMPTY``). ``offline`` has no route. The SDKs' own retries
are off (``max_retries=0``): ``retries`` counts every attempt.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Mapping

from lme.core import command_names, endpoint_urls
from lme.core.facts import is_offline
from lme.models.provider_errors import ProviderError, _status_message

KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "azure": "AZURE_OPENAI_API_KEY"}
BASE_URL_ENV = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}


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


class _ClientPool:
    """SDK clients, built once per (kind, base URL, key fingerprint, timeout) and reused by every thread; also which
    Anthropic models reject ``temperature``."""

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


def import_sdks(providers: Any) -> None:
    """Import the SDK each of ``providers`` is called through (``anthropic``; every other route is OpenAI's client),
    none for ``offline``: done before the start-up probe, so that the probe's round trip can overlap other work."""
    for name in sorted({"anthropic" if p == "anthropic" else "openai" for p in providers if not is_offline(p)}):
        __import__(name)


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
    if is_offline(provider):
        raise ProviderError(
            "bad_request",
            "provider 'offline' has no chat model: the offline target and offline judge run without this layer; "
            "pick a model provider (anthropic, openai, or one with a base_url) for model calls",
        )
    base_url = settings.base_urls.get(provider) or None
    if provider in KEY_ENV:
        azure = azure_target(settings) if provider == "azure" else None
        env = key_env_for(provider, settings)
        key = os.environ.get(env, "").strip()
        if not key:
            fix = "export the key of your Azure OpenAI resource" if azure else f"export it or run {command_names.SETUP}"
            raise ProviderError("auth", f"{env} is not set: {fix}")
        if azure is not None:
            return _Route("azure", azure[0], key, azure[1:])
        return _Route(provider, base_url or os.environ.get(BASE_URL_ENV[provider]) or None, key)
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
    if is_offline(provider):
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


def endpoint_host(provider: str, settings: ProviderSettings | None = None) -> str | None:
    """The host (``host[:port]``) ``provider``'s calls go to, parsed from ``resolved_base_url`` (never a substring
    test: ``http://api.openai.com@127.0.0.1:8/v1`` goes to ``127.0.0.1:8``); None for offline."""
    return endpoint_urls.host_of(resolved_base_url(provider, settings))


def shown_base_url(provider: str, settings: ProviderSettings | None = None) -> str | None:
    """``resolved_base_url`` with its credentials redacted: what is recorded and printed."""
    return endpoint_urls.redact(resolved_base_url(provider, settings))


def key_env_for(provider: str, settings: ProviderSettings) -> str:
    if provider in settings.api_key_envs:
        return settings.api_key_envs[provider]
    return KEY_ENV.get(provider, _env_name(provider))
