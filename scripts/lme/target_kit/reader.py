"""The reader: render chat history into a prompt and build the answering request (our own wording).

Shared by the full-context, oracle and rag targets and reusable by any memory system::

    text = render_history(item.sessions, fmt="json")
    request = build_reader_request(item, text, provider="openai", model="gpt-4o", mode="con")

Protocol facts followed (upstream ``run_generation.py`` behaviour, not its text): sessions sorted by date, each
shown with its date; then the current date (``question_date``) and the question; temperature 0; 500 output
tokens for a direct answer, 800 with Chain-of-Note. Chain-of-Note here is one call: the prompt asks for notes
per relevant session first, then step-by-step reasoning (upstream makes a separate note call per session).

Token counting and the budget: ``count_request_tokens`` counts exactly where it can (``token_counts.count_tokens_how``:
tiktoken for OpenAI models, Anthropic's count API for Claude) and otherwise estimates (``token_counts.estimate_tokens``,
characters / 4.3). The whole prompt must fit upstream's history budget, context window - max_tokens - 1000; with
exact counts that is the whole margin. Where the estimate is used and the provider still answers that the prompt is
too long, ``answer_with_reader`` drops more of the oldest sessions and retries once (the Hypothesis's
``truncation.retried_after_too_long`` records it).

Calibration of the estimate (2026-11-29, our reader prompt over the 499 items of the ``_s`` copy, counted with an
offline o200k / cl100k implementation): characters per token, JSON history, o200k min 4.386 / p1 4.442 /
median 4.581 / max 4.734; cl100k min 4.322 / median 4.519; ``nl`` history o200k min 4.581 / median 4.799, cl100k
min 4.509. Real o200k prompt sizes: 105,431-114,751 tokens (median 112,620), under gpt-4o's 126,500 budget, so
exact counting truncates none of them. 4.3 characters per token lies below every measured ratio: for OpenAI
tokenizers the estimate errs high by 0.5-15% (JSON history, o200k: 2-10%, median 6.5%), never low on this data;
estimated, the largest ``_s`` prompt is 125,484 tokens, so the estimate path truncates none either. The old
characters / 4 erred high by ~15% and, with a 90% budget share on top, truncated every ``_s`` item for gpt-4o
(99 of 499 lost an evidence session). Claude's tokenizer gives more
tokens per character; its count API is used instead, and the too-long retry covers a failed count.
"""

from __future__ import annotations

import json
from collections import abc
from datetime import datetime
from functools import lru_cache
from typing import Any, Callable, Mapping, Sequence, TypeVar

from lme.core.records import ChatRequest, Completion, Hypothesis, PublicItem
from lme.models.provider_errors import ProviderError
from lme.models.token_counts import count_tokens_how, estimate_request_tokens

DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"
MODES = ("direct", "con")
HISTORY_FORMATS = ("json", "nl")
MAX_TOKENS = {"direct": 500, "con": 800}

CONTEXT_WINDOWS: dict[str, int] = {
    # Longest matching prefix of the model id wins; override per run with the target option ``context_window``.
    "claude": 200_000,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-5": 272_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4": 200_000,
    "gemini": 1_048_576,
    "llama": 128_000,
    "qwen": 128_000,
}
DEFAULT_CONTEXT_WINDOW = 128_000

_INSTRUCTIONS = {
    "direct": (
        "Below are earlier conversations between a user and you, the assistant, oldest first, each marked with "
        "the date it happened. Use them to answer the user's new question. Answer briefly and directly."
    ),
    "con": (
        "Below are earlier conversations between a user and you, the assistant, oldest first, each marked with "
        "the date it happened. Use them to answer the user's new question. Work in two steps: first, for every "
        "conversation that bears on the question, write a short note of the relevant facts together with that "
        "conversation's date; then reason over your notes step by step and finish with the answer."
    ),
}
_ANSWER_CUE = {"direct": "Answer:", "con": "Notes, reasoning and answer:"}

S = TypeVar("S")


@lru_cache(maxsize=4096)  # strptime is ~50 us; a prompt sorts its sessions twice, a run's dates repeat
def parse_date(text: str) -> datetime | None:
    """A dataset date (``2023/05/30 (Tue) 23:40``) as a datetime; None when it does not parse."""
    try:
        return datetime.strptime(text.strip(), DATE_FORMAT)
    except ValueError:
        return None


