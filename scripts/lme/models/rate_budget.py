"""One per-minute budget of a pacing key (requests, or input tokens) as a token bucket.

The bucket refills continuously at ``HEADROOM`` of the limit and holds ``BURST_S`` seconds of it (``GUESS_BURST_S``
for a limit guessed from 429s), so calls go out evenly; a call bigger than the bucket goes once it is full and leaves
it in debt. The limit is the lower of the config's and the headers' (``stated``), else the guess; none: not paced.
``rate_pacer`` keeps two per key and decides with them when a call may go.
"""

from __future__ import annotations

from dataclasses import dataclass

HEADROOM = 0.97
"""Share of a limit the pacer spends: the margin absorbs network jitter between our clock and the provider's."""
BURST_S = 1.0
"""A bucket holds this many seconds of its limit."""
GUESS_BURST_S = 0.5
"""A guessed budget holds this many seconds of its guess: a guess may be well above the limit (the request guess while
tokens pace, or before a cut), and a full second of it sent at once after a pause would mostly be refused."""


class OversizeCall(Exception):
    """A call that needs more input tokens than the whole per-minute budget: no wait makes it fit."""

    def __init__(self, key: str, tokens: int, limit: float, source: str) -> None:
        self.key, self.tokens, self.limit, self.source = key, tokens, limit, source
        super().__init__(f"{key}: this call needs about {tokens:,} input tokens but the budget is {limit:,.0f} tokens "
                         f"per minute ({source}), so it can never be sent")


@dataclass
class Budget:
    """One per-minute allowance as a bucket (requests, or input tokens). Unknown limit: not paced."""

    configured: float | None = None
    learned: float | None = None
    guessed: float | None = None
    """Estimated from 429s where neither the config nor the headers say the limit (``rate_guess``)."""
    level: float = 0.0
    stamp: float = 0.0
    spent: float = 0.0
    """Every reservation (and settlement) ever made on it: what was sent after a given call, for ``sync``."""

    @property
    def stated(self) -> float | None:
        """The limit the config or the headers state (not a guess)."""
        known = [v for v in (self.configured, self.learned) if v]
        return min(known) if known else None

    @property
    def limit(self) -> float | None:
        stated = self.stated
        return stated if stated is not None else self.guessed

    @property
    def source(self) -> str | None:
        if self.configured and self.learned:
            return "config+headers"
        return "config" if self.configured else "headers" if self.learned else "429s" if self.guessed else None

    def rate(self) -> float:
        """Units per second the pacer spends."""
        return (self.limit or 0.0) * HEADROOM / 60.0

    def capacity(self) -> float:
        burst = BURST_S if self.stated is not None else GUESS_BURST_S
        return max((self.limit or 0.0) * burst / 60.0, 1.0)

    def refill(self, now: float) -> None:
        if self.limit is not None and now > self.stamp:
            self.level = min(self.capacity(), self.level + (now - self.stamp) * self.rate())
        self.stamp = max(self.stamp, now)

    def wait_for(self, cost: float) -> float:
        """Seconds until ``cost`` may go (after ``refill``); 0 now. A cost above the capacity needs a full bucket."""
        if self.limit is None:
            return 0.0
        missing = min(cost, self.capacity()) - self.level
        return 0.0 if missing <= 1e-9 else missing / self.rate()

    def take(self, cost: float) -> None:
        self.level -= cost
        self.spent += cost

    def learn(self, limit: float, now: float) -> None:
        self.refill(now)
        was_unknown = self.limit is None
        self.learned = float(limit)
        if was_unknown:  # full, less what calls took while the limit was unknown (the first reply's own call)
            self.level = self.capacity() + min(0.0, self.level)
        self.level = min(self.level, self.capacity())
        self.stamp = now

    def sync(self, remaining: float, since: float, later: float, now: float) -> None:
        """The provider had ``remaining`` when it answered a call sent at ``since``; ``later`` was reserved after
        that call. Lower the bucket to what that implies now, if that is less than we hold."""
        if self.limit is None:
            return
        self.refill(now)
        implied = remaining + max(0.0, now - since) * self.limit / 60.0 - later
        self.level = min(self.level, implied)
