"""Liveness of the pacer and the retry loop under a 429 storm: no call waits longer than a stated Retry-After or the
slowest pace a guess may set, no call waits for good, and no slot outlives its attempt. Fake clock, one thread,
seeded orderings: no timing."""

from __future__ import annotations

import math
import random

import pytest

from lme.models import retries
from lme.models.provider_routes import ProviderSettings
from lme.models.rate_budget import HEADROOM
from lme.models.rate_guess import MIN_RPM as GUESS_MIN_RPM
from lme.models.rate_pacer import Pacer

RETRY_AFTER = 0.05
SLOWEST_GUESSED_WAIT = 60.0 / (GUESS_MIN_RPM * HEADROOM)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def storm(seed: int, workers: int = 8, refusals: int = 6, calls: int = 48) -> float:
    """Drive a headerless key through ``refusals`` 429s (Retry-After 0.05 s) among ``calls`` calls, sent and answered
    in a seeded random order; return the longest wait the pacer asked of any call."""
    rng, clock = random.Random(seed), Clock()
    p = Pacer(workers, clock=clock, wall=lambda: 1_800_000_000.0 + clock.t)
    flying, answered, longest, full = [], 0, 0.0, False
    while answered < calls:
        if flying and (full or len(flying) >= p.concurrency or rng.random() < 0.5):
            full = False
            ticket = flying.pop(rng.randrange(len(flying)))
            clock.t += rng.uniform(0.0, 0.02)
            if refusals:
                refusals -= 1
                p.release("vllm", "rate_limit", RETRY_AFTER, ticket=ticket, headers={"retry-after-ms": "50"})
            else:
                answered += 1
                p.release("vllm", "ok", ticket=ticket, headers={})
        else:
            got = p.try_acquire("vllm")
            while isinstance(got, float) and not math.isinf(got):
                longest = max(longest, got)
                if got > SLOWEST_GUESSED_WAIT + RETRY_AFTER:
                    return got  # a stall: stop here, the assert says how long
                clock.t += got
                got = p.try_acquire("vllm")
            if isinstance(got, float):  # only a reply frees a slot (concurrency, slow start)
                if not flying:
                    return got  # and none is in flight: it would wait for good
                full = True
            else:
                flying.append(got)
    return longest


def test_a_429_among_the_first_few_calls_does_not_guess_a_crawling_request_budget():
    clock = Clock()
    p = Pacer(8, clock=clock, wall=lambda: 1_800_000_000.0 + clock.t)
    first, second = p.acquire("vllm"), p.acquire("vllm")  # a loaded machine: the others have not started yet
    clock.t += 0.01
    p.release("vllm", "rate_limit", RETRY_AFTER, ticket=first, headers={"retry-after-ms": "50"})
    assert p.delay("vllm") <= RETRY_AFTER  # was 62 s a call: a budget of 1 rpm guessed from two calls
    assert p.pacing()[0]["limits_from"] is None  # two calls measure no rate: the slow start's cut handles it
    clock.t += RETRY_AFTER
    assert 0.0 < p.try_acquire("vllm") < math.inf  # halved to the one call in flight, opening again with time
    p.release("vllm", "ok", ticket=second, headers={})


@pytest.mark.parametrize("workers", [2, 8])
def test_a_429_storm_in_any_order_never_stalls_a_call_beyond_its_retry_after_or_the_slowest_guess(workers):
    stalls = {seed: wait for seed in range(150)
              if (wait := storm(seed, workers=workers)) > SLOWEST_GUESSED_WAIT + RETRY_AFTER}
    assert not stalls, f"{len(stalls)} of 150 orderings stalled, e.g. seed {min(stalls)}: {stalls[min(stalls)]:.1f} s"


class Interrupted(BaseException):
    """Stands for KeyboardInterrupt or SystemExit arriving while the call is in flight."""


def test_an_attempt_interrupted_by_a_base_exception_gives_its_slot_back():
    clock = Clock()
    p = Pacer(1, clock=clock)

    def attempt():
        raise Interrupted()

    with pytest.raises(Interrupted):
        retries.call_with_retries(attempt, provider="vllm", model="m", settings=ProviderSettings(), limiter=p)
    assert p._in_flight["vllm"] == 0 and p._keys["vllm"].in_flight == 0
    assert p.delay("vllm") == 0.0  # and the next call may go (with one slot, acquire would block for good)