def _get(obj: Any, name: str) -> Any:
    return obj[name] if isinstance(obj, abc.Mapping) else getattr(obj, name)  # abc's check: typing's is 2x slower


def sort_by_date(sessions: Sequence[S]) -> list[S]:
    """Oldest first by parsed date; equal dates keep their order; unparseable dates go last, in order."""

    def key(pair: tuple[int, S]) -> tuple[int, datetime, int]:
        i, s = pair
        parsed = parse_date(str(_get(s, "date")))
        return (0, parsed, i) if parsed is not None else (1, datetime.min, i)

    return [s for _, s in sorted(enumerate(sessions), key=key)]


def render_history(sessions: Sequence[Any], *, fmt: str = "json") -> str:
    """History text: sessions (PublicSession / Session or dicts with ``date`` and ``turns``) sorted by date.

    ``json``: each session's turns as a JSON list of ``{"role", "content"}``; ``nl``: one ``role: content``
    paragraph per turn. Only role and content are rendered (never ``has_answer`` or session ids).
    """
    if fmt not in HISTORY_FORMATS:
        raise ValueError(f"history format must be one of {HISTORY_FORMATS}, got {fmt!r}")
    blocks = []
    for number, session in enumerate(sort_by_date(sessions), start=1):
        turns = [{"role": str(_get(t, "role")), "content": str(_get(t, "content"))} for t in _get(session, "turns")]
        if fmt == "json":
            body = json.dumps(turns, ensure_ascii=False)
        else:
            body = "\n\n".join(f"{t['role']}: {t['content'].strip()}" for t in turns)
        blocks.append(f"=== Conversation {number} | date: {_get(session, 'date')} ===\n{body}")
    return "\n\n".join(blocks)


def build_reader_request(
    item: PublicItem | Mapping[str, Any],
    history_text: str,
    *,
    provider: str,
    model: str,
    mode: str = "direct",
    max_tokens: int | None = None,
) -> ChatRequest:
    """One user message: instructions, the history, ``Current date: <question_date>``, the question."""
    if mode not in MODES:
        raise ValueError(f"reader mode must be one of {MODES}, got {mode!r}")
    prompt = (
        f"{_INSTRUCTIONS[mode]}\n\n"
        f"Conversation history:\n\n{history_text}\n\n"
        f"Current date: {_get(item, 'question_date')}\n"
        f"Question: {_get(item, 'question')}\n"
        f"{_ANSWER_CUE[mode]}"
    )
    return ChatRequest(
        provider=provider,
        model=model,
        messages=({"role": "user", "content": prompt},),
        max_tokens=max_tokens if max_tokens is not None else MAX_TOKENS[mode],
        temperature=0.0,
    )


def context_window(model: str, override: int | str | None = None) -> tuple[int, str]:
    """The model's context window in tokens and where the figure came from (``option|table|default``)."""
    if override not in (None, ""):
        return int(override), "option"
    name = model.lower().split("/")[-1]
    matches = [prefix for prefix in CONTEXT_WINDOWS if name.startswith(prefix)]
    if matches:
        return CONTEXT_WINDOWS[max(matches, key=len)], "table"
    return DEFAULT_CONTEXT_WINDOW, "default"


def count_request_tokens(request: ChatRequest, *, use_provider: bool = True) -> tuple[int, str]:
    """Input tokens of ``request`` and how they were counted: ``tiktoken``, ``provider`` or ``estimate``.

    ``use_provider=False`` rules out network counts (Anthropic's count API); a local tokenizer is still used.
    """
    counted = count_tokens_how(request, remote=use_provider)
    if counted is not None:
        return int(counted[0]), str(counted[1])
    return estimate_request_tokens(request), "estimate"


def _session_id(session: Any) -> str | None:
    try:
        value = _get(session, "session_id")
    except (KeyError, AttributeError):
        return None
    return None if value is None else str(value)


