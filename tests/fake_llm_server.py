"""A fake OpenAI + Anthropic model server on 127.0.0.1, close enough that the real SDKs parse its replies.

Tests point the official ``openai`` / ``anthropic`` clients at it (``base_url``) and then assert on what was sent
(``server.requests``), inject faults, and get deterministic answers. Nothing here reaches the internet.

Endpoints: ``POST /v1/chat/completions`` (OpenAI), ``POST /v1/messages`` and ``/v1/messages/count_tokens``
(Anthropic), ``POST /v1/embeddings`` (OpenAI; vectors derived from a sha256 of the text), and Azure OpenAI's
``POST /openai/deployments/<deployment>/chat/completions?api-version=...`` (answered as OpenAI chat; the
``AzureOpenAI`` client's ``azure_endpoint`` is ``root_url``; the log entry's ``query`` holds the api-version). Error bodies use the
shape of the API the path belongs to (``/v1/messages*`` is Anthropic, the rest OpenAI). The Batch APIs of both
(``/v1/files``, ``/v1/batches``, ``/v1/messages/batches``) are ``server.batches``, a ``fake_batch_api.BatchAPI``
answering with this server's policies (``reply_text``): faults and latency apply to them too; each retrieve moves
a batch one state on unless a test sets ``server.batches.auto_advance_every = None``.

Policies (all deterministic):

- Token counts: ``len(text) // 4 + 1`` for the prompt (system + every message) and for the reply.
- Returned model: ``gpt-4o`` -> ``gpt-4o-2024-08-06``, ``gpt-4o-mini`` -> ``gpt-4o-mini-2024-07-18``
  (what the real API does for these aliases); any other model is echoed.
- A request is a *judge call* iff its ``max_tokens`` is 10, the setting upstream's judge uses, or it sets
  ``max_completion_tokens`` (a reasoning-model judge). Everything else is a *reader call*.
- Reader calls: ``answer_fn(body)`` decides when set and returns a string. Otherwise, if the prompt contains a
  question registered in ``answers`` (``{question_text: gold}``), the reply is the gold answer for a stable
  ``correct_share`` of questions (``sha256(question) % 1000 < correct_share * 1000``) and ``"I don't know."`` for
  the rest. Unregistered prompts also get ``"I don't know."``.
- Judge calls: ``judge_fn(prompt)`` decides when set. Otherwise the reply is ``"yes"`` iff the response part of
  the prompt contains the gold answer (case-insensitive), else ``"no"``. The response part is found two ways:
  (1) a registered question occurs in the prompt: its gold answer must occur at least twice after the question
  (once as the reference answer, once inside the response); (2) else, for the test stand-in template
  (``... A=<gold> R=<response>``), the text after the last ``" R="`` must contain the text between the last
  ``"A="`` before it and that marker.

Models as the real API treats them: ``gone_models = {model or deployment: 404 | 410}`` answers every chat call to
it (probes too) with 404 ``model_not_found`` or 410 Gone, and ``GET /v1/models/{id}`` the same; ``model_swap =
{requested: returned}`` names another model in the response (an alias moved on, an Azure auto-upgrade);
``model_entries = {id: {"shutdown_date": ...}}`` adds fields to ``GET /v1/models/{id}`` (logged in
``model_lookups``, not ``requests``; ``latency`` applies to it, as to any request). Reasoning models (``o1``, ``o3-mini``, ``gpt-5*``: ``REASONING_MODEL``) answer
400 to ``max_tokens`` and to a ``temperature`` other than 1, with OpenAI's wording; ``o3-mini`` comes back as
``o3-mini-2025-01-31``. A proxy path (``/api.openai.com/v1/chat/completions``) is served as ``/v1/...``.

Faults: ``fail_next(kind, count=1, **opts)`` queues faults for the next requests, in order; ``fault_rate =
{kind: p}`` draws faults at random (seeded). Kinds: ``429`` (opts ``retry_after`` seconds, default 0.1: sent as
``Retry-After`` and ``retry-after-ms``), ``insufficient_quota`` (OpenAI-shaped 429), ``credit_balance``
(Anthropic-shaped 400), ``500``, ``503``, ``529`` (Anthropic ``overloaded_error``), ``400``, ``401``, ``404``,
``410`` (Gone: a retired deployment),
``reset`` (socket closed, no response), ``timeout`` (sleep ``seconds``, default 5, before answering),
``malformed`` (200 with an invalid JSON body), ``empty_body`` (200 with the body ``{}``: valid JSON, no reply in it), ``truncated`` (Content-Length larger than the body, then close),
``empty`` (no choices / empty content list; ``variant="blank"`` gives one choice / block with ``""``),
``refusal`` (OpenAI ``message.refusal`` with ``content: null``; Anthropic ``stop_reason: "refusal"``).
``rate_limit_rps = R`` adds a token bucket (burst R): requests beyond it get a 429 with Retry-After (no rate headers).

Probes: a request with the header ``x-longmemeval-probe`` is the run's start-up check (scripts/lme/models/provider_probe.py),
not one of its calls. It is logged in ``probes``, not ``requests``, is answered ``pong`` (never by ``answer_fn`` or
``judge_fn``), is not charged to any rate limit, and takes no queued fault (``fail_next`` scripts the run's calls); it gets a ``fault_rate`` fault only when that fault is
certain (probability >= 1), and is otherwise answered as any request.

Rate limits as the providers enforce and report them: ``rpm`` (requests per minute) and ``tpm`` (tokens per
minute) give each model (``rate_limit_per_model``; else each API shape) two buckets that refill continuously and
hold ``burst_s`` seconds of the limit (60: the whole minute; 1: a provider that enforces shorter windows). A request
goes when the bucket holds its cost or is full (a request bigger than the bucket then leaves it in debt); else it
is answered at once with a 429 and ``Retry-After``. Token cost: the prompt tokens, plus ``max_tokens`` on the
OpenAI shape (OpenAI counts it up front); embeddings cost their input tokens. A request above the whole ``tpm`` gets
OpenAI's "Request too large" 429 (Anthropic shape: a plain rate-limit 429). Every reply then carries the provider's
headers (``rate_headers``: None = when ``rpm`` or ``tpm`` is set): OpenAI ``x-ratelimit-limit-requests``,
``-remaining-requests``, ``-reset-requests`` (``"1.5s"``, ``"6m0s"``, ``"120ms"``) and ``-tokens``; Anthropic
``anthropic-ratelimit-requests-limit`` / ``-remaining`` / ``-reset`` (RFC 3339), ``-input-tokens-*``,
``-output-tokens-*`` and ``-tokens-*``. Header modes: ``rate_headers = False`` sends none of these (a proxy or an
OpenAI-compatible server: a 429 says only when to retry); ``retry_after_seconds = True`` makes that a bare RFC 9110
``Retry-After`` in whole seconds, rounded up, without ``retry-after-ms`` (what most proxies send). A ``tpm`` without
an ``rpm`` is a tokens-only limit. Each log entry records the reply's ``status`` (and ``cost``, the tokens charged,
when a limit took it).

CLI (for benchmarks that need a server in a subprocess)::

    python tests/fake_llm_server.py --port 0 --latency 0.05 --rate-limit 20 --answers answers.json

prints the root URL (``http://127.0.0.1:PORT``; the Anthropic base URL; OpenAI's is that plus ``/v1``) as the
first stdout line and serves until killed.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import lzma
import math
import random
import re
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

MODEL_ALIASES = {"gpt-4o": "gpt-4o-2024-08-06", "gpt-4o-mini": "gpt-4o-mini-2024-07-18",
                 "o3-mini": "o3-mini-2025-01-31"}
REASONING_MODEL = re.compile(r"^(o\d+(-|$)|gpt-5)")
"""Models answered as OpenAI's reasoning models: 400 to ``max_tokens`` and to any ``temperature`` but 1."""
WRONG_ANSWER = "I don't know."
FAULT_KINDS = (
    "429",
    "insufficient_quota",
    "credit_balance",
    "500",
    "503",
    "529",
    "400",
    "401",
    "404",
    "404_plain",
    "410",
    "reset",
    "timeout",
    "malformed",
    "empty_body",
    "truncated",
    "empty",
    "refusal",
)
EMBEDDING_DIM = 64
_AZURE_CHAT = re.compile(r"/openai/deployments/[^/]+/chat/completions")
_TAIL_CHARS = 4000


