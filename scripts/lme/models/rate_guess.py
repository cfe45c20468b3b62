"""Find a rate limit that nobody states (no headers, no config) from the 429s, without hammering it.

A proxy or an OpenAI-compatible server that enforces a limit but sends no ``x-ratelimit-*`` headers says only
"429, retry after T". ``LimitFinder`` keeps what one budget key needs to learn its requests- and tokens-per-minute
limits from that (``rate_pacer.Pacer`` owns the budgets and applies what it says):

- **Slow start.** Until a limit is known, at most ``START_WINDOW`` calls are in flight on the key, one more after
  each accepted reply (the window doubles per round trip) and twice as many every ``START_DOUBLING_S`` (so a slow
  model reaches the concurrency within a fraction of a second): an unknown limit is met by a trickle of calls whose
  first 429 comes back at once, not by the whole concurrency in one burst.
- **One cut per congestion event.** A 429 for a call sent before the last cut answers the rate that cut already
  corrected: it changes nothing. Only a call sent at the current guess and refused says the guess is too high.
- **A cut to the measured rate.** The provider's budget was empty when the call that made the last cut reached it,
  and empty again when this one did; everything it accepted between the two is what it refills in that time. So the
  calls sent between the two refused ones and not refused (by send time: a 429 comes back at once, a reply takes
  the model's time) measure the limit itself. The first guess, which can only count from the first call (and so
  also counts the provider's initial burst), is ``GUESS_SHARE`` of that rate over at least a second.
- **Growth that finds the limit again quickly.** After a cut the guess holds for ``HOLD_S`` (or the Retry-After,
  if longer), then grows by ``GROWTH_START`` a second, the growth doubling every ``GROWTH_DOUBLING_S`` seconds of
  it up to ``GROWTH_MAX`` a second: a guess that is right overshoots only a little before the next 429 measures
  the limit again; one far too low (a provider without burst) is back within seconds, not a minute.
- **Only a budget in use moves.** Without headers a 429 does not say whether requests or tokens ran out, so both
  are guessed; a guess grows only while the calls sent use most of it (a guess nobody reaches says nothing about the
  provider), and a 429 cuts the guesses in use (both when neither is).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

START_WINDOW = 4
"""Calls in flight on a key with no known limit, before its first accepted replies..."""
START_DOUBLING_S = 0.1
"""...and the time in which that doubles (continuously) while no 429 comes."""
GUESS_WINDOW_S = 30.0
"""What was sent is kept this long."""
MEASURE_S = 5.0
MEASURE_CALLS = 20
"""A rate is measured over at most ``MEASURE_S`` before the refused call (or the time ``MEASURE_CALLS`` take at the
guess, if longer): the provider refused it, so it was sending at least the limit over that span, and a longer span
may hold a lull in which the provider's budget was full and its refill lost."""
GUESS_SHARE = 0.9
"""The first guess is this share of the rate accepted since the first call..."""
GUESS_MIN_SPAN_S = 1.0
"""...over at least this long (a shorter span is mostly the provider's initial burst)."""
GUESS_MIN_SENT = 5
"""A rate is measured from at least this many accepted calls: a 429 among a key's first few calls sets no guess
(the concurrency cut and the Retry-After pause handle it), since two calls measure nothing."""
GUESS_CUT = 0.85
"""A later 429 with too few calls since the last cut to measure cuts the guess by this factor..."""
GUESS_FLOOR = 0.5
"""...and a measured cut goes no lower than this share of the guess (the measurement may count a lull)."""
HOLD_S = 2.0
HOLD_MAX_S = 30.0
AGREE = 0.1
"""No growth for ``HOLD_S`` after a cut (or the 429's Retry-After, if longer), twice that for each measurement in a
row that agrees with the last one within ``AGREE`` (a limit found again needs probing less often), at most
``HOLD_MAX_S``."""
GROWTH_START = 0.05
GROWTH_DOUBLING_S = 1.0
GROWTH_MAX = 0.5
"""Growth per second of a guess that holds calls back: ``GROWTH_START``, doubling every ``GROWTH_DOUBLING_S`` of
growth, at most ``GROWTH_MAX``."""
SMALL_REFUSED = 0.3
LARGE_REFUSED = 1.5
TOKENS_EVIDENCE = 3
"""A refused call below ``SMALL_REFUSED`` of the mean size of the calls sent in the last ``IN_USE_S`` says requests
ran out; ``TOKENS_EVIDENCE`` refused calls above ``LARGE_REFUSED`` of it, and no small one, say tokens did."""
IN_USE_SHARE = 0.8
IN_USE_S = 2.0
"""A guess is in use while the calls sent over the last ``IN_USE_S`` seconds (at least five calls' worth of it)
reach this share of it."""
MIN_RPM = 6.0
"""No guess paces slower than this (one call per ~10 s): a slower provider says so with 429s and their Retry-After,
while a guess cut lower would stall every worker on arithmetic alone (1 rpm was 62 s a call)."""


