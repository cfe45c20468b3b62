"""A run's model calls through the pacer against a rate-limited provider, on a fake clock: deterministic, no threads,
no sockets, milliseconds of real time for minutes of simulated time.

``simulate()`` plays ``concurrency`` workers, each taking the next item and making its reader call and then its
judge call on one budget key (as a run whose reader and judge share a model does). Each attempt asks
``Pacer.try_acquire``; the provider (``Provider``: token buckets of requests and tokens per minute holding
``burst_s`` seconds of each, as ``fake_llm_server`` enforces them) accepts it, answered after ``latency``, or
refuses it at once with a 429 and a Retry-After; a refused call waits as the retry policy waits (full jitter, never
less than the Retry-After) and asks again. Times are seconds from the first call.
"""

from __future__ import annotations

import heapq
import math
import random
from dataclasses import dataclass, field, replace
from typing import Any

from lme.models.rate_pacer import Pacer, Ticket

KEY = ("openai", "m")
SEND_S = 0.0002
"""What sending one call takes (the SDK and the socket): calls admitted together reach the provider in order."""


@dataclass
class Provider:
    """What the simulated provider enforces and says: ``rpm``/``tpm`` (None: no such limit), with OpenAI's
    ``x-ratelimit-*`` headers on every reply or none, and a 429's Retry-After in milliseconds or whole seconds."""

    rpm: float | None = 600.0
    tpm: float | None = None
    burst_s: float = 1.0
    headers: bool = False
    retry_after: str = "ms"
    levels: dict[str, float] = field(default_factory=dict)
    stamp: float = 0.0

    def _limits(self) -> dict[str, float]:
        return {name: limit for name, limit in (("requests", self.rpm), ("tokens", self.tpm)) if limit}

    def admit(self, now: float, cost: float) -> tuple[bool, float, dict[str, str]]:
        """``(accepted, retry_after, headers)`` for a request of ``cost`` tokens arriving at ``now``."""
        limits = self._limits()
        for name, limit in limits.items():
            capacity = max(limit * self.burst_s / 60.0, 1.0)
            level = self.levels.get(name, capacity) + (now - self.stamp) * limit / 60.0
            self.levels[name] = min(capacity, level)
        self.stamp = now
        need = {"requests": 1.0, "tokens": float(cost)}
        wait = 0.0
        for name, limit in limits.items():
            capacity = max(limit * self.burst_s / 60.0, 1.0)
            missing = min(need[name], capacity) - self.levels[name]
            wait = max(wait, missing / (limit / 60.0) if missing > 1e-9 else 0.0)
        if wait <= 0.0:
            for name in limits:
                self.levels[name] -= need[name]
        headers: dict[str, str] = {}
        if self.headers:
            for name, limit in limits.items():
                headers[f"x-ratelimit-limit-{name}"] = str(int(limit))
                headers[f"x-ratelimit-remaining-{name}"] = str(max(0, int(self.levels[name])))
        if wait > 0.0:
            if self.retry_after == "seconds":
                headers["retry-after"] = str(max(1, math.ceil(wait)))
            else:
                headers["retry-after"] = f"{wait:.3f}"
                headers["retry-after-ms"] = str(max(1, math.ceil(wait * 1000)))
        return wait <= 0.0, wait, headers


@dataclass
class Outcome:
    """What the provider saw and what the calls waited."""

    requests: list[tuple[float, int, float]]
    """``(time, status, tokens)`` of every attempt, in the order the provider saw them."""
    pacer: Pacer
    longest_wait: float
    """The longest single wait the pacer asked of any attempt."""
    finished_at: float
    limit_per_s: float
    measure: str

    def refused(self, before: float = math.inf) -> int:
        return sum(1 for t, status, _ in self.requests if status == 429 and t < before)

    def sent(self, before: float = math.inf) -> int:
        return sum(1 for t, _, _ in self.requests if t < before)

    def share_429(self) -> float:
        return self.refused() / max(1, len(self.requests))

    def accepted_rate(self, start: float, end: float) -> float:
        """Requests (or tokens, for a tokens case) accepted per second in ``[start, end)``."""
        amount = sum(1.0 if self.measure == "requests" else cost
                     for t, status, cost in self.requests if status == 200 and start <= t < end)
        return amount / max(end - start, 1e-9)

    def share_of_limit(self, start: float = 0.0, end: float | None = None) -> float:
        """The accepted rate over ``[start, end)`` (default: the first to the last accepted request) / the limit."""
        ok = [t for t, status, _ in self.requests if status == 200]
        end = ok[-1] if end is None else end
        return self.accepted_rate(start or ok[0], end) / self.limit_per_s if self.limit_per_s else math.nan