def estimate_tokens(text: str) -> int:
    return len(text) // 4 + 1


def stable_share(text: str) -> int:
    """A stable number in [0, 1000) for ``text`` (sha256, not ``hash()``, so it survives process restarts)."""
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest(), 16) % 1000


def embedding_for(text: str, dim: int = EMBEDDING_DIM) -> list[float]:
    """A deterministic unit vector derived from sha256 of ``text``."""
    values: list[float] = []
    counter = 0
    while len(values) < dim:
        digest = hashlib.sha256(f"{counter}:{text}".encode("utf-8")).digest()
        for i in range(0, len(digest), 2):
            values.append(int.from_bytes(digest[i : i + 2], "big") / 32767.5 - 1.0)
        counter += 1
    values = values[:dim]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, Mapping):
                parts.append(str(block.get("text", "")))
            else:
                parts.append(str(block))
        return "\n".join(parts)
    return str(content)


def prompt_text(body: Mapping[str, Any]) -> str:
    """System + every message's text, joined by newlines (what the policies and token counts look at)."""
    parts = []
    if body.get("system") is not None:
        parts.append(_content_text(body["system"]))
    for message in body.get("messages") or ():
        if isinstance(message, Mapping):
            parts.append(_content_text(message.get("content")))
    return "\n".join(parts)


def is_judge_request(body: Mapping[str, Any]) -> bool:
    """upstream's judge (``max_tokens`` 10), or any call with ``max_completion_tokens`` (a reasoning-model judge:
    the readers send ``max_tokens``)."""
    return body.get("max_tokens") == 10 or body.get("max_completion_tokens") is not None


def proxy_path(path: str) -> str:
    """A proxy's path (``/api.openai.com/v1/chat/completions``, ``/x/v1/models/m``) served as the API's own
    (``/v1/...``); the API's and Azure's own paths are kept."""
    if path.startswith("/v1/") or path.startswith("/openai/") or "/v1/" not in path:
        return path
    return path[path.index("/v1/"):]


