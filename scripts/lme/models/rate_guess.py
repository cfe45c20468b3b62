"""Find a rate limit that nobody states (no headers, no config) from the 429s, without hammering it.

A proxy or an OpenAI-compatible server that enforces a limit but sends no ``x-ratelimit-*`` headers says only
"429, retry after T". ``LimitFinder`` keeps what one budget key needs to learn its requests- and tokens-per-minute
limits from that (``rate_pacer.Pacer`` owns the budgets and applies what it says):

- **Slow start.** Until a limit is known, at most ``START_WINDOW`` calls are in flight on the key, twice as many
  every ``START_DOUBLING_S`` while that is what holds calls back (so 32 are reached in under half a second, whatever
  the model's latency): an unknown limit is met by a trickle of calls whose first 429 comes back at once, not by the
  whole concurrency in one burst. (Growing per accepted reply instead would release bursts on a fast server.)
- **One cut per congestion event.** A 429 for a call sent before the last cut answers the rate that cut already
  corrected: it changes nothing. Only a call sent at the current guess and refused says the guess is too high.
- **A cut to the measured rate.** The provider's budget was empty when an earlier refused call reached it, and empty
  again when this one did; everything it accepted between the two is what it refills in that time. So the calls sent
  between two refused ones and not refused (by send time: a 429 comes back at once, a reply takes the model's time)
  measure the limit itself, over at least ``MEASURE_MIN_S`` (earlier refusals are used when the last is too recent:
  on a loaded machine calls reach the provider out of order). The first guess, which can only count from the first
  call (and so also counts the provider's initial burst), is ``GUESS_SHARE`` of that rate over at least a second.
- **Growth that finds the limit again.** After a cut the guess holds for ``HOLD_S`` (doubling while measurements
  agree: a limit found again needs probing less often), then grows, faster and faster while no 429 comes: gently
  after a cut that measured the limit, quickly after a rough one (the first guess, a cut with nothing to measure), so
  a guess far too low is back within seconds, not a minute.
- **Only a budget in use moves.** Without headers a 429 does not say whether requests or tokens ran out, so both are
  guessed; a guess grows only while the calls sent use most of it (a guess nobody reaches says nothing about the
  provider), and a 429 cuts the guesses in use (both when neither is). Which one runs out shows in which calls are
  refused: a token budget refuses large calls and lets small ones through, a request budget refuses any. Until the
  sizes of the refused calls say which (``limited_by``) the token guess paces, then the one that runs out alone.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

START_WINDOW = 4
"""Calls in flight on a key with no known limit, at first..."""
START_DOUBLING_S = 0.15
"""...and the time in which that doubles (continuously) while it holds calls back and no 429 comes."""
LOG_S = 30.0
"""What was sent is kept this long."""
GUESS_SHARE = 0.9
"""The first guess is this share of the rate accepted since the first call..."""
GUESS_MIN_SPAN_S = 1.0
"""...over at least this long (a shorter span is mostly the provider's initial burst)."""
GUESS_MIN_SENT = 5
"""A rate is measured from at least this many accepted calls: a 429 among a key's first few calls sets no guess
(the slow start halves, and the Retry-After pause holds the key), since two calls measure nothing."""
MEASURE_MIN_S = 3.0
MEASURE_S = 5.0
MEASURE_CALLS = 20
"""A later rate is measured from an earlier refusal at least ``MEASURE_MIN_S`` back, else from ``MEASURE_S`` back
(or the time ``MEASURE_CALLS`` take at the guess, if longer): the refusal says the key was sending at least the
limit, and a longer span may hold a lull in which the provider's budget was full and its refill lost."""
PRECISE_CALLS = 10
"""A measurement over ``MEASURE_MIN_S`` of at least this many calls is precise (gentle growth after it)."""
GUESS_CUT = 0.85
"""A 429 with too few calls since the last cut to measure cuts the guess by this factor..."""
GUESS_FLOOR = 0.35
"""...and a measured cut goes no lower than this share of the guess (the measurement may count a lull)."""
HOLD_S = 2.0
HOLD_MAX_S = 30.0
AGREE = 0.1
"""No growth for ``HOLD_S`` after a cut (or the 429's Retry-After, if longer), twice that for each measurement in a
row that agrees with the last one within ``AGREE``, at most ``HOLD_MAX_S``."""
GENTLE = (0.02, 2.0)
QUICK = (0.05, 1.0)
GROWTH_MAX = 0.5
"""Growth per second of a guess in use: ``(start, doubling seconds)``, the rate doubling with each of those seconds
of growth, at most ``GROWTH_MAX``; ``GENTLE`` after a precise measurement, else ``QUICK``."""
IN_USE_SHARE = 0.8
IN_USE_S = 2.0
"""A guess is in use while the calls sent over the last ``IN_USE_S`` seconds (at least five calls' worth of it)
reach this share of it."""
SMALL_REFUSED = 0.3
LARGE_REFUSED = 1.5
EVIDENCE_CALLS = 20
"""A refused call below ``SMALL_REFUSED`` of the mean size of the last ``EVIDENCE_CALLS`` calls sent before it is
small, above ``LARGE_REFUSED`` large..."""
EVIDENCE = {"small": 2.0, "large": -0.55, "other": -0.2}
EVIDENCE_NEEDED = 1.5
"""...and each refused call adds the log-likelihood ratio of "requests ran out" to "tokens did" for its size (a token
budget mostly refuses large calls: small ones are refused about 1 time in 20 there, 2 in 5 where requests run out);
a sum beyond ``EVIDENCE_NEEDED`` either way decides (``limited_by``)."""
REQUESTS_SLACK = 1.5
"""Until the refused calls' sizes say which budget runs out, the request guess stays this far above the rate
measured and above what the token guess lets through at the sizes of the calls sent lately, so the token guess
paces (``limited_by``)."""
MIN_RPM = 6.0
"""No guess paces slower than this (one call per ~10 s; a token guess, one of the largest recent calls): a slower
provider says so with 429s and their Retry-After, while a guess cut lower would stall every worker on arithmetic
alone (1 rpm was 62 s a call)."""

Guesses = tuple[float | None, float | None]
"""``(requests per minute, tokens per minute)``; None: that budget is not paced."""


@dataclass
class LimitFinder:
    """One key's learning state. Times are the pacer's clock; rates are per minute, like every limit."""

    concurrency: int
    window: float = 0.0
    """The slow start's cap on calls in flight while no limit is known..."""
    window_since: float | None = None
    """...grown by the time since it began to hold calls back."""
    first_sent: float | None = None
    cut_at: float | None = None
    """When the last cut was made: a 429 for a call sent before it is part of that congestion event."""
    empties: deque = field(default_factory=deque)
    """When the calls refused at the last few cuts were sent: the provider's budget was empty then."""
    hold_until: float = 0.0
    grown_at: float = 0.0
    growth_s: float = 0.0
    """Seconds of growth since the last cut (the growth rate doubles with them)."""
    precise: bool = False
    """The last cut measured the limit over enough calls (growth after it is gentle)."""
    measured_rate: float | None = None
    agreed: int = 0
    """The last measured rate, and how many measurements in a row agreed with the one before."""
    evidence: float = 0.0
    """For "requests ran out" (positive) or "tokens did" (negative), from the sizes of refused calls."""
    sends: deque = field(default_factory=deque)
    """``(sent_at, tokens)`` of calls sent in the last ``LOG_S``."""
    refusals: deque = field(default_factory=deque)
    """``(sent_at, tokens)`` of those a 429 refused."""

    def __post_init__(self) -> None:
        self.concurrency = max(1, int(self.concurrency))
        self.window = self.window or float(min(self.concurrency, START_WINDOW))

    # ------------------------------------------------------------------ slow start

    def slow_start_wait(self, in_flight: int, now: float) -> float:
        """Seconds until the slow start lets one more call be in flight (0: now)."""
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
        horizon = now - LOG_S
        for log in (self.sends, self.refusals):
            while log and log[0][0] < horizon:
                log.popleft()

    def refused(self, sent_at: float, tokens: float) -> None:
        self.refusals.append((sent_at, tokens))
        sizes = [cost for at, cost in self.sends if at <= sent_at][-EVIDENCE_CALLS:]
        if len(sizes) < GUESS_MIN_SENT or max(sizes) < 2.0 * min(sizes):
            return  # calls of about one size: either budget paces them alike
        mean = sum(sizes) / len(sizes)
        size = "small" if tokens < SMALL_REFUSED * mean else "large" if tokens > LARGE_REFUSED * mean else "other"
        self.evidence += EVIDENCE[size]

    @property
    def limited_by(self) -> str | None:
        """``requests``, ``tokens``, or None (not known yet). Until it is known the token guess paces (the request
        guess keeps ``REQUESTS_SLACK`` above the rate measured): where requests run out, the small calls that then go
        too fast are refused and say so at once (strong evidence); where tokens do, a request guess at the rate
        measured would hold back calls whenever they are small, wasting the budget."""
        if self.evidence >= EVIDENCE_NEEDED:
            return "requests"
        if self.evidence <= -EVIDENCE_NEEDED:
            return "tokens"
        return None

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
        span = min(LOG_S, max(IN_USE_S, 5 * 60.0 / rpm if rpm else 0.0))
        start = now - span if self.first_sent is None else max(now - span, self.first_sent)
        count, tokens = self._accepted(start, now, refusals=False)
        per_min = 60.0 / max(now - start, 1e-9)
        return (rpm is not None and count * per_min >= IN_USE_SHARE * rpm,
                tpm is not None and tokens * per_min >= IN_USE_SHARE * tpm)

    # ------------------------------------------------------------------ 429s and growth

    def after_429(self, now: float, sent_at: float, rpm: float | None, tpm: float | None,
                  retry_after: float) -> Guesses | None:
        """The new guesses after a 429 for a call sent at ``sent_at`` (``rpm``/``tpm``: the current guesses, both
        None before the first), or None: no change (the same congestion event, or nothing to measure yet)."""
        if self.cut_at is not None and sent_at <= self.cut_at:
            return None
        first = rpm is None and tpm is None
        new = self._first_guess(sent_at) if first else self._cut(sent_at, rpm, tpm)
        if new is None:
            return None
        new_rpm, new_tpm = new
        if self.limited_by == "requests" and new_rpm is not None:
            new_tpm = None
        elif self.limited_by == "tokens" and new_tpm is not None:
            new_rpm = None
        elif self.limited_by is None and new_tpm is not None and new_rpm is not None:
            new_rpm = self._slack(min(new_rpm * REQUESTS_SLACK, rpm or math.inf), new_tpm)  # see ``limited_by``
        self.cut_at = now
        self.empties.append(sent_at)
        while len(self.empties) > 8:
            self.empties.popleft()
        hold = 0.0 if first else min(HOLD_MAX_S, HOLD_S * 2.0 ** self.agreed)  # the first guess is rough: probe
        self.hold_until = now + max(hold, retry_after)
        self.grown_at = self.hold_until
        self.growth_s = 0.0
        return (None if new_rpm is None else max(MIN_RPM, new_rpm)), self._token_floor(new_tpm)

    def _first_guess(self, sent_at: float) -> Guesses | None:
        start = max(sent_at if self.first_sent is None else self.first_sent, sent_at - LOG_S)
        count, tokens = self._accepted(start, sent_at)
        if count < GUESS_MIN_SENT:
            return None
        per_min = GUESS_SHARE * 60.0 / max(sent_at - start, GUESS_MIN_SPAN_S)
        self.precise = False
        return count * per_min, (tokens * per_min if tokens > 0 else None)

    def _cut(self, sent_at: float, rpm: float | None, tpm: float | None) -> Guesses:
        earliest = sent_at - min(LOG_S, max(MEASURE_S, MEASURE_CALLS * 60.0 / rpm if rpm else 0.0))
        earliest = max(earliest, self.empties[0] if self.empties else sent_at)  # not into the initial burst
        count, tokens, span = 0, 0.0, 0.0
        for start in [*(e for e in reversed(self.empties) if e > earliest), earliest]:
            count, tokens = self._accepted(start, sent_at)
            span = sent_at - start
            if span >= MEASURE_MIN_S and count >= GUESS_MIN_SENT:
                break  # the latest earlier refusal far enough back to measure from
        measured = count >= GUESS_MIN_SENT and span > 0
        per_min = 60.0 / span if span > 0 else 0.0
        by = self.limited_by
        use = (True, False) if by == "requests" else (False, True) if by == "tokens" else self.in_use(sent_at, rpm, tpm)

        def cut(guess: float | None, rate: float, in_use: bool) -> float | None:
            if guess is None:  # not paced until now (the other budget was thought the one): measure it
                return rate if measured and rate > 0 else None
            if not (in_use or not any(use)):
                return guess
            if not measured:
                return guess * GUESS_CUT
            return min(guess, max(rate, guess * GUESS_FLOOR))

        self.precise = measured and span >= MEASURE_MIN_S and count >= PRECISE_CALLS
        rate = (tokens if by == "tokens" else count) * per_min if measured else None
        last, self.measured_rate = self.measured_rate, rate
        agrees = rate is not None and last is not None and abs(rate - last) <= AGREE * last
        self.agreed = self.agreed + 1 if agrees else 0
        return cut(rpm, count * per_min, use[0]), cut(tpm, tokens * per_min, use[1])

    def grow(self, now: float, rpm: float | None, tpm: float | None) -> Guesses:
        """The guesses after an accepted reply at ``now``: grown where they are in use."""
        if now < self.hold_until:
            return rpm, tpm
        dt = min(now - self.grown_at, 1.0)
        self.grown_at = max(self.grown_at, now)
        use = self.in_use(now, rpm, tpm)
        if dt <= 0 or not any(use):
            return rpm, tpm
        start, doubling = GENTLE if self.precise else QUICK
        factor = 1.0 + min(GROWTH_MAX, start * 2.0 ** (self.growth_s / doubling)) * dt
        self.growth_s += dt
        rpm = rpm * factor if rpm is not None and use[0] else rpm
        tpm = tpm * factor if tpm is not None and use[1] else tpm
        if self.limited_by is None and rpm is not None and tpm is not None:
            rpm = self._slack(rpm, tpm)
        return rpm, tpm

    def _token_floor(self, tpm: float | None) -> float | None:
        """A token guess lets at least ``MIN_RPM`` of the largest recent calls through (a large call leaves the
        budget in debt: too small a guess would hold the next one for minutes)."""
        sizes = [cost for _, cost in self.sends][-EVIDENCE_CALLS:]
        return None if tpm is None else max(tpm, MIN_RPM * max(sizes, default=0.0))

    def _slack(self, rpm: float, tpm: float) -> float:
        """A request guess at least ``REQUESTS_SLACK`` above what the token guess lets through at the sizes of the
        calls sent lately (while nothing says which budget runs out, tokens pace)."""
        sizes = [cost for _, cost in self.sends][-EVIDENCE_CALLS:]
        mean = sum(sizes) / len(sizes) if sizes else 0.0
        return max(rpm, REQUESTS_SLACK * tpm / mean) if mean > 0 else rpm