def simulate(*, concurrency: int = 32, items: int = 100, provider: Provider | None = None, latency: float = 0.02,
             reader_tokens: tuple[int, int] = (1_000, 12_000), judge_tokens: int = 300, seed: int = 0,
             refusal_latency: float = 0.003, backoff: tuple[float, float] = (1.0, 60.0),
             pacer: Pacer | None = None, until: float = math.inf) -> Outcome:
    """Run ``items`` items (a reader call, then a judge call) through the pacer; see the module docstring."""
    rng = random.Random(seed)
    provider = replace(provider or Provider(), levels={}, stamp=0.0)  # a fresh provider: full buckets
    clock = SimClock()
    pacer = pacer or Pacer(concurrency, clock=clock, wall=lambda: 1_800_000_000.0 + clock.t)
    if pacer._clock is not clock:  # a pacer made by the caller brings its own clock
        clock = pacer._clock
    calls = [(rng.randint(*reader_tokens), judge_tokens) for _ in range(items)]
    events: list[tuple[float, int, str, Any]] = []
    seq = iter(range(10**9))
    waiting: list[dict[str, Any]] = []
    wake_at = [math.inf]
    log: list[tuple[float, int, float]] = []
    longest = [0.0]
    next_item = [0]

    def push(at: float, kind: str, data: Any) -> None:
        heapq.heappush(events, (at, next(seq), kind, data))

    def start_item(worker: dict[str, Any]) -> None:
        if next_item[0] >= len(calls):
            return
        worker["item"], worker["step"], worker["retry"] = next_item[0], 0, 0
        next_item[0] += 1
        waiting.append(worker)

    def admit_waiting(now: float) -> float:
        while waiting:
            worker = waiting[0]
            cost = calls[worker["item"]][worker["step"]]
            got = pacer.try_acquire(*KEY[:1], model=KEY[1], tokens=cost)
            if not isinstance(got, Ticket):
                if math.isinf(got):
                    return now  # a reply frees a slot: the next event asks again
                longest[0] = max(longest[0], got)
                if now + got < wake_at[0]:
                    wake_at[0] = now + got
                    push(now + got, "wake", None)
                return now
            waiting.pop(0)
            accepted, retry_after, headers = provider.admit(now, cost)
            log.append((now, 200 if accepted else 429, float(cost)))
            push(now + (latency if accepted else refusal_latency), "reply",
                 (worker, got, accepted, retry_after, headers))
            now += SEND_S  # sending takes a moment: calls sent together still go one after another
            clock.t = now
        return now

    for w in range(concurrency):
        start_item({"id": w})
    now = last_reply = 0.0
    now = admit_waiting(now)
    while events:
        at, _, kind, data = heapq.heappop(events)
        if at > until:
            break
        now = clock.t = max(now, at)
        if kind == "wake":
            if now >= wake_at[0]:
                wake_at[0] = math.inf
        elif kind == "reply":
            worker, ticket, accepted, retry_after, headers = data
            last_reply = now
            if accepted:
                pacer.release(KEY[0], "ok", ticket=ticket, headers=headers, used_tokens=None)
                worker["step"] += 1
                worker["retry"] = 0
                if worker["step"] == 2:
                    start_item(worker)
                else:
                    waiting.append(worker)
            else:
                stated = float(headers.get("retry-after-ms", 0)) / 1000 or float(headers["retry-after"])
                pacer.release(KEY[0], "rate_limit", stated, ticket=ticket, headers=headers)
                base, cap = backoff
                wait = max(rng.uniform(0.0, min(cap, base * 2 ** worker["retry"])), stated)
                worker["retry"] += 1
                push(now + wait, "retry", worker)
        elif kind == "retry":
            waiting.append(data)
        now = admit_waiting(now)
    measure = "requests" if provider.rpm else "tokens"
    limit = (provider.rpm if provider.rpm else provider.tpm or 0.0) / 60.0
    return Outcome(log, pacer, longest[0], last_reply, limit, measure)


class SimClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t
