"""Before a run starts: can each model it calls be called at all? One line if not, before anything is written.

Two steps, both before the run directory, the cache or a lock exist: ``refuse_locally`` (what needs no request;
also what ``--background`` checks before it detaches), then ``probe``: the smallest request the API allows per
distinct (provider, model, base URL, key), through the same route the run uses. Anything a run would retry (429,
5xx, a timeout) is not a reason to refuse: the run's own retries handle it. Probes are remembered for the process
(``_SEEN``), so a target and judge on one model cost one probe, and for a few minutes across runs
(``recent_probes``: same route, key and model only).

The probe carries the header ``x-longmemeval-probe: 1`` so a server log (and the tests' fake server) can tell it
from the run's calls. It is skipped for ``--offline`` and for targets whose calls are the user's own code.
"""

from __future__ import annotations

import hashlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Sequence

from lme.core import command_names
from lme.core.endpoint_urls import redact
from lme.core.errors import UserError
from lme.core.facts import is_offline
from lme.models import provider_routes
from lme.models import recent_probes
from lme.models.provider_errors import ProviderError
from lme.models.provider_routes import BASE_URL_ENV
from lme.models import provider_errors
from lme.models.request_bodies import is_reasoning_model

PROBE_HEADER = "x-longmemeval-probe"
PROBE_TIMEOUT_S = 30.0
"""At most this long per probe (less when the config's requestTimeoutSeconds is shorter)."""
_NO_READER_TARGETS = ("command", "python", "hypotheses", "offline")
"""Targets whose reader is not called through ``targetProvider``/``targetModel``: their own code, a file, or none."""
_SCHEMES = ("http://", "https://")
REASONING_PROBE_TOKENS = 16
"""A reasoning model's probe: ``max_completion_tokens`` (its reasoning may use them all: the reply can be empty)."""

_SEEN: dict[tuple[str, str, str | None, str], None] = {}
_SEEN_LOCK = threading.Lock()


@dataclass(frozen=True)
class Use:
    """One model the run calls: its role (``target`` or ``judge``), provider and model."""

    role: str
    provider: str
    model: str

    @property
    def flag(self) -> str:
        return "--target-model" if self.role == "target" else "--judge-model"

    @property
    def config_key(self) -> str:
        return "targetModel" if self.role == "target" else "judgeModel"


def uses(settings: Any) -> list[Use]:
    """The (role, provider, model) calls of a run under ``settings`` that go through this toolkit's SDK layer."""
    out = []
    if not is_offline(settings.target_provider) and settings.target not in _NO_READER_TARGETS:
        out.append(Use("target", settings.target_provider, settings.target_model))
    if not is_offline(settings.judge_provider):
        out.append(Use("judge", settings.judge_provider, settings.judge_model))
    return out


def _provider_settings(settings: Any) -> Any:
    return provider_routes.ProviderSettings(
        timeout_s=min(float(settings.timeout_s), PROBE_TIMEOUT_S), max_attempts=1,
        base_urls=dict(settings.base_urls), azure=dict(settings.azure))


def _where(use: Use) -> str:
    return f"the {use.role} model {use.provider}:{use.model}"


def refuse_locally(settings: Any) -> None:
    """Refuse, without a request, a run whose models cannot be called: raises UserError (one line)."""
    problems = local_problems(settings)
    if problems:
        raise problems[0][1]


def local_problems(settings: Any) -> list[tuple[Use, UserError]]:
    """Every model of the run that cannot be called, found without a request (a key unset, an unknown provider, a
    base URL without a scheme), with its one-line error, in the run's order (target first). The dry run lists
    them all; ``refuse_locally`` raises the first."""
    routes = _provider_settings(settings)
    problems = []
    for use in uses(settings):
        try:
            _check_locally(use, routes)
        except UserError as err:
            problems.append((use, err))
    return problems


def key_envs(settings: Any) -> list[tuple[Use, str]]:
    """The environment variable holding the key of each model the run calls (target first)."""
    routes = _provider_settings(settings)
    return [(use, provider_routes.key_env_for(use.provider, routes)) for use in uses(settings)]