@dataclass
class LimitFinder:
    """One key's learning state. Times are the pacer's clock; rates are per minute, like every limit."""

    concurrency: int
    window: float = 0.0
    """The slow start's cap on calls in flight, grown by accepted replies (while no limit is known)..."""
    window_since: float | None = None
    """...and by the time since it began to hold calls back."""
    first_sent: float | None = None
    cut_at: float | None = None
    """When the last cut was made: a 429 for a call sent before it is part of that congestion event."""
    empties: deque = field(default_factory=deque)
    """When the calls refused at the last few cuts were sent: the provider's budget was empty then."""
    hold_until: float = 0.0
    grown_at: float = 0.0
    growth_s: float = 0.0
    """Seconds of growth since the last cut (the growth rate doubles with it)."""
    cuts: int = 0
    measured_rate: float | None = None
    agreed: int = 0
    """The last measured rate, and how many measurements in a row agreed with the one before."""
    small_refused: int = 0
    large_refused: int = 0
    """Refused calls much smaller / larger than those sent around them (``limited_by``)."""
    sends: deque = field(default_factory=deque)
    """``(sent_at, tokens)`` of calls sent in the last ``GUESS_WINDOW_S``."""
    refusals: deque = field(default_factory=deque)
    """``(sent_at, tokens)`` of those a 429 refused."""

    def __post_init__(self) -> None:
        self.concurrency = max(1, int(self.concurrency))
        self.window = self.window or float(min(self.concurrency, START_WINDOW))

    # ------------------------------------------------------------------ slow start

    def slow_start_wait(self, in_flight: int, now: float) -> float:
        """Seconds until the slow start lets one more call be in flight (0: now). The window grows with time only
        while it is what holds calls back (not while, say, the first reply is awaited)."""
        if in_flight >= self.concurrency:
            return 0.0  # the concurrency cap holds it already
        window = self._window_at(now)
        if in_flight < int(window):
            self.window, self.window_since = window, None
            return 0.0
        if self.window_since is None:
            self.window_since = now
        opens = self.window_since + math.log2((in_flight + 1) / self.window) * START_DOUBLING_S
        return max(opens - now, 1e-3)

    def accepted_unpaced(self, now: float) -> None:
        """An accepted reply while no limit is known: one more call may be in flight."""
        self.window = min(float(self.concurrency), self._window_at(now) + 1.0)
        if self.window_since is not None:
            self.window_since = now

    def refused_unpaced(self, in_flight: int, now: float) -> None:
        """A 429 that set no guess: half the calls in flight."""
        self.window = max(1.0, min(self._window_at(now), in_flight + 1.0) / 2.0)
        self.window_since = None

    def _window_at(self, now: float) -> float:
        if self.window_since is None:
            return self.window
        return min(float(self.concurrency), self.window * 2.0 ** ((now - self.window_since) / START_DOUBLING_S))

    # ------------------------------------------------------------------ what was sent and refused

    def sent(self, now: float, tokens: float) -> None:
        if self.first_sent is None:
            self.first_sent = now
        self.sends.append((now, tokens))
        self._forget(now)

    def refused(self, sent_at: float, tokens: float) -> None:
        self.refusals.append((sent_at, tokens))
        self._weigh(sent_at, tokens)

    def _forget(self, now: float) -> None:
        horizon = now - GUESS_WINDOW_S - 1.0
        for log in (self.sends, self.refusals):
            while log and log[0][0] < horizon:
                log.popleft()

    def _accepted(self, start: float, end: float, refusals: bool = True) -> tuple[int, float]:
        """Calls sent in ``[start, end]`` and not refused (or all of them): their count and tokens."""
        count, tokens = 0, 0.0
        for log, sign in ((self.sends, 1), (self.refusals, -1)) if refusals else ((self.sends, 1),):
            for at, cost in log:
                if start <= at <= end:
                    count += sign
                    tokens += sign * cost
        return count, tokens

    def in_use(self, now: float, rpm: float | None, tpm: float | None) -> tuple[bool, bool]:
        """Whether the calls sent lately use most of each guess (``IN_USE_SHARE``)."""
        span = min(GUESS_WINDOW_S, max(IN_USE_S, 5 * 60.0 / rpm if rpm else 0.0))
        start = now - span if self.first_sent is None else max(now - span, self.first_sent)
        count, tokens = self._accepted(start, now, refusals=False)
        per_min = 60.0 / max(now - start, 1e-9)
        return (rpm is not None and count * per_min >= IN_USE_SHARE * rpm,
                tpm is not None and tokens * per_min >= IN_USE_SHARE * tpm)

    # ------------------------------------------------------------------ which budget runs out

    def _weigh(self, sent_at: float, tokens: float) -> None:
        sizes = [cost for at, cost in self.sends if sent_at - IN_USE_S <= at <= sent_at]
        if len(sizes) < GUESS_MIN_SENT or max(sizes) < 2.0 * min(sizes):
            return  # calls of about one size: either budget paces them alike
        mean = sum(sizes) / len(sizes)
        if tokens < SMALL_REFUSED * mean:
            self.small_refused += 1
        elif tokens > LARGE_REFUSED * mean:
            self.large_refused += 1

    @property
    def limited_by(self) -> str | None:
        """``requests``, ``tokens``, or None (not known): a token budget refuses the large calls and lets small ones
        through, so a small call refused says requests ran out; only large ones refused, tokens."""
        if self.small_refused and 3 * self.small_refused >= self.large_refused:
            return "requests"
        if self.large_refused >= TOKENS_EVIDENCE and not self.small_refused:
            return "tokens"
        return None

    # ------------------------------------------------------------------ 429s and growth

    def after_429(self, now: float, sent_at: float, rpm: float | None, tpm: float | None,
                  retry_after: float) -> tuple[float | None, float | None] | None:
        """The new ``(rpm, tpm)`` guesses (None: that budget is not paced) after a 429 for a call sent at
        ``sent_at`` (``rpm``/``tpm``: the current guesses, both None before the first), or None: no change (the same
        congestion event, or nothing to measure yet)."""
        if self.cut_at is not None and sent_at < self.cut_at:
            return None
        first = rpm is None and tpm is None
        if first:
            start = max(sent_at if self.first_sent is None else self.first_sent, sent_at - GUESS_WINDOW_S)
            count, tokens = self._accepted(start, sent_at)
            if count < GUESS_MIN_SENT:
                return None
            per_min = GUESS_SHARE * 60.0 / max(sent_at - start, GUESS_MIN_SPAN_S)
            new_rpm, new_tpm = count * per_min, (tokens * per_min if tokens > 0 else None)
        else:
            count, tokens, span = 0, 0.0, 0.0
            earliest = sent_at - min(GUESS_WINDOW_S, max(MEASURE_S, MEASURE_CALLS * 60.0 / rpm if rpm else 0.0))
            earliest = max(earliest, self.first_sent if self.first_sent is not None else sent_at)
            for start in [*reversed(self.empties), earliest]:  # the latest empty budget with enough calls since
                start = max(start, earliest)
                count, tokens = self._accepted(start, sent_at)
                span = sent_at - start
                if count >= GUESS_MIN_SENT or start <= earliest:
                    break
            measured = count >= GUESS_MIN_SENT and span > 0
            per_min = 60.0 / span if span > 0 else 0.0
            use = self.in_use(sent_at, rpm, tpm)
            cut_both = not any(use)

            def cut(guess: float | None, rate: float, binding: bool) -> float | None:
                if guess is None:  # not paced until now (the other budget was thought the one): measure it
                    return rate if measured and rate > 0 else None
                if not (binding or cut_both):
                    return guess
                if not measured:
                    return guess * GUESS_CUT
                return min(guess, max(rate, guess * GUESS_FLOOR))

            new_rpm, new_tpm = cut(rpm, count * per_min, use[0]), cut(tpm, tokens * per_min, use[1])
            self._agree((tokens if self.limited_by == "tokens" else count) * per_min if measured else None)
        by = self.limited_by
        if by == "requests" and new_rpm is not None:
            new_tpm = None
        elif by == "tokens" and new_tpm is not None:
            new_rpm = None
        self.cut_at = now
        self.empties.append(sent_at)
        while len(self.empties) > 8:
            self.empties.popleft()
        self.hold_until = now + max(min(HOLD_MAX_S, HOLD_S * 2.0 ** self.agreed), retry_after)
        self.grown_at = self.hold_until
        self.growth_s = 0.0
        self.cuts += 1
        return (None if new_rpm is None else max(MIN_RPM, new_rpm)), new_tpm

    def _agree(self, rate: float | None) -> None:
        last, self.measured_rate = self.measured_rate, rate
        agrees = rate is not None and last is not None and abs(rate - last) <= AGREE * last
        self.agreed = self.agreed + 1 if agrees else 0

    def grow(self, now: float, rpm: float | None, tpm: float | None) -> tuple[float | None, float | None]:
        """The guesses after an accepted reply at ``now``: grown where they are in use."""
        if now < self.hold_until:
            return rpm, tpm
        dt = min(now - self.grown_at, 1.0)
        self.grown_at = max(self.grown_at, now)
        use = self.in_use(now, rpm, tpm)
        if dt <= 0 or not any(use):
            return rpm, tpm
        factor = 1.0 + min(GROWTH_MAX, GROWTH_START * 2.0 ** (self.growth_s / GROWTH_DOUBLING_S)) * dt
        self.growth_s += dt
        return (rpm * factor if rpm is not None and use[0] else rpm,
                tpm * factor if tpm is not None and use[1] else tpm)