class _Bucket:
    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.tokens = rate
        self.stamp = time.monotonic()

    def take(self) -> float | None:
        """Take one token; None when granted, else seconds until one is available."""
        now = time.monotonic()
        self.tokens = min(self.rate, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return None
        return (1.0 - self.tokens) / self.rate


def go_duration(seconds: float) -> str:
    """OpenAI's reset format: ``0.12`` -> ``"120ms"``, ``1.5`` -> ``"1.5s"``, ``360`` -> ``"6m0s"``."""
    if seconds < 1.0:
        return f"{max(0, round(seconds * 1000))}ms"
    minutes, rest = divmod(seconds, 60.0)
    rest_text = f"{rest:.3f}".rstrip("0").rstrip(".")
    return f"{int(minutes)}m{rest_text}s" if minutes else f"{rest_text}s"


def rfc3339_in(seconds: float) -> str:
    from datetime import datetime, timedelta, timezone

    when = datetime.now(timezone.utc) + timedelta(seconds=max(0.0, seconds))
    return when.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class _Allowance:
    """One per-minute limit as the fake enforces it: refills continuously, holds ``burst_s`` seconds of it."""

    def __init__(self, per_minute: float, burst_s: float) -> None:
        self.limit = float(per_minute)
        self.rate = self.limit / 60.0
        self.capacity = max(self.limit * burst_s / 60.0, 1.0)
        self.level = self.capacity
        self.stamp = time.monotonic()

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    def wait_for(self, cost: float) -> float:
        missing = min(cost, self.capacity) - self.level
        return 0.0 if missing <= 1e-9 else missing / self.rate

    def until_full(self) -> float:
        return max(0.0, self.capacity - self.level) / self.rate


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 512

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (killed mid-request, as crash tests do) is not a server error."""
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


class FakeLLMServer:
    """See the module docstring. Attributes may be changed while the server runs."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, seed: int = 0, log_bodies: bool = True) -> None:
        self.host = host
        self.port = port
        self.latency: float | tuple[float, float] = 0.0
        self.answers: dict[str, Any] = {}
        self.correct_share: float = 1.0
        self.answer_fn: Callable[[Mapping[str, Any]], str | None] | None = None
        self.judge_fn: Callable[[str], str] | None = None
        self.fault_rate: dict[str, float] = {}
        self.rate_limit_rps: float | None = None
        self.rpm: float | None = None
        self.tpm: float | None = None
        self.burst_s: float = 60.0
        self.rate_headers: bool | None = None
        self.retry_after_seconds = False
        """A rate-limit 429 carries only ``Retry-After`` in whole seconds (no ``retry-after-ms``)."""
        self.rate_limit_per_model = True
        self.gone_models: dict[str, int] = {}
        """Model ids (or Azure deployment names) that are retired: 404 ``model_not_found`` or 410 Gone for every
        chat call (probes included) and for ``GET /v1/models/{id}``."""
        self.model_swap: dict[str, str] = {}
        """Returned model for a requested one (after aliases): an alias that moved on, an Azure auto-upgrade."""
        self.model_entries: dict[str, dict[str, Any]] = {}
        """Extra fields of ``GET /v1/models/{id}`` per model (e.g. ``{"shutdown_date": "2027-01-14"}``)."""
        self.models_route = True
        """False: a gateway that serves chat but not ``GET /v1/models[/{id}]`` (a plain 404 there, no error code)."""
        self._allowances: dict[tuple[str, str], tuple[_Allowance | None, _Allowance | None]] = {}
        self.log_bodies = log_bodies
        """False keeps only path, headers and time per request (long benchmark runs would hold GBs)."""
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._requests: list[dict[str, Any]] = []
        self._probes: list[dict[str, Any]] = []
        self._model_lookups: list[dict[str, Any]] = []
        self._faults: list[tuple[str, dict[str, Any]]] = []
        self._bucket: _Bucket | None = None
        self._counter = 0
        self._stopping = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        from fake_batch_api import BatchAPI  # here, not at the top: fake_batch_api imports this module

        self.batches = BatchAPI(self.reply_text, seed=seed)
        """Both providers' batch endpoints (``fake_batch_api``), answered with this server's policies; every
        retrieve of a batch moves it one state on (``auto_advance_every = None`` holds batches where a test puts
        them)."""
        self.batches.auto_advance_every = 1

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> "FakeLLMServer":
        if self._httpd is not None:
            return self
        self._stopping.clear()
        handler = type("_BoundHandler", (_Handler,), {"fake": self})
        self._httpd = _Server((self.host, self.port), handler)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-llm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> "FakeLLMServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def root_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.root_url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.root_url

    # ------------------------------------------------------------------ test controls

    @property
    def requests(self) -> list[dict[str, Any]]:
        """A snapshot of every request received so far: ``{"path", "headers", "body", "raw", "t"}``."""
        with self._lock:
            return list(self._requests)

    @property
    def probes(self) -> list[dict[str, Any]]:
        """The start-up probes received so far (same shape as ``requests``; see the module docstring)."""
        with self._lock:
            return list(self._probes)

    @property
    def model_lookups(self) -> list[dict[str, Any]]:
        """The ``GET /v1/models[/{id}]`` requests received so far (same shape as ``requests``)."""
        with self._lock:
            return list(self._model_lookups)

    def reset(self) -> None:
        """Forget logged requests, queued faults and the rate buckets (settings such as ``answers`` stay)."""
        with self._lock:
            self._requests.clear()
            self._probes.clear()
            self._model_lookups.clear()
            self._faults.clear()
            self._bucket = None
            self._allowances.clear()

    # ------------------------------------------------------------------ provider rate limits

    def _limits_for(self, shape: str, model: str) -> tuple[_Allowance | None, _Allowance | None]:
        key = (shape, model if self.rate_limit_per_model else "")
        found = self._allowances.get(key)
        wanted = (self.rpm, self.tpm, self.burst_s)
        if found is None or getattr(found, "settings", None) != wanted:
            found = _Limits(_Allowance(self.rpm, self.burst_s) if self.rpm else None,
                            _Allowance(self.tpm, self.burst_s) if self.tpm else None, wanted)
            self._allowances[key] = found
        return found

    def admit(self, shape: str, model: str, cost: int) -> tuple[str | None, float, dict[str, str]]:
        """Charge one request of ``cost`` tokens: ``(None or "429" or "too_large", retry_after, headers)``."""
        with self._lock:
            if not (self.rpm or self.tpm):
                return None, 0.0, {}
            requests, tokens = self._limits_for(shape, model)
            now = time.monotonic()
            for allowance in (requests, tokens):
                if allowance is not None:
                    allowance.refill(now)
            verdict, wait = None, 0.0
            if tokens is not None and cost > tokens.limit:
                verdict = "too_large"
            else:
                wait = max(requests.wait_for(1) if requests else 0.0, tokens.wait_for(cost) if tokens else 0.0)
                if wait > 0:
                    verdict = "429"
                else:
                    if requests is not None:
                        requests.level -= 1
                    if tokens is not None:
                        tokens.level -= cost
            send = self.rate_headers if self.rate_headers is not None else True
            return verdict, wait, (_rate_headers(shape, requests, tokens) if send else {})

    def fail_next(self, kind: str, count: int = 1, **opts: Any) -> None:
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; known: {', '.join(FAULT_KINDS)}")
        with self._lock:
            self._faults.extend((kind, dict(opts)) for _ in range(count))

    # ------------------------------------------------------------------ internals used by the handler

    def _log(self, path: str, headers: Mapping[str, str], body: Any, raw: bytes, query: str = "") -> dict[str, Any]:
        entry: dict[str, Any] = {
            "path": path,
            "query": query,
            "headers": {k.lower(): v for k, v in headers.items()},
            "t": time.monotonic(),
        }
        if self.log_bodies:
            entry["body"] = body
            entry["raw"] = raw
        with self._lock:
            if path.startswith("/v1/models"):
                self._model_lookups.append(entry)
            else:
                (self._probes if is_probe(entry["headers"]) else self._requests).append(entry)
        return entry

    def _probe_fault(self) -> tuple[str, dict[str, Any]] | None:
        """The fault a probe gets: a ``fault_rate`` fault that is certain, else none."""
        with self._lock:
            return next(((kind, {}) for kind, p in self.fault_rate.items() if p >= 1.0), None)

    def _next_fault(self) -> tuple[str, dict[str, Any]] | None:
        with self._lock:
            if self._faults:
                return self._faults.pop(0)
            for kind, probability in self.fault_rate.items():
                if self._rng.random() < probability:
                    return kind, {}
            if self.rate_limit_rps:
                if self._bucket is None or self._bucket.rate != self.rate_limit_rps:
                    self._bucket = _Bucket(float(self.rate_limit_rps))
                wait = self._bucket.take()
                if wait is not None:
                    return "429", {"retry_after": round(max(wait, 0.001), 3)}
        return None

    def _delay(self) -> float:
        latency = self.latency
        if isinstance(latency, (tuple, list)):
            with self._lock:
                return self._rng.uniform(float(latency[0]), float(latency[1]))
        return float(latency or 0.0)

    def _next_id(self, prefix: str) -> str:
        with self._lock:
            self._counter += 1
            n = self._counter
        return f"{prefix}{n:012d}"

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)

    def reply_text(self, body: Mapping[str, Any]) -> str:
        prompt = prompt_text(body)
        if is_judge_request(body):
            if self.judge_fn is not None:
                return str(self.judge_fn(prompt))
            return self._default_judge(prompt)
        if self.answer_fn is not None:
            text = self.answer_fn(body)
            if text is not None:
                return str(text)
        question = self._find_question(prompt)
        if question is None:
            return WRONG_ANSWER
        if stable_share(question) < self.correct_share * 1000:
            return str(self.answers[question])
        return WRONG_ANSWER

    def _find_question(self, prompt: str) -> str | None:
        answers = dict(self.answers)
        tail = prompt[-_TAIL_CHARS:]
        for question in answers:
            if question and question in tail:
                return question
        for question in answers:
            if question and question in prompt:
                return question
        return None

    def _default_judge(self, prompt: str) -> str:
        question = self._find_question(prompt)
        if question is not None:
            gold = str(self.answers[question]).lower()
            after = prompt[prompt.find(question) + len(question) :].lower()
            return "yes" if gold and after.count(gold) >= 2 else "no"
        marker = prompt.rfind(" R=")
        start = prompt.rfind("A=", 0, marker) if marker >= 0 else -1
        if marker >= 0 and start >= 0:
            gold = prompt[start + 2 : marker].strip().lower()
            response = prompt[marker + 3 :].lower()
            return "yes" if gold and gold in response else "no"
        return "no"


