"""Counting a call's input tokens: exact (Anthropic's count API, OpenAI's tokenizer tiktoken) where possible, else a
heuristic a little above OpenAI's counts; and what a call reserves on a tokens-per-minute budget (``pacing_tokens``).

tiktoken loads its BPE file on first use (a download, no timeout of its own): loaded once per process in a thread
given up after ``TIKTOKEN_LOAD_TIMEOUT_S``; a failed load is remembered, and ``LONGMEMEVAL_TIKTOKEN=0`` never loads
it. Counting never fails a call.
"""

from __future__ import annotations

import math
import os
import sys
import threading
from collections import OrderedDict
from typing import Any, Callable

from lme.models.provider_routes import ProviderSettings, _route
from lme.core.records import ChatRequest


ESTIMATE_CHARS_PER_TOKEN = 4.3
"""Characters per token of the estimate: below every ratio measured on the real ``_s`` prompts with o200k and
cl100k (4.32-4.96), so the estimate stays at or a little above OpenAI's count there (numbers: ``reader.py``)."""


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / ESTIMATE_CHARS_PER_TOKEN)


def estimate_request_tokens(request: ChatRequest) -> int:
    return estimate_tokens((request.system or "") + "".join(str(m.get("content", "")) for m in request.messages))


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
    return estimate_request_tokens(request)


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

