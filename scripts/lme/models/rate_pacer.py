"""Pace model calls to what the provider allows: requests and input tokens per minute, per provider and model.

Providers limit rate, not concurrency: OpenAI and Anthropic give each model a requests-per-minute and a
tokens-per-minute budget and report both on every reply (``rate_headers``). The pacer keeps one pair of budgets per
key (``provider/model`` for ``openai`` and ``anthropic``, which limit each model separately; the provider name for
any other route, e.g. a proxy or an Azure deployment) and, before each attempt is sent:

- reserves one request and the attempt's input tokens (counted locally, scaled by what the provider reported for
  earlier calls; OpenAI-wire routes add ``max_tokens``, which OpenAI counts against its budget up front);
- waits until both budgets hold that much. A budget (``rate_budget``) is a bucket that refills continuously at
  ``HEADROOM`` of the limit and holds at most ``BURST_S`` seconds of it, so calls go out evenly instead of in bursts
  that a provider's shorter enforcement windows would refuse; a call bigger than the bucket goes once the bucket is
  full (and leaves it in debt), and a call bigger than the whole per-minute limit is refused at once
  (``OversizeCall``): it would never be accepted;
- calls waiting on one key go in arrival order, so a large call is not starved by small ones.

Budgets come from the config (``providers.<name>.rpm`` / ``tpm``, for proxies that send no headers) and from the
replies: each reply's limits replace what was learned, and its ``remaining`` lowers the bucket when the provider
has less left than the pacer thinks (another client on the same key, a different count). A 429 gives back its
reservation, pauses the key for its ``Retry-After``, and without headers empties the bucket. Until the first reply
of a key with no configured budget, its calls in flight hold at most ``FIRST_REPLY_TOKENS`` (one large call at a
time): the first reply says the limits.

Where neither the config nor the headers state a limit, the key's ``rate_guess.LimitFinder`` finds it from the
429s (``limits_from`` ``429s``): a slow start on the calls in flight until the first 429, then guessed requests and
tokens per minute, cut once per congestion event to the rate the provider was measured to accept, and grown back
while calls use them. No guess goes below ``rate_guess.MIN_RPM``, and a guessed token budget never refuses a call as too
large.

``concurrency`` caps the calls in flight per provider, and a 429 on a key with no budget yet halves its slow start.
This is the one place that decides when a call may go; ``retries`` is the one place that retries.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from lme.models import rate_headers
from lme.models.rate_budget import Budget, OversizeCall
from lme.models.rate_guess import LimitFinder

PER_MODEL_PROVIDERS = ("openai", "anthropic")
"""Providers whose budgets are per model; any other provider name is one budget."""
WINDOW_S = 60.0
"""The live status's achieved rates are over this many recent seconds."""
FIRST_REPLY_TOKENS = 30_000
"""Until a key's first reply says its limits, the calls in flight on it hold at most this many input tokens (at
least one call): the smallest tokens-per-minute tier OpenAI and Anthropic publish (tier 1: 30k)."""
RATIO_WEIGHT = 0.2
"""Weight of the newest reply in the running ratio of reported to counted input tokens."""


def pacing_key(provider: str, model: str) -> str:
    """The budget a call draws on: ``openai/gpt-4o`` for providers that limit per model, else the provider."""
    return f"{provider}/{model}" if provider in PER_MODEL_PROVIDERS and model else provider


@dataclass
class Ticket:
    """One admitted attempt: what it reserved, to settle or give back when its reply comes."""

    key: str
    provider: str
    counted: int
    cost: float
    """Input tokens reserved (``counted`` scaled by the key's ratio, plus ``extra``)."""
    extra: float
    sent_at: float
    spent_requests: float
    spent_tokens: float