def truncate_to_fit(
    sessions: Sequence[S],
    budget_tokens: int,
    count_fn: Callable[[Sequence[S]], tuple[int, str]],
) -> tuple[list[S], dict[str, Any]]:
    """Keep the newest sessions whose prompt fits ``budget_tokens``, dropping the OLDEST first.

    ``count_fn(kept_sessions)`` returns the prompt's ``(tokens, how)``, ``how`` one of
    ``tiktoken|provider|estimate``. Counts are monotone in the kept suffix, so a binary search needs about log2(n)
    counts. Returns the kept sessions (date order) and ``{"truncated", "dropped_sessions", "kept_sessions",
    "tokens", "counted_with", "dropped_session_ids"}`` (ids of the dropped sessions, oldest first, where they
    have one).
    """
    ordered = sort_by_date(sessions)
    how: set[str] = set()

    def count(drop: int) -> int:
        tokens, method = count_fn(ordered[drop:])
        how.add(method)
        return int(tokens)

    total = count(0)
    drop, tokens = 0, total
    if total > budget_tokens:
        lo, hi = 1, len(ordered)  # the smallest drop that fits lies in [lo, hi]; dropping all is the floor
        fitted: dict[int, int] = {}
        while lo < hi:
            mid = (lo + hi) // 2
            fitted[mid] = count(mid)
            if fitted[mid] <= budget_tokens:
                hi = mid
            else:
                lo = mid + 1
        drop = lo
        tokens = fitted[drop] if drop in fitted else count(drop)
    return ordered[drop:], _fit_info(ordered, drop, tokens, "estimate" if "estimate" in how else sorted(how)[0])


def _fit_info(ordered: Sequence[Any], drop: int, tokens: int, counted_with: str) -> dict[str, Any]:
    """What ``truncate_to_fit`` says of a fit that drops the ``drop`` oldest of the ``ordered`` sessions."""
    return {
        "truncated": drop > 0,
        "dropped_sessions": drop,
        "kept_sessions": len(ordered) - drop,
        "tokens": tokens,
        "counted_with": counted_with,
        "dropped_session_ids": [sid for sid in map(_session_id, ordered[:drop]) if sid is not None],
    }


# --------------------------------------------------------------------------- the reader as a target step

RESERVED_TOKENS = 1000
"""Upstream's history budget is context window - max_tokens - 1000; our whole prompt must fit the same budget."""
NEAR_BUDGET_SHARE = 0.7
"""Below this share of the budget by estimate a prompt is not counted exactly (the estimate errs high for OpenAI
tokenizers, and by far less than 30% for Claude's)."""
RETRY_BUDGET_SHARE = 0.85
"""After a too-long rejection, the retry's budget is this share of the rejected prompt's counted tokens."""
_TOO_LONG_MARKERS = ("context_length_exceeded", "context length", "context window", "prompt is too long",
                     "too many tokens")


def reader_settings(options: Mapping[str, Any]) -> dict[str, Any]:
    """The reader's target options with defaults: ``mode``, ``history_format``, ``context_window``, ``max_tokens``."""
    mode = str(options.get("mode", "direct"))
    fmt = str(options.get("history_format", "json"))
    if mode not in MODES:
        raise ValueError(f"target option mode must be one of {MODES}, got {mode!r}")
    if fmt not in HISTORY_FORMATS:
        raise ValueError(f"target option history_format must be one of {HISTORY_FORMATS}, got {fmt!r}")
    max_tokens = options.get("max_tokens")
    return {
        "mode": mode,
        "history_format": fmt,
        "context_window": options.get("context_window"),
        "max_tokens": int(max_tokens) if max_tokens not in (None, "") else MAX_TOKENS[mode],
    }


def build_fitted_request(
    item: PublicItem | Mapping[str, Any],
    sessions: Sequence[S],
    *,
    provider: str,
    model: str,
    options: Mapping[str, Any] | None = None,
    use_provider_count: bool = True,
    budget_tokens: int | None = None,
) -> tuple[ChatRequest, dict[str, Any]]:
    """The reader request over ``sessions``, dropping the oldest sessions if the prompt would not fit the budget
    (window - max_tokens - ``RESERVED_TOKENS``, or ``budget_tokens`` when given). Returns the request and the
    truncation info (plus window facts).

    A prompt is counted exactly (tiktoken, or the provider's counter unless ``use_provider_count`` is False) only
    when its estimate comes near the budget; exact counts and estimates are held to the same budget.
    """
    cfg = reader_settings(options or {})
    window, window_source = context_window(model, cfg["context_window"])
    budget = window - cfg["max_tokens"] - RESERVED_TOKENS if budget_tokens is None else int(budget_tokens)

    def request_for(kept: Sequence[S]) -> ChatRequest:
        return build_reader_request(item, render_history(kept, fmt=cfg["history_format"]), provider=provider,
                                    model=model, mode=cfg["mode"], max_tokens=cfg["max_tokens"])

    kept: list[S] = sort_by_date(sessions)
    full_request = request_for(kept)  # the same text as over ``sessions``: rendering sorts them by date
    tokens, method = estimate_request_tokens(full_request), "estimate"
    if budget_tokens is not None or tokens > budget * NEAR_BUDGET_SHARE:
        tokens, method = count_request_tokens(full_request, use_provider=use_provider_count)
    info = _fit_info(kept, 0, tokens, method)
    if tokens > budget:  # only ever after an exact count: an estimate below NEAR_BUDGET_SHARE fits

        def count_fn(subset: Sequence[S]) -> tuple[int, str]:
            if method == "estimate":
                return estimate_request_tokens(request_for(subset)), "estimate"
            return count_request_tokens(request_for(subset), use_provider=method == "provider")

        kept, info = truncate_to_fit(sessions, budget, count_fn)
    info.update(context_window=window, context_window_source=window_source, budget_tokens=budget)
    return (request_for(kept) if info["truncated"] else full_request), info


