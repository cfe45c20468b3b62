"""An adaptive concurrency limiter per provider (AIMD), shared by every worker of a run.

It caps the calls in flight; ``rate_pacer.Pacer`` builds on it to pace by the provider's per-minute budgets.

Start at the configured concurrency; on a 429 episode cut the limit multiplicatively (once per cooldown, so a burst
of 429s from one overload counts once), honour Retry-After by pausing new attempts to that provider, and grow back
slowly (+1 per ``limit`` successes) when calls succeed. 5xx/529 pause growth without cutting: an overloaded server
is not a quota. Every change of the limit is recorded for run-meta.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class _ProviderState:
    limit: float
    in_flight: int = 0
    paused_until: float = 0.0
    cut_cooldown_until: float = 0.0
    growth_paused_until: float = 0.0
    outcomes: dict[str, int] = field(default_factory=dict)


class AdaptiveLimiter:
    """Implements ``records.Limiter``. Thread-safe; one instance per run."""

    def __init__(
        self,
        initial: int,
        *,
        minimum: int = 1,
        maximum: int | None = None,
        decrease: float = 0.5,
        cooldown_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if initial < 1:
            raise ValueError("initial concurrency must be >= 1")
        self.initial = initial
        self.minimum = max(1, minimum)
        self.maximum = maximum or initial
        self.decrease = decrease
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._cond = threading.Condition()
        self._states: dict[str, _ProviderState] = {}
        self.changes: list[dict[str, Any]] = []
        self._t0 = clock()

    def _state(self, provider: str) -> _ProviderState:
        st = self._states.get(provider)
        if st is None:
            st = self._states[provider] = _ProviderState(limit=float(self.initial))
        return st

    def limit(self, provider: str) -> int:
        with self._cond:
            return int(self._state(provider).limit)

    def acquire(self, provider: str, **_call: Any) -> None:
        """Block until a slot for ``provider`` is free. ``_call`` (model, tokens...) is what a pacer would use."""
        with self._cond:
            st = self._state(provider)
            while True:
                now = self._clock()
                if now < st.paused_until:
                    self._cond.wait(timeout=st.paused_until - now)
                    continue
                if st.in_flight < int(st.limit):
                    st.in_flight += 1
                    return
                self._cond.wait(timeout=1.0)

    def release(self, provider: str, outcome: str, retry_after: float | None = None, **_reply: Any) -> None:
        with self._cond:
            st = self._state(provider)
            st.in_flight = max(0, st.in_flight - 1)
            self._on_outcome(st, provider, outcome, retry_after, self._clock())
            self._cond.notify_all()

    def _on_outcome(self, st: _ProviderState, provider: str, outcome: str, retry_after: float | None, now: float,
                    *, cut: bool = True) -> None:
        """Count the outcome and adapt the limit. ``cut=False``: a 429 neither pauses nor cuts (a pacer handles it)."""
        st.outcomes[outcome] = st.outcomes.get(outcome, 0) + 1
        if outcome == "rate_limit" and not cut:
            st.growth_paused_until = max(st.growth_paused_until, now + self.cooldown_s)
        elif outcome == "rate_limit":
            if retry_after:
                st.paused_until = max(st.paused_until, now + retry_after)
            if now >= st.cut_cooldown_until:
                self._set(st, provider, max(self.minimum, st.limit * self.decrease), "rate_limit", now)
                st.cut_cooldown_until = now + max(self.cooldown_s, retry_after or 0.0)
                st.growth_paused_until = st.cut_cooldown_until
        elif outcome == "server":
            st.growth_paused_until = now + self.cooldown_s
        elif outcome == "ok" and now >= st.growth_paused_until and st.limit < self.maximum:
            grown = min(float(self.maximum), st.limit + 1.0 / max(st.limit, 1.0))
            if int(grown) > int(st.limit):
                self._set(st, provider, grown, "recovered", now)
            else:
                st.limit = grown

    def _set(self, st: _ProviderState, provider: str, new: float, reason: str, now: float) -> None:
        old = int(st.limit)
        st.limit = new
        if int(new) != old:
            self.changes.append(
                {"t": round(now - self._t0, 3), "provider": provider, "from": old, "to": int(new), "reason": reason}
            )

    def summary(self) -> dict[str, Any]:
        """What run-meta records: the limits now, every change (last 200) and outcome counts per provider."""
        with self._cond:
            return {
                "initial": self.initial,
                "limits": {p: int(s.limit) for p, s in self._states.items()},
                "outcomes": {p: dict(s.outcomes) for p, s in self._states.items()},
                "changes_total": len(self.changes),
                "changes": self.changes[-200:],
            }
