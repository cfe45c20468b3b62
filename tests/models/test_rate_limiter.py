"""The adaptive limiter: multiplicative cut per 429 episode, Retry-After pause, slow growth, 5xx pauses growth."""

from __future__ import annotations

import threading
import time

from lme.models.rate_limiter import AdaptiveLimiter


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_a_429_episode_halves_the_limit_once_within_the_cooldown():
    clock = Clock()
    lim = AdaptiveLimiter(16, cooldown_s=5.0, clock=clock)
    for _ in range(6):  # six 429s from one overload burst
        lim.acquire("openai")
        lim.release("openai", "rate_limit")
    assert lim.limit("openai") == 8
    clock.t += 6.0  # a new episode after the cooldown
    lim.acquire("openai")
    lim.release("openai", "rate_limit")
    assert lim.limit("openai") == 4
    assert [c["to"] for c in lim.summary()["changes"]] == [8, 4]


def test_limit_never_drops_below_one():
    clock = Clock()
    lim = AdaptiveLimiter(2, cooldown_s=0.0, clock=clock)
    for _ in range(5):
        clock.t += 1
        lim.acquire("p")
        lim.release("p", "rate_limit")
    assert lim.limit("p") == 1


def test_successes_grow_the_limit_slowly_back_to_the_configured_maximum():
    clock = Clock()
    lim = AdaptiveLimiter(8, cooldown_s=1.0, clock=clock)
    lim.acquire("p")
    lim.release("p", "rate_limit")
    assert lim.limit("p") == 4
    clock.t += 2.0
    for _ in range(3):  # +1/limit per success: 3 successes at limit 4 do not yet add a slot
        lim.acquire("p")
        lim.release("p", "ok")
    assert lim.limit("p") == 4
    for _ in range(200):
        lim.acquire("p")
        lim.release("p", "ok")
    assert lim.limit("p") == 8  # capped at the configured concurrency


def test_server_errors_pause_growth_without_cutting():
    clock = Clock()
    lim = AdaptiveLimiter(8, cooldown_s=10.0, clock=clock)
    lim.acquire("p")
    lim.release("p", "rate_limit")  # 4
    clock.t += 11
    lim.acquire("p")
    lim.release("p", "server")
    for _ in range(50):
        lim.acquire("p")
        lim.release("p", "ok")
    assert lim.limit("p") == 4  # growth paused, no cut
    clock.t += 11
    for _ in range(50):
        lim.acquire("p")
        lim.release("p", "ok")
    assert lim.limit("p") > 4


def test_retry_after_pauses_new_attempts_to_that_provider_only():
    lim = AdaptiveLimiter(4, cooldown_s=0.0)
    lim.acquire("openai")
    lim.release("openai", "rate_limit", retry_after=0.3)
    t0 = time.monotonic()
    lim.acquire("anthropic")  # another provider is not paused
    assert time.monotonic() - t0 < 0.1
    lim.release("anthropic", "ok")
    lim.acquire("openai")
    assert time.monotonic() - t0 >= 0.29
    lim.release("openai", "ok")


def test_in_flight_never_exceeds_the_limit_under_threads():
    lim = AdaptiveLimiter(3)
    peak = 0
    current = 0
    guard = threading.Lock()

    def work():
        nonlocal peak, current
        for _ in range(20):
            lim.acquire("p")
            with guard:
                current += 1
                peak = max(peak, current)
            time.sleep(0.001)
            with guard:
                current -= 1
            lim.release("p", "ok")

    threads = [threading.Thread(target=work) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak == 3