def _check_locally(use: Use, routes: Any) -> None:
    if not str(use.model).strip():
        raise UserError(f"{_where(use)} has no model name", fix=f"set {use.config_key} in the config or pass "
                        f"{use.flag} {use.provider}:<model>")
    try:
        route = provider_routes._route(use.provider, routes)
    except ProviderError as err:
        raise UserError(f"{_where(use)} cannot be called: {err}") from None
    base = route.base_url
    if base is not None and not str(base).lower().startswith(_SCHEMES):
        source = _base_url_source(use.provider, routes)
        shown = redact(str(base))
        raise UserError(f"{_where(use)}: the base URL {shown!r} ({source}) has no scheme",
                        fix=f"write it with http:// or https://, e.g. http://{shown}")


def _base_url_source(provider: str, routes: Any) -> str:
    if routes.base_urls.get(provider):
        return f"config providers.{provider}.base_url"
    if provider == "azure":
        return "config providers.azure.endpoint or AZURE_OPENAI_ENDPOINT"
    return BASE_URL_ENV.get(provider, "base URL")


def probe(settings: Any, *, only: Sequence[Use] | None = None) -> list[recent_probes.Passed]:
    """One smallest request per distinct model the run calls (``only``: these uses instead, e.g. the target alone or
    a successor judge); raises UserError (one line) on a failure that no retry would fix. Call ``refuse_locally``
    first. A model probed with success a moment ago on the same route and key (``recent_probes``, in
    ``settings.cache_dir``) is not probed again; returns the probes that passed now, for ``recent_probes.remember``
    once the run has started."""
    routes = _provider_settings(settings)
    todo: dict[tuple[str, str, str | None, str], tuple[Use, Any, str]] = {}
    for use in (uses(settings) if only is None else only):
        route, key, memo = _where_to(use, routes, settings)
        if memo is not None:
            todo.setdefault(key, (use, route, memo))
    if not todo:
        return []
    at = time.time()
    with ThreadPoolExecutor(max_workers=len(todo), thread_name_prefix="probe") as pool:  # at once: one round trip
        futures = {key: pool.submit(_probe_one, use, route, routes, float(settings.timeout_s))
                   for key, (use, route, _) in todo.items()}
    passed = []
    for key, future in futures.items():  # in the run's order (target first): the first refusal is the line
        if future.result():
            passed.append(recent_probes.Passed(todo[key][2], at))
        with _SEEN_LOCK:
            _SEEN[key] = None
    return passed


def probe_error(use: Use, settings: Any, *, fresh: bool = False) -> tuple[ProviderError | None,
                                                                         list[recent_probes.Passed]]:
    """One probe of ``use`` (remembered like ``probe``'s: a model probed already, in this process or a moment ago
    by a run on the same route and key, is not probed again, unless ``fresh``), returning the classified error
    instead of a line (``judge_entry`` tells a retired judge from a refusal; None: it answered) and the probe that
    passed now."""
    routes = _provider_settings(settings)
    route, key, memo = _where_to(use, routes, settings, fresh=fresh)
    if memo is None:
        return None, []
    at = time.time()
    try:
        _send(route, use.model, routes.timeout_s, float(settings.timeout_s))
    except Exception as exc:  # noqa: BLE001 - classified; what is not an SDK error is re-raised by classify
        return provider_errors.classify(exc, use.provider, use.model, timeout_s=routes.timeout_s,
                                        key_env=provider_routes.key_env_for(use.provider, routes)), []
    with _SEEN_LOCK:
        _SEEN[key] = None
    return None, [recent_probes.Passed(memo, at)]