def rejected_as_too_long(err: BaseException) -> bool:
    """A provider error saying the prompt exceeds the model's context (OpenAI ``context_length_exceeded``, a
    vLLM "maximum context length", Anthropic "prompt is too long"), as ``providers`` classifies it: bad_request."""
    text = str(err).lower()
    return getattr(err, "kind", None) == "bad_request" and any(m in text for m in _TOO_LONG_MARKERS)


def complete_reader(llm: Any, request: ChatRequest) -> Completion:
    """The reader's call. A reply with no text that stays empty after the retries a malformed reply gets is the
    answer ``""`` (upstream judges whatever the system produced, an empty answer included), with the provider's
    finish reason as its ``stop_reason``; any other failure is raised."""
    try:
        return llm.complete(request)
    except ProviderError as err:
        if not err.empty:
            raise
        return Completion(text="", tokensIn=0, tokensOut=0, latencyMs=0.0, provider=request.provider,
                          model=request.model, attempts=err.attempts, stop_reason=err.finish_reason or "none")


def answer_with_reader(
    item: PublicItem,
    sessions: Sequence[Any],
    ctx: Any,
    *,
    debug: Mapping[str, Any] | None = None,
) -> Hypothesis:
    """Read ``sessions`` with ``ctx``'s model (one call) and return the Hypothesis with its ``truncation``
    (``records.ItemTruncation``; the window facts, and the first attempt's when it was retried, in
    ``debug.reader``).

    If the provider rejects the prompt as too long, the oldest sessions are dropped to ``RETRY_BUDGET_SHARE`` of
    the rejected prompt's tokens and the call is made once more.
    """
    fit = dict(provider=ctx.provider, model=ctx.model, options=ctx.options)
    request, info = build_fitted_request(item, sessions, **fit)
    try:
        completion = complete_reader(ctx.llm, request)
    except Exception as err:
        if not rejected_as_too_long(err) or not info["kept_sessions"]:
            raise
        first = info
        request, info = build_fitted_request(item, sessions, **fit,
                                             budget_tokens=int(first["tokens"] * RETRY_BUDGET_SHARE))
        info["retried_after_too_long"] = {"tokens": first["tokens"], "counted_with": first["counted_with"],
                                          "dropped_sessions": first["dropped_sessions"]}
        completion = complete_reader(ctx.llm, request)
    cfg = reader_settings(ctx.options)
    truncation = {k: v for k, v in info.items() if k in TRUNCATION_KEYS}
    window = {k: v for k, v in info.items() if k not in TRUNCATION_KEYS}
    return Hypothesis(
        hypothesis=completion.text,
        tokensIn=completion.tokensIn,
        tokensOut=completion.tokensOut,
        latencyMs=completion.latencyMs,
        calls=({**completion.to_dict(), "role": "reader"},),
        debug={**(debug or {}), "reader": {"mode": cfg["mode"], "history_format": cfg["history_format"], **window}},
        truncation={**truncation, "retried_after_too_long": "retried_after_too_long" in info},
    )


TRUNCATION_KEYS = ("truncated", "dropped_sessions", "kept_sessions", "tokens", "counted_with", "dropped_session_ids")
"""What of ``build_fitted_request``'s info is the Hypothesis's ``truncation``; the rest (the window, a retry's
first attempt) stays in ``debug.reader``."""