class _Limits(tuple):
    """(requests, tokens) allowances of one key, with the settings they were made for."""

    def __new__(cls, requests: _Allowance | None, tokens: _Allowance | None, settings: tuple) -> "_Limits":
        made = super().__new__(cls, (requests, tokens))
        made.settings = settings
        return made


PROBE_HEADER = "x-longmemeval-probe"
PROBE_REPLY = "pong"
"""What a probe is answered (never ``answer_fn`` / ``judge_fn``: a test's reader may block, count or script)."""


def is_probe(headers: Mapping[str, str]) -> bool:
    """The request is the run's start-up probe (``headers`` lower-cased), not one of its calls."""
    return PROBE_HEADER in headers


def _rate_headers(shape: str, requests: _Allowance | None, tokens: _Allowance | None) -> dict[str, str]:
    headers: dict[str, str] = {}
    for name, allowance in (("requests", requests), ("tokens", tokens)):
        if allowance is None:
            continue
        limit, remaining = str(int(allowance.limit)), str(max(0, int(allowance.level)))
        if shape == "anthropic":
            reset = rfc3339_in(allowance.until_full())
            names = ["requests"] if name == "requests" else ["input-tokens", "tokens"]
            for budget in names:
                headers[f"anthropic-ratelimit-{budget}-limit"] = limit
                headers[f"anthropic-ratelimit-{budget}-remaining"] = remaining
                headers[f"anthropic-ratelimit-{budget}-reset"] = reset
            if name == "tokens":
                headers["anthropic-ratelimit-output-tokens-limit"] = limit
                headers["anthropic-ratelimit-output-tokens-remaining"] = limit
                headers["anthropic-ratelimit-output-tokens-reset"] = rfc3339_in(0)
        else:
            headers[f"x-ratelimit-limit-{name}"] = limit
            headers[f"x-ratelimit-remaining-{name}"] = remaining
            headers[f"x-ratelimit-reset-{name}"] = go_duration(allowance.until_full())
    return headers