@dataclass
class _Key:
    requests: Budget
    tokens: Budget
    provider: str
    model: str
    finder: LimitFinder
    informed: bool = False
    in_flight: int = 0
    in_flight_tokens: float = 0.0
    queue: deque = field(default_factory=deque)
    paused_until: float = 0.0
    ratio: float | None = None
    output_limit: float | None = None
    headers_seen: bool = False
    sent: int = 0
    rate_limited: int = 0
    tokens_sent: float = 0.0
    waited_s: float = 0.0
    throttled_s: float = 0.0
    blocked_since: float | None = None
    last_done: float | None = None
    window: deque = field(default_factory=deque)
    """``(time, requests, tokens)`` of the last ``WINDOW_S`` seconds."""

    @property
    def name(self) -> str:
        return pacing_key(self.provider, self.model)

    @property
    def paced(self) -> bool:
        return self.requests.limit is not None or self.tokens.limit is not None


class Pacer:
    """Implements ``records.Limiter``: the run's one rate controller. Thread-safe; one instance per run."""

    def __init__(
        self,
        concurrency: int,
        *,
        limits: Mapping[str, Mapping[str, Any]] | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        """``concurrency``: the cap on calls in flight per provider; ``limits``: ``{provider: {"rpm": n, "tpm": n}}``
        from the config (each key of that provider gets them)."""
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        self.concurrency = int(concurrency)
        self._limits = {p: dict(v) for p, v in (limits or {}).items()}
        self._clock, self._wall = clock, wall
        self._cond = threading.Condition()
        self._keys: dict[str, _Key] = {}
        self._in_flight: dict[str, int] = {}
        """Calls in flight per provider (the concurrency cap)."""
        self._outcomes: dict[str, dict[str, int]] = {}

    def _key(self, provider: str, model: str) -> _Key:
        name = pacing_key(provider, model)
        key = self._keys.get(name)
        if key is None:
            conf = self._limits.get(provider) or {}
            now = self._clock()
            key = self._keys[name] = _Key(Budget(_positive(conf.get("rpm")), stamp=now),
                                          Budget(_positive(conf.get("tpm")), stamp=now), provider,
                                          model if provider in PER_MODEL_PROVIDERS else "",
                                          LimitFinder(self.concurrency))
            for budget in (key.requests, key.tokens):
                budget.level = budget.capacity() if budget.limit is not None else 0.0
        return key

    # ------------------------------------------------------------------ admission

    def acquire(self, provider: str, *, model: str = "", tokens: int | Callable[[], int] = 0,
                extra_tokens: int = 0, **_call: Any) -> Ticket:
        """Block until the call may go; return its ticket. ``tokens``: its input tokens (or a function that counts
        them, called once, before the lock is taken). Raises ``OversizeCall``."""
        counted = int(tokens() if callable(tokens) else tokens)  # also before any budget is known: the first
        with self._cond:  # reply's reported count then calibrates the next reservations
            key, marker = self._enqueue(provider, model)
            asked = self._clock()
            try:
                while True:
                    got = self._try_admit(key, marker, counted, extra_tokens, asked)
                    if isinstance(got, Ticket):
                        return got
                    wait, budget_bound = got
                    if budget_bound and key.blocked_since is None:
                        key.blocked_since = self._clock()
                    self._cond.wait(timeout=1.0 if math.isinf(wait) else wait)
            finally:
                self._dequeue(key, marker)

    def try_acquire(self, provider: str, *, model: str = "", tokens: int | Callable[[], int] = 0,
                    extra_tokens: int = 0, **_call: Any) -> Ticket | float:
        """``acquire`` without blocking: the call's ticket if it may go now, else the seconds to wait before asking
        again (``math.inf``: until a call in flight is answered; calls that ``acquire`` holds go first). For callers
        that keep their own clock, such as a simulation. Raises ``OversizeCall``."""
        counted = int(tokens() if callable(tokens) else tokens)
        with self._cond:
            key, marker = self._enqueue(provider, model)
            try:
                got = self._try_admit(key, marker, counted, extra_tokens, self._clock())
                return got if isinstance(got, Ticket) else got[0]
            finally:
                self._dequeue(key, marker)

    def _enqueue(self, provider: str, model: str) -> tuple[_Key, object]:
        """The call's key, and its place in that key's queue (calls on one key go in arrival order)."""
        key = self._key(provider, model)
        marker = object()
        key.queue.append(marker)
        return key, marker

    def _dequeue(self, key: _Key, marker: object) -> None:
        if key.queue and key.queue[0] is marker:
            key.queue.popleft()
            if key.blocked_since is not None:
                key.throttled_s += self._clock() - key.blocked_since
                key.blocked_since = None
        elif marker in key.queue:
            key.queue.remove(marker)
        self._cond.notify_all()

    def _try_admit(self, key: _Key, marker: object, counted: int, extra: int,
                   asked: float) -> Ticket | tuple[float, bool]:
        """The call's ticket if it may go now (counted as sent), else ``(seconds to wait, budget-bound)``."""
        now = self._clock()
        cost = self._cost(key, counted, extra)
        self._refuse_oversize(key, key.name, cost)
        blocked = self._blocked_for(key, marker, now, cost)
        if blocked[0] > 0.0:
            return blocked
        self._admit(key, cost, asked, now)
        return Ticket(key.name, key.provider, counted, cost, float(extra), now,
                      key.requests.spent, key.tokens.spent)

    @staticmethod
    def _refuse_oversize(key: _Key, name: str, cost: float) -> None:
        limit = key.tokens.stated  # a guessed budget may be below one call: it paces it, never refuses it
        if limit is not None and cost > limit:
            raise OversizeCall(name, int(cost), limit, key.tokens.source or "")

    def delay(self, provider: str, *, model: str = "", tokens: int = 0, extra_tokens: int = 0) -> float:
        """Seconds a call of ``tokens`` would wait for the key's budgets and pauses now (0: it could go); reserves
        nothing. Raises ``OversizeCall`` as ``acquire`` would."""
        with self._cond:
            key = self._key(provider, model)
            now = self._clock()
            cost = self._cost(key, int(tokens), extra_tokens)
            self._refuse_oversize(key, pacing_key(provider, model), cost)
            key.requests.refill(now)
            key.tokens.refill(now)
            return max(key.paused_until - now, key.requests.wait_for(1.0), key.tokens.wait_for(cost), 0.0)

    @staticmethod
    def _cost(key: _Key, counted: int, extra: float) -> float:
        return math.ceil(counted * (key.ratio or 1.0)) + extra

    def _blocked_for(self, key: _Key, marker: object, now: float, cost: float) -> tuple[float, bool]:
        """(seconds to wait, whether a budget or a pause is the reason); (0, False) when the call may go now;
        ``math.inf`` when only a reply (or an earlier call's admission) can change it."""
        if now < key.paused_until:
            return key.paused_until - now, True
        if key.queue[0] is not marker or self._in_flight.get(key.provider, 0) >= self.concurrency:
            return math.inf, False  # woken by the release or admission that changes this
        if (not key.paced and not key.informed and key.in_flight >= 1
                and key.in_flight_tokens + cost > FIRST_REPLY_TOKENS):
            return math.inf, False  # the first reply will say the limits
        if not key.paced:
            opens_in = key.finder.slow_start_wait(key.in_flight, now)
            if opens_in > 0.0:
                return opens_in, False  # the slow start: it widens with time
        key.requests.refill(now)
        key.tokens.refill(now)
        wait = max(key.requests.wait_for(1.0), key.tokens.wait_for(cost))
        return (wait, True) if wait > 0.0 else (0.0, False)

    def _admit(self, key: _Key, cost: float, asked: float, now: float) -> None:
        """Count the call asked for at ``asked`` as sent ``now``, holding one request and ``cost`` tokens."""
        key.requests.take(1.0)
        key.tokens.take(cost)
        self._in_flight[key.provider] = self._in_flight.get(key.provider, 0) + 1
        key.in_flight += 1
        key.in_flight_tokens += cost
        key.sent += 1
        key.tokens_sent += cost
        key.waited_s += now - asked
        key.window.append((now, 1, cost))
        key.finder.sent(now, cost)

    # ------------------------------------------------------------------ replies

    def release(self, provider: str, outcome: str, retry_after: float | None = None, *,
                ticket: Ticket | None = None, headers: Mapping[str, Any] | None = None,
                used_tokens: int | None = None, **_reply: Any) -> None:
        """Free the slot and learn from the reply: its headers, its reported input tokens, a 429's Retry-After."""
        with self._cond:
            self._in_flight[provider] = max(0, self._in_flight.get(provider, 0) - 1)
            counts = self._outcomes.setdefault(provider, {})
            counts[outcome] = counts.get(outcome, 0) + 1
            key = self._keys.get(ticket.key) if ticket is not None else None
            if key is not None and ticket is not None:
                self._answered(key, ticket, outcome, retry_after, headers, used_tokens)
            self._cond.notify_all()

    def _answered(self, key: _Key, ticket: Ticket, outcome: str, retry_after: float | None,
                  headers: Mapping[str, Any] | None, used_tokens: int | None) -> None:
        now = self._clock()
        key.in_flight = max(0, key.in_flight - 1)
        key.in_flight_tokens = max(0.0, key.in_flight_tokens - ticket.cost)
        key.informed = True
        key.last_done = now
        facts = rate_headers.parse(headers, self._wall()) if headers else rate_headers.NO_HEADERS
        key.headers_seen = key.headers_seen or facts.states_limits
        later_requests = key.requests.spent - ticket.spent_requests
        later_tokens = key.tokens.spent - ticket.spent_tokens
        refused = outcome in ("rate_limit", "refused")
        if refused:  # the provider did not take this call: give its reservation back
            key.rate_limited += outcome == "rate_limit"
            if outcome == "rate_limit":
                key.finder.refused(ticket.sent_at, ticket.cost)
            key.requests.take(-1.0)
            key.tokens.take(-ticket.cost)
            key.tokens_sent -= ticket.cost
            key.window.append((now, -1, -ticket.cost))
        elif used_tokens is not None:
            self._settle(key, ticket, int(used_tokens), now)
        self._learn(key, facts, ticket, later_requests, later_tokens, now, refused)
        if outcome == "rate_limit":
            wait = max(retry_after or 0.0, facts.retry_after or 0.0)
            if wait:
                key.paused_until = max(key.paused_until, now + wait)
            self._guess_from_429(key, facts, ticket, now, wait)
            if not key.paced:  # a 429 that set no budget: the slow start halves the calls in flight
                key.finder.refused_unpaced(key.in_flight, now)
        elif outcome == "ok" and (key.requests.guessed or key.tokens.guessed):
            self._set_guesses(key, now, *key.finder.grow(now, key.requests.guessed, key.tokens.guessed))

    def _guess_from_429(self, key: _Key, facts: rate_headers.RateHeaders, ticket: Ticket, now: float,
                        wait: float) -> None:
        """A 429 on a key whose limits nobody states: the finder says the new guesses (``rate_guess``)."""
        if (key.requests.stated is not None or key.tokens.stated is not None or facts.requests.limit
                or facts.input_tokens.limit):
            return  # a stated budget (config, headers) may be what ran out: no guess on top of it
        new = key.finder.after_429(now, ticket.sent_at, key.requests.guessed, key.tokens.guessed, wait)
        if new is not None:
            self._set_guesses(key, now, *new, empty=True)

    @staticmethod
    def _set_guesses(key: _Key, now: float, rpm: float | None, tpm: float | None, *, empty: bool = False) -> None:
        """``empty``: the provider just said it has nothing left."""
        for budget, value in ((key.requests, rpm), (key.tokens, tpm)):
            if value == budget.guessed:
                continue
            was = budget.guessed
            budget.refill(now)  # what the old rate refilled until now
            budget.guessed = value
            if value is None:
                continue
            if was is None:  # a new budget: what calls took before it was known is not a debt
                budget.level = 0.0
            budget.level = min(budget.level, 0.0 if empty else budget.capacity())

    def _settle(self, key: _Key, ticket: Ticket, used: int, now: float) -> None:
        """Charge what the provider reported instead of what was reserved, and tune the count ratio."""
        if ticket.counted > 0 and used > 0:
            sample = used / ticket.counted
            key.ratio = sample if key.ratio is None else (1 - RATIO_WEIGHT) * key.ratio + RATIO_WEIGHT * sample
        delta = used + ticket.extra - ticket.cost
        if delta:
            key.tokens.refill(now)
            key.tokens.take(delta)
            key.tokens_sent += delta
            key.window.append((now, 0, delta))

    def _learn(self, key: _Key, facts: rate_headers.RateHeaders, ticket: Ticket, later_requests: float,
               later_tokens: float, now: float, refused: bool) -> None:
        for budget, window, later in ((key.requests, facts.requests, later_requests),
                                      (key.tokens, facts.input_tokens, later_tokens)):
            first = budget.limit is None
            if window.limit:
                budget.learn(window.limit, now)
            if window.remaining is not None:  # the first time, no credit for the refill since the call was sent:
                # it may have reached the provider much later (the client connecting)
                budget.sync(window.remaining, now if first else ticket.sent_at, later, now)
            elif refused and budget.limit is not None:  # a refusal that does not say what is left: assume nothing
                budget.refill(now)
                budget.level = min(budget.level, 0.0)
        if facts.output_tokens.limit:
            key.output_limit = facts.output_tokens.limit

    # ------------------------------------------------------------------ reporting

    def summary(self) -> dict[str, Any]:
        """What run-meta records as ``limiter``: the concurrency cap and each provider's attempts by outcome."""
        with self._cond:
            return {"concurrency": self.concurrency, "outcomes": {p: dict(c) for p, c in self._outcomes.items()}}

    def pacing(self) -> list[dict[str, Any]]:
        """Per key: limits and where they came from, achieved requests and tokens per minute (over the key's active
        span, and over the last ``WINDOW_S``), 429s, and the time lost waiting."""
        with self._cond:
            now = self._clock()
            return [self._describe(name, key, now) for name, key in sorted(self._keys.items())]

    def _describe(self, name: str, key: _Key, now: float) -> dict[str, Any]:
        while key.window and key.window[0][0] < now - WINDOW_S:
            key.window.popleft()
        start = key.finder.first_sent if key.finder.first_sent is not None else now  # the key's first call
        end = now if key.in_flight or key.last_done is None else key.last_done
        span_min = max(end - start, 1e-9) / 60.0
        recent_min = max(min(now - start, WINDOW_S), 1e-9) / 60.0
        accepted = key.sent - key.rate_limited
        throttled = key.throttled_s + (now - key.blocked_since if key.blocked_since is not None else 0.0)
        return {
            "key": name, "provider": key.provider, "model": key.model or None,
            "rpm_limit": _round(key.requests.limit), "tpm_limit": _round(key.tokens.limit),
            "limits_from": key.requests.source or key.tokens.source, "headers_seen": key.headers_seen,
            "output_tpm_limit": _round(key.output_limit),
            "requests": key.sent, "rate_limited": key.rate_limited, "input_tokens": int(key.tokens_sent),
            "achieved_rpm": round(accepted / span_min, 1) if key.sent else 0.0,
            "achieved_tpm": round(key.tokens_sent / span_min) if key.sent else 0,
            "recent_rpm": round(sum(w[1] for w in key.window) / recent_min, 1) if key.sent else 0.0,
            "recent_tpm": round(sum(w[2] for w in key.window) / recent_min) if key.sent else 0,
            "active_s": round(end - start, 3) if key.sent else 0.0,
            "throttled_s": round(throttled, 3), "waited_s": round(key.waited_s, 3),
            "token_ratio": None if key.ratio is None else round(key.ratio, 4),
        }


def _positive(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def _round(value: float | None) -> float | int | None:
    if value is None:
        return None
    return int(value) if float(value).is_integer() else round(value, 1)