def _where_to(use: Use, routes: Any, settings: Any, *, fresh: bool = False) -> tuple[
        Any, tuple[str, str, str | None, str], str | None]:
    """``use``'s route, its key in this process's memory of probes, and its ``recent_probes`` fingerprint; unless
    ``fresh``, the fingerprint is None when the model needs no probe (probed already in this process, or a moment
    ago by a run on the same route and key, which this process then remembers too)."""
    route = provider_routes._route(use.provider, routes)
    key = (route.kind, use.model, route.base_url, hashlib.sha256(route.api_key.encode()).hexdigest()[:16])
    memo = recent_probes.fingerprint(route.kind, route.base_url, route.api_key, use.model, route.azure)
    if fresh:
        return route, key, memo
    with _SEEN_LOCK:
        if key in _SEEN:
            return route, key, None
    if recent_probes.recent(getattr(settings, "cache_dir", None), memo):
        with _SEEN_LOCK:
            _SEEN[key] = None
        return route, key, None
    return route, key, memo


def fingerprint(use: Use, settings: Any) -> str:
    """``use``'s ``recent_probes`` fingerprint on the run's route and key."""
    return _where_to(use, _provider_settings(settings), settings, fresh=True)[2]


def forget() -> None:
    """Forget the probes made so far (a long-lived process whose keys or servers changed; tests)."""
    with _SEEN_LOCK:
        _SEEN.clear()


def _send(route: Any, model: str, timeout: float, client_timeout: float) -> None:
    """The probe's one request, ``timeout`` on the request itself, through the client the run then uses (built
    with the run's ``client_timeout``): an SDK client costs ~0.1 s to build, and one built for the probe's shorter
    timeout would leave the run to build its own on the way to its first call."""
    client = route.client(client_timeout)
    headers = {PROBE_HEADER: "1"}
    messages = [{"role": "user", "content": "ping"}]
    if route.kind == "anthropic":
        client.messages.create(model=model, max_tokens=1, messages=messages, timeout=timeout, extra_headers=headers)
    elif is_reasoning_model(model):  # they reject max_tokens (and answer 400 to it, which the probe would let by)
        client.chat.completions.create(model=model, max_completion_tokens=REASONING_PROBE_TOKENS, messages=messages,
                                       timeout=timeout, extra_headers=headers)
    else:
        client.chat.completions.create(model=model, max_tokens=1, messages=messages, timeout=timeout,
                                       extra_headers=headers)


def _probe_one(use: Use, route: Any, routes: Any, client_timeout: float) -> bool:
    """True when the probe was answered; False when it failed in a way the run may start anyway; else UserError."""
    key_env = provider_routes.key_env_for(use.provider, routes)
    try:
        _send(route, use.model, routes.timeout_s, client_timeout)
        return True
    except Exception as exc:  # noqa: BLE001 - classified below; what is not an SDK error is re-raised there
        err = provider_errors.classify(exc, use.provider, use.model, timeout_s=routes.timeout_s, key_env=key_env)
    url = provider_routes.shown_base_url(use.provider, routes) or redact(route.base_url) or "the default host"
    line = refusal_line(use, err.kind, err.status, err.message, key_env=key_env, url=url)
    if line is not None:
        raise UserError(line)
    return False


def refusal_line(use: Use, kind: str, status: int | None, message: str, *, key_env: str, url: str) -> str | None:
    """The one line for a probe that failed with ``kind``; None when the run should start anyway (a retryable
    fault, or an answer the run's own calls may not get)."""
    what = f"{_where(use)} at {url}"
    detail = message.split(": ", 1)[-1] if message.startswith(f"{use.provider} {use.model}: ") else message
    if kind == "auth":
        return (f"{what}: the key in {key_env} was rejected (HTTP {status}); export a valid key in {key_env} "
                f"(or run {command_names.SETUP})")
    if kind == "not_found":
        return (f"{what}: no such model (HTTP 404); check the model name ({use.flag} or {use.config_key} in "
                ".longmemeval-benchmarks/config.json) and the base URL")
    if kind == "billing":
        return (f"{what}: the account is out of quota or credit (HTTP {status}); add credit or raise the quota in "
                "the provider's billing settings, then run again")
    if kind == "connection":
        detail = detail.removeprefix("connection failed (").removesuffix(")")
        return (f"{what}: cannot be reached ({detail}); check the URL (config providers.{use.provider}.base_url "
                f"or the *_BASE_URL variable) and the network")
    return None