def rate_cost(path: str, body: Mapping[str, Any]) -> tuple[str, str, int] | None:
    """``(shape, model, token cost)`` of a request the provider limits; None for the rest (count_tokens...)."""
    if path == "/v1/messages":
        return "anthropic", str(body.get("model", "")), estimate_tokens(prompt_text(body))
    if path == "/v1/chat/completions" or _AZURE_CHAT.fullmatch(path):
        model = str(body.get("model", "")) or path.split("/")[3]
        extra = int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)
        return "openai", model, estimate_tokens(prompt_text(body)) + extra
    if path == "/v1/embeddings":
        raw_input = body.get("input", [])
        texts = [raw_input] if isinstance(raw_input, str) else list(raw_input)
        return "openai", str(body.get("model", "")), sum(estimate_tokens(str(t)) for t in texts)
    return None


class _Handler(BaseHTTPRequestHandler):
    fake: FakeLLMServer
    _probe = False
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else Nagle + delayed ACK adds ~40 ms to every reply
    timeout = 60  # idle keep-alive connections are dropped after this

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - signature from the base class
        pass

    # ------------------------------------------------------------------ plumbing

    def _send(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
        headers = {**getattr(self, "_rate_headers", {}), **(headers or {})}
        entry = getattr(self, "_entry", None)
        if entry is not None:
            entry["status"] = status
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, socket.timeout, OSError):
            self.close_connection = True

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        self._log_and_dispatch(b"")

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        self._log_and_dispatch(raw)

    def do_DELETE(self) -> None:  # noqa: N802 - http.server naming (batch files and Anthropic batches)
        self._log_and_dispatch(b"")

    def _batch_route(self, path: str, query: str, raw: bytes) -> bool:
        """Answer a Files/Batches route through ``fake.batches`` (faults and latency apply); False for others."""
        fake = self.fake
        if not (path.startswith("/v1/files") or path.startswith("/v1/batches")
                or path.startswith("/v1/messages/batches")):
            return False
        try:
            body = json.loads(raw) if raw and not path.startswith("/v1/files") else None
        except ValueError:
            body = None
        self._entry = fake._log(path, dict(self.headers.items()), body, raw, query)
        self._rate_headers = {}
        fault = fake._next_fault()
        fake.sleep(fake._delay())
        anthropic = path.startswith("/v1/messages")
        if fault is not None and self._apply_fault(fault[0], fault[1], anthropic, path):
            return True
        answer = fake.batches.handle(self.command, path, query, dict(self.headers.items()), raw)
        if answer is None:
            self._error(404, "not_found_error", f"no route for {self.command} {path}", anthropic)
            return True
        status, headers, data = answer
        self._entry["status"] = status
        try:
            self.send_response(status)
            headers = {"Content-Type": "application/json", **headers}
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, socket.timeout, OSError):
            self.close_connection = True
        return True

    def _log_and_dispatch(self, raw: bytes) -> None:
        fake = self.fake
        path, _, query = self.path.partition("?")
        path = proxy_path(path)
        if self._batch_route(path, query, raw):
            return
        if self.command == "GET" and path.startswith("/v1/models"):
            self._entry = fake._log(path, dict(self.headers.items()), None, raw, query)
            self._rate_headers = {}
            fake.sleep(fake._delay())  # a round trip like any other: a run that reads the list waits for it
            self._models(path)
            return
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = None
        self._entry = fake._log(path, dict(self.headers.items()), body, raw, query)
        self._rate_headers = {}
        anthropic = path.startswith("/v1/messages")
        probe = self._probe = is_probe({k.lower(): v for k, v in self.headers.items()})
        limited = rate_cost(path, body) if isinstance(body, dict) and self.command == "POST" and not probe else None
        if limited is not None:
            verdict, wait, self._rate_headers = fake.admit(*limited)
            if verdict is not None:
                self._refuse(verdict, wait, anthropic, limited)
                return
            self._entry["cost"] = limited[2]
        fault = fake._probe_fault() if probe else fake._next_fault()
        fake.sleep(fake._delay())
        if fault is not None and self._apply_fault(fault[0], fault[1], anthropic, path):
            return
        if body is None or not isinstance(body, dict):
            self._error(400, "invalid_request_error", "request body is not a JSON object", anthropic)
            return
        if self.command != "POST":
            self._error(404, "not_found_error", f"no route for {self.command} {path}", anthropic)
        elif path == "/v1/chat/completions" or _AZURE_CHAT.fullmatch(path):
            if not self._model_refuses(path, body):
                self._send(200, self._openai_chat(body, fault), {"x-request-id": fake._next_id("req_")})
        elif path == "/v1/messages":
            self._send(200, self._anthropic_message(body, fault), {"request-id": fake._next_id("req_")})
        elif path == "/v1/messages/count_tokens":
            self._send(200, {"input_tokens": estimate_tokens(prompt_text(body))}, {"request-id": fake._next_id("req_")})
        elif path == "/v1/embeddings":
            self._send(200, self._embeddings(body), {"x-request-id": fake._next_id("req_")})
        else:
            self._error(404, "not_found_error", f"no route for POST {path}", anthropic)

    # ------------------------------------------------------------------ models: retired, reasoning, the list

    def _models(self, path: str) -> None:
        """``GET /v1/models`` (a list) and ``GET /v1/models/{id}`` (404 / 410 for a retired model)."""
        fake = self.fake
        if not fake.models_route:
            self._send(404, {"detail": "Not Found"})
            return
        if path.rstrip("/") == "/v1/models":
            data = [{"id": m, "object": "model", "created": 1700000000, "owned_by": "system", **extra}
                    for m, extra in fake.model_entries.items() if m not in fake.gone_models]
            self._send(200, {"object": "list", "data": data})
            return
        model = path[len("/v1/models/"):]
        status = fake.gone_models.get(model)
        if status is not None:
            self._gone(model, status)
            return
        self._send(200, {"id": model, "object": "model", "created": 1700000000, "owned_by": "system",
                         **fake.model_entries.get(model, {})})

    def _gone(self, model: str, status: int) -> None:
        if status == 410:
            self._error(410, "invalid_request_error", f"The model `{model}` has been retired and is no longer "
                        "available (the deployment was retired).", False, code="model_retired")
        else:
            self._error(404, "invalid_request_error", f"The model `{model}` does not exist or you do not have "
                        "access to it.", False, code="model_not_found")

    def _model_refuses(self, path: str, body: Mapping[str, Any]) -> bool:
        """Answer the refusals of the model itself: retired (404 / 410), or a reasoning model given ``max_tokens``
        or a ``temperature`` other than 1 (HTTP 400, OpenAI's wording). True when a refusal was sent."""
        fake = self.fake
        model = str(body.get("model", ""))
        deployment = path.split("/")[3] if path.startswith("/openai/deployments/") else None
        for name in (model, MODEL_ALIASES.get(model, model), deployment):
            if name and name in fake.gone_models:
                self._gone(name, fake.gone_models[name])
                return True
        if REASONING_MODEL.match(model):
            if "max_tokens" in body:
                self._error(400, "invalid_request_error", "Unsupported parameter: 'max_tokens' is not supported "
                            "with this model. Use 'max_completion_tokens' instead.", False,
                            code="unsupported_parameter")
                return True
            if "temperature" in body and body["temperature"] != 1:
                self._error(400, "invalid_request_error", f"Unsupported value: 'temperature' does not support "
                            f"{body['temperature']} with this model. Only the default (1) value is supported.", False,
                            code="unsupported_value")
                return True
        return False

    # ------------------------------------------------------------------ faults

    def _error(
        self, status: int, kind: str, message: str, anthropic: bool, *, code: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if anthropic:
            payload: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
        else:
            payload = {"error": {"message": message, "type": kind, "param": None, "code": code}}
        self._send(status, payload, headers)

    def _refuse(self, verdict: str, wait: float, anthropic: bool, limited: tuple[str, str, int]) -> None:
        """A 429 from the provider rate limits (answered at once, as the real APIs do)."""
        _, model, cost = limited
        if verdict == "too_large":
            text = (f"Request too large for {model} on tokens per min (TPM): Limit {int(self.fake.tpm or 0)}, "
                    f"Requested {cost}. The input or output tokens must be reduced in order to run successfully.")
            if anthropic:
                self._error(429, "rate_limit_error", f"This request would exceed your rate limit of "
                            f"{int(self.fake.tpm or 0)} input tokens per minute.", True, headers={"retry-after": "60"})
            else:
                self._error(429, "tokens", text, False, code="rate_limit_exceeded")
            return
        if anthropic or self.fake.retry_after_seconds:
            headers = {"retry-after": str(max(1, math.ceil(wait)))}
        else:
            headers = {"Retry-After": f"{wait:.3f}", "retry-after-ms": str(max(1, int(math.ceil(wait * 1000))))}
        if anthropic:
            self._error(429, "rate_limit_error", "Number of requests has exceeded your rate limit.", True,
                        headers=headers)
        else:
            self._error(429, "requests", "Rate limit reached for requests.", False, code="rate_limit_exceeded",
                        headers=headers)

    def _apply_fault(self, kind: str, opts: Mapping[str, Any], anthropic: bool, path: str) -> bool:
        """Send the fault's response; False when the fault only shapes a normal 200 reply (empty, refusal)."""
        if kind == "429":
            retry_after = float(opts.get("retry_after", 0.1))
            headers = {"Retry-After": f"{retry_after:g}", "retry-after-ms": str(int(round(retry_after * 1000)))}
            if anthropic:
                self._error(429, "rate_limit_error", "Number of requests has exceeded your rate limit.", True,
                            headers=headers)
            else:
                self._error(429, "requests", "Rate limit reached for requests.", False,
                            code="rate_limit_exceeded", headers=headers)
        elif kind == "insufficient_quota":
            self._error(429, "insufficient_quota",
                        "You exceeded your current quota, please check your plan and billing details.", False,
                        code="insufficient_quota")
        elif kind == "credit_balance":
            self._error(400, "invalid_request_error",
                        "Your credit balance is too low to access the Anthropic API. "
                        "Please go to Plans & Billing to upgrade or purchase credits.", True)
        elif kind in ("500", "503"):
            self._error(int(kind), "api_error" if anthropic else "server_error", "The server had an error.", anthropic)
        elif kind == "529":
            self._error(529, "overloaded_error", "Overloaded", True)
        elif kind == "400":
            self._error(400, "invalid_request_error", str(opts.get("message", "Invalid request: bad parameter.")),
                        anthropic)
        elif kind == "401":
            if anthropic:
                self._error(401, "authentication_error", "invalid x-api-key", True)
            else:
                self._error(401, "invalid_request_error", "Incorrect API key provided.", False,
                            code="invalid_api_key")
        elif kind == "404":
            self._error(404, "not_found_error", "The model does not exist or you do not have access to it.",
                        anthropic, code="model_not_found")
        elif kind == "404_plain":  # a gateway or proxy without the route: a 404 that says nothing of the model
            self._send(404, {"detail": "Not Found"})
        elif kind == "410":
            self._gone(str((self._entry.get("body") or {}).get("model") or "the model"), 410)
        elif kind == "reset":
            self.close_connection = True
            try:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
        elif kind == "timeout":
            self.fake.sleep(float(opts.get("seconds", 5.0)))
            return False
        elif kind == "malformed":
            self._send(200, b'{"id": "broken", "choices": [', {"x-request-id": self.fake._next_id("req_")})
        elif kind == "empty_body":
            self._send(200, b"{}", {"x-request-id": self.fake._next_id("req_")})
        elif kind == "truncated":
            data = b'{"id": "cut-short", "object": "chat.completion", "choices": [{"index": 0'
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data) + 500))
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()
            except OSError:
                pass
            self.close_connection = True
        else:  # empty / refusal shape the 200 reply
            return False
        return True

    # ------------------------------------------------------------------ normal replies

    def _openai_chat(self, body: Mapping[str, Any], fault: tuple[str, dict[str, Any]] | None) -> dict[str, Any]:
        fake = self.fake
        requested = str(body.get("model", ""))
        prompt_tokens = estimate_tokens(prompt_text(body))
        kind = fault[0] if fault else None
        choices: list[dict[str, Any]]
        text = ""
        if kind == "empty" and fault and fault[1].get("variant") != "blank":
            choices = []
        elif kind == "empty":
            choices = [{"index": 0, "message": {"role": "assistant", "content": ""}, "finish_reason": "stop"}]
        elif kind == "refusal":
            choices = [{
                "index": 0,
                "message": {"role": "assistant", "content": None, "refusal": "I can't help with that."},
                "finish_reason": "stop",
            }]
        else:
            text = PROBE_REPLY if self._probe else fake.reply_text(body)
            n = int(body.get("n") or 1)
            choices = [
                {"index": i, "message": {"role": "assistant", "content": text, "refusal": None},
                 "logprobs": None, "finish_reason": "stop"}
                for i in range(n)
            ]
        completion_tokens = estimate_tokens(text) if text else 0
        return {
            "id": fake._next_id("chatcmpl-"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": fake.model_swap.get(MODEL_ALIASES.get(requested, requested), MODEL_ALIASES.get(requested,
                                                                                                   requested)),
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
            "system_fingerprint": "fp_fake",
        }

    def _anthropic_message(self, body: Mapping[str, Any], fault: tuple[str, dict[str, Any]] | None) -> dict[str, Any]:
        fake = self.fake
        requested = str(body.get("model", ""))
        kind = fault[0] if fault else None
        text = ""
        stop_reason = "end_turn"
        content: list[dict[str, Any]]
        if kind == "empty" and fault and fault[1].get("variant") != "blank":
            content = []
        elif kind == "empty":
            content = [{"type": "text", "text": ""}]
        elif kind == "refusal":
            content = []
            stop_reason = "refusal"
        else:
            text = PROBE_REPLY if self._probe else fake.reply_text(body)
            content = [{"type": "text", "text": text}]
        return {
            "id": fake._next_id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": MODEL_ALIASES.get(requested, requested),
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {
                "input_tokens": estimate_tokens(prompt_text(body)),
                "output_tokens": estimate_tokens(text) if text else 0,
            },
        }

    def _embeddings(self, body: Mapping[str, Any]) -> dict[str, Any]:
        raw_input = body.get("input", [])
        texts = [raw_input] if isinstance(raw_input, str) else list(raw_input)
        dim = int(body.get("dimensions") or EMBEDDING_DIM)
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for i, text in enumerate(texts):
            vector = embedding_for(text if isinstance(text, str) else json.dumps(text), dim)
            encoded: Any = vector
            if as_base64:
                encoded = base64.b64encode(struct.pack(f"<{dim}f", *vector)).decode("ascii")
            data.append({"object": "embedding", "index": i, "embedding": encoded})
        tokens = sum(estimate_tokens(t if isinstance(t, str) else json.dumps(t)) for t in texts)
        return {
            "object": "list",
            "data": data,
            "model": str(body.get("model", "")),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }


# ---------------------------------------------------------------------- CLI


def load_answers(path: Path) -> dict[str, Any]:
    """``{question: answer}`` from a JSON object, or from a LongMemEval item list (``.json`` or ``.json.xz``)."""
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    if isinstance(data, dict):
        return dict(data)
    return {str(item["question"]): item["answer"] for item in data}


def _parse_latency(text: str) -> float | tuple[float, float]:
    if "," in text:
        lo, hi = text.split(",", 1)
        return (float(lo), float(hi))
    return float(text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve a fake OpenAI + Anthropic API on 127.0.0.1 until killed.")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to bind; 0 picks a free one (default 0)")
    parser.add_argument("--latency", type=_parse_latency, default=0.0,
                        help="seconds per request, fixed (0.05) or uniform range (0.02,0.2)")
    parser.add_argument("--rate-limit", type=float, default=None,
                        help="requests per second before answering 429 (default: no limit)")
    parser.add_argument("--rpm", type=float, default=None, help="requests per minute per model (429 beyond)")
    parser.add_argument("--tpm", type=float, default=None, help="tokens per minute per model (429 beyond)")
    parser.add_argument("--burst-s", type=float, default=60.0,
                        help="seconds of the limit a bucket holds (default 60: the whole minute)")
    parser.add_argument("--no-rate-headers", action="store_true", help="enforce --rpm/--tpm but send no headers")
    parser.add_argument("--retry-after-seconds", action="store_true",
                        help="a rate-limit 429 says only Retry-After in whole seconds (no retry-after-ms)")
    parser.add_argument("--answers", type=Path, default=None,
                        help="JSON {question: answer} or a LongMemEval file (.json/.json.xz) for the answer policy")
    parser.add_argument("--correct-share", type=float, default=1.0,
                        help="share of registered questions answered with the gold answer (default 1.0)")
    parser.add_argument("--fault-rate", action="append", default=[], metavar="KIND=P",
                        help="random fault probability per request, e.g. 429=0.05 (repeatable)")
    parser.add_argument("--seed", type=int, default=0, help="seed for latency and random faults (default 0)")
    args = parser.parse_args(argv)

    server = FakeLLMServer(args.host, args.port, seed=args.seed, log_bodies=False)
    server.latency = args.latency
    server.rate_limit_rps = args.rate_limit
    server.rpm, server.tpm, server.burst_s = args.rpm, args.tpm, args.burst_s
    server.rate_headers = False if args.no_rate_headers else None
    server.retry_after_seconds = args.retry_after_seconds
    server.correct_share = args.correct_share
    if args.answers is not None:
        server.answers = load_answers(args.answers)
    for spec in args.fault_rate:
        kind, _, probability = spec.partition("=")
        if kind not in FAULT_KINDS:
            parser.error(f"--fault-rate: unknown kind {kind!r}")
        server.fault_rate[kind] = float(probability)
    server.start()
    print(server.root_url, flush=True)
    print(f"fake LLM server: anthropic {server.anthropic_base_url}  openai {server.openai_base_url}",
          file=sys.stderr, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
