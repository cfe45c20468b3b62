"""The pacer's arithmetic on a fake clock: reservations, refill, budgets learned from both providers' headers,
Retry-After, the count ratio, oversize calls, per-model keys, the cap on calls in flight. No timing asserts: the clock
only moves when told (the threaded ``acquire`` is checked in real time for a Retry-After and the concurrency cap)."""

from __future__ import annotations

import math
import threading
import time
from datetime import datetime, timedelta, timezone

import pytest

from lme.models import rate_headers
from lme.run.pacing_status import status_text
from lme.models.rate_guess import REQUESTS_SLACK
from lme.models.rate_budget import HEADROOM, OversizeCall
from lme.models.rate_pacer import FIRST_REPLY_TOKENS, Pacer, Ticket, pacing_key


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


WALL = 1_800_000_000.0


def pacer(limits=None, concurrency: int = 8) -> tuple[Pacer, Clock]:
    clock = Clock()
    return Pacer(concurrency, limits=limits, clock=clock, wall=lambda: WALL + clock.t), clock


def entry(p: Pacer, key: str) -> dict:
    return next(e for e in p.pacing() if e["key"] == key)


def openai_headers(rpm=600, rpm_left=590, tpm=60_000, tpm_left=50_000) -> dict:
    return {"x-ratelimit-limit-requests": str(rpm), "x-ratelimit-remaining-requests": str(rpm_left),
            "x-ratelimit-reset-requests": "1s", "x-ratelimit-limit-tokens": str(tpm),
            "x-ratelimit-remaining-tokens": str(tpm_left), "x-ratelimit-reset-tokens": "6m0s"}


# ---------------------------------------------------------------------- pacing by the config's budgets


def test_config_rpm_spaces_requests_at_the_limit():
    p, clock = pacer({"proxy": {"rpm": 120}})
    for _ in range(2):  # a bucket of one second: two requests at 120/min
        assert p.delay("proxy", model="m") == 0.0
        p.release("proxy", "ok", ticket=p.acquire("proxy", model="m"))
    assert p.delay("proxy", model="m") == pytest.approx(1 / (2 * HEADROOM))
    clock.t += 1 / (2 * HEADROOM)
    assert p.delay("proxy", model="m") == pytest.approx(0.0, abs=1e-9)
    info = entry(p, "proxy")
    assert info["rpm_limit"] == 120 and info["limits_from"] == "config" and info["requests"] == 2


def test_each_call_reserves_its_input_tokens_before_it_is_sent():
    p, clock = pacer({"proxy": {"tpm": 60_000}})
    ticket = p.acquire("proxy", tokens=800)
    assert ticket.cost == 800
    assert p.delay("proxy", tokens=800) == pytest.approx(600 / (1000 * HEADROOM))
    assert p.delay("proxy", tokens=100) == 0.0
    counted = []
    p.acquire("proxy", tokens=lambda: counted.append(1) or 100)  # a counting function is called once
    assert counted == [1]


def test_openai_wire_calls_also_reserve_max_tokens():
    p, _ = pacer({"openai": {"tpm": 60_000}})
    assert p.acquire("openai", model="gpt-4o", tokens=300, extra_tokens=500).cost == 800


def test_a_call_larger_than_the_whole_minute_budget_is_refused_at_once():
    p, _ = pacer({"proxy": {"tpm": 10_000}})
    with pytest.raises(OversizeCall) as err:
        p.acquire("proxy", tokens=12_000)
    assert "12,000 input tokens" in str(err.value) and "10,000 tokens per minute (config)" in str(err.value)
    assert p.delay("proxy", tokens=9_000) == 0.0  # the refused call reserved nothing


# ---------------------------------------------------------------------- learning from replies


def test_openai_headers_teach_both_limits_and_remaining_lowers_the_bucket():
    p, clock = pacer()
    ticket = p.acquire("openai", model="gpt-4o", tokens=100)
    assert entry(p, "openai/gpt-4o")["rpm_limit"] is None
    clock.t += 0.5
    p.release("openai", "ok", ticket=ticket, headers=openai_headers(rpm=600, rpm_left=0, tpm=60_000, tpm_left=20),
              used_tokens=100)
    info = entry(p, "openai/gpt-4o")
    assert (info["rpm_limit"], info["tpm_limit"], info["limits_from"], info["headers_seen"]) == (
        600, 60_000, "headers", True)
    # the provider had nothing left: both buckets start from what it said, not full
    assert p.delay("openai", model="gpt-4o", tokens=10) == pytest.approx(1 / (10 * HEADROOM))


def test_anthropic_headers_teach_the_input_tokens_budget():
    p, clock = pacer()
    reset = (datetime.fromtimestamp(WALL + clock.t, timezone.utc) + timedelta(seconds=30)).strftime(
        "%Y-%m-%dT%H:%M:%SZ")
    headers = {"anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-remaining": "49",
               "anthropic-ratelimit-requests-reset": reset, "anthropic-ratelimit-input-tokens-limit": "30000",
               "anthropic-ratelimit-input-tokens-remaining": "30000", "anthropic-ratelimit-input-tokens-reset": reset,
               "anthropic-ratelimit-output-tokens-limit": "8000", "anthropic-ratelimit-output-tokens-remaining": "8000",
               "anthropic-ratelimit-output-tokens-reset": reset}
    p.release("anthropic", "ok", ticket=p.acquire("anthropic", model="claude-x", tokens=10), headers=headers,
              used_tokens=10)
    info = entry(p, "anthropic/claude-x")
    assert (info["rpm_limit"], info["tpm_limit"], info["output_tpm_limit"]) == (50, 30_000, 8_000)
    with pytest.raises(OversizeCall):
        p.acquire("anthropic", model="claude-x", tokens=31_000)


def test_a_limit_in_the_config_caps_what_the_headers_say():
    p, _ = pacer({"openai": {"rpm": 100}})
    p.release("openai", "ok", ticket=p.acquire("openai", model="m"), headers=openai_headers(rpm=600))
    info = entry(p, "openai/m")
    assert info["rpm_limit"] == 100 and info["limits_from"] == "config+headers"


def test_the_reported_input_tokens_calibrate_later_reservations():
    p, _ = pacer({"proxy": {"tpm": 600_000}})
    p.release("proxy", "ok", ticket=p.acquire("proxy", tokens=1000), used_tokens=1200)
    assert entry(p, "proxy")["token_ratio"] == 1.2
    assert p.acquire("proxy", tokens=1000).cost == 1200


def test_a_429_gives_its_reservation_back_and_pauses_that_key_only_for_its_retry_after():
    p, clock = pacer({"proxy": {"tpm": 60_000}, "openai": {"rpm": 6000}})
    ticket = p.acquire("proxy", tokens=1000)
    p.release("proxy", "rate_limit", 2.0, ticket=ticket,
              headers={"retry-after": "2", "x-ratelimit-remaining-tokens": "1000",
                       "x-ratelimit-limit-tokens": "60000"})
    assert p.delay("proxy", tokens=1000) == pytest.approx(2.0)
    assert p.delay("openai", model="gpt-4o") == 0.0
    clock.t += 2.0
    assert p.delay("proxy", tokens=1000) == 0.0  # the refused call's tokens came back
    info = entry(p, "proxy")
    assert info["rate_limited"] == 1 and info["input_tokens"] == 0


def test_a_429_without_headers_empties_a_known_bucket():
    p, clock = pacer({"proxy": {"rpm": 600}})
    p.release("proxy", "rate_limit", None, ticket=p.acquire("proxy"))
    assert p.delay("proxy") == pytest.approx(1 / (10 * HEADROOM))


def test_a_429_halves_the_calls_in_flight_only_where_no_budget_is_known():
    p, clock = pacer({"proxy": {"rpm": 600}}, concurrency=8)
    p.release("proxy", "rate_limit", None, ticket=p.acquire("proxy"))
    clock.t += 1.0
    assert all(isinstance(p.try_acquire("proxy"), Ticket) for _ in range(8))  # the budget paces; 8 may fly
    assert p.try_acquire("proxy") == math.inf  # the concurrency cap: until a reply
    p.release("vllm", "rate_limit", None, ticket=p.acquire("vllm"))
    assert isinstance(p.try_acquire("vllm"), Ticket)
    assert 0.0 < p.try_acquire("vllm") < math.inf  # the slow start, halved to one call, opens again with time


def test_before_the_first_reply_calls_in_flight_hold_a_small_token_budget():
    p, clock = pacer()
    key = p._key("openai", "m")
    first = p.acquire("openai", model="m", tokens=FIRST_REPLY_TOKENS - 10_000)
    key.queue.append("next")
    assert p._blocked_for(key, "next", clock.t, 10_000)[0] == 0.0
    assert p._blocked_for(key, "next", clock.t, 10_001) == (math.inf, False)  # waits for the first reply
    p.release("openai", "ok", ticket=first, headers={})
    assert p._blocked_for(key, "next", clock.t, 10**6)[0] == 0.0  # a reply without headers: no budget
    key.queue.clear()
    big = FIRST_REPLY_TOKENS * 3
    assert p.acquire("openai", model="m", tokens=big).cost == big  # one call always goes


def test_without_headers_or_config_429s_set_both_budgets_and_cut_once_per_congestion_event():
    p, clock = pacer()

    def send(outcome="ok", retry_after=None):
        clock.t += p.delay("vllm", tokens=100)  # the fake clock moves instead of the pacer waiting
        p.release("vllm", outcome, retry_after, ticket=p.acquire("vllm", tokens=100), headers={})

    for _ in range(10):  # ten accepted in the first second
        send()
        clock.t += 0.1
    refused, in_flight = p.acquire("vllm", tokens=100), p.acquire("vllm", tokens=100)
    p.release("vllm", "rate_limit", 0.5, ticket=refused, headers={})
    info = entry(p, "vllm")  # 11 calls sent in the second before the refused one and not refused (yet)
    assert info["limits_from"] == "429s" and info["tpm_limit"] == pytest.approx(0.9 * 11 * 100 * 60)
    assert info["rpm_limit"] == pytest.approx(0.9 * 11 * 60 * REQUESTS_SLACK)  # tokens pace until told which ran out
    p.release("vllm", "rate_limit", 0.5, ticket=in_flight, headers={})  # sent before the cut: the same event
    assert entry(p, "vllm")["tpm_limit"] == pytest.approx(0.9 * 11 * 100 * 60)
    assert p.delay("vllm", tokens=100) == pytest.approx(0.5)  # paused for the Retry-After
    send("rate_limit")  # sent at the guess and refused: a new event, cut
    assert entry(p, "vllm")["tpm_limit"] < 0.9 * 11 * 100 * 60
    clock.t += p.delay("vllm", tokens=10**7)  # a guessed token budget paces a huge call, never refuses it
    assert p.acquire("vllm", tokens=10**7).cost == 10**7


def test_a_429_does_not_guess_a_request_budget_where_headers_state_the_limits():
    p, _ = pacer()
    p.release("openai", "rate_limit", 1.0, ticket=p.acquire("openai", model="m"),
              headers=openai_headers(rpm=600, rpm_left=0))
    assert entry(p, "openai/m")["limits_from"] == "headers" and entry(p, "openai/m")["rpm_limit"] == 600


# ---------------------------------------------------------------------- the cap on calls in flight


def test_429s_never_hold_a_key_below_one_call_and_its_slow_start_opens_back_to_the_concurrency():
    p, clock = pacer(concurrency=8)
    for _ in range(5):  # a storm of 429s among the first calls: nothing to measure a rate from
        clock.t += 1.0
        p.release("vllm", "rate_limit", None, ticket=p.acquire("vllm"), headers={})
    assert entry(p, "vllm")["limits_from"] is None
    flying = [p.try_acquire("vllm")]
    assert isinstance(flying[0], Ticket)  # one call always goes
    while len(flying) < 8:
        got = p.try_acquire("vllm")
        if isinstance(got, Ticket):
            flying.append(got)
        else:
            assert 0.0 < got < 1.0  # the slow start opens with time, not with a reply
            clock.t += got
    assert p.try_acquire("vllm") == math.inf  # the concurrency: until a reply


def test_a_server_error_neither_pauses_nor_halves_the_calls_in_flight():
    p, clock = pacer(concurrency=4)
    p.release("vllm", "ok", ticket=p.acquire("vllm"), headers={})
    p.release("vllm", "server", None, ticket=p.acquire("vllm"), headers={})
    assert all(isinstance(p.try_acquire("vllm"), Ticket) for _ in range(4))
    assert p.summary() == {"concurrency": 4, "outcomes": {"vllm": {"ok": 1, "server": 1}}}


def test_a_retry_after_pauses_new_attempts_on_that_key_only():
    p = Pacer(4)
    p.release("vllm", "rate_limit", 0.3, ticket=p.acquire("vllm"))
    t0 = time.monotonic()
    p.release("openai", "ok", ticket=p.acquire("openai", model="m"))  # another provider is not paused
    assert time.monotonic() - t0 < 0.1
    p.release("vllm", "ok", ticket=p.acquire("vllm"))
    assert time.monotonic() - t0 >= 0.29


def test_calls_in_flight_never_exceed_the_concurrency_under_threads():
    p = Pacer(3)
    peak = current = 0
    guard = threading.Lock()

    def work():
        nonlocal peak, current
        for _ in range(20):
            ticket = p.acquire("vllm")
            with guard:
                current += 1
                peak = max(peak, current)
            time.sleep(0.001)
            with guard:
                current -= 1
            p.release("vllm", "ok", ticket=ticket)

    threads = [threading.Thread(target=work) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak == 3


# ---------------------------------------------------------------------- keys and reporting


def test_openai_and_anthropic_limit_each_model_other_providers_are_one_budget():
    assert pacing_key("openai", "gpt-4o") == "openai/gpt-4o"
    assert pacing_key("anthropic", "claude-x") == "anthropic/claude-x"
    assert pacing_key("vllm", "llama") == "vllm" and pacing_key("azure", "gpt-4o") == "azure"


def test_status_text_shows_rates_against_limits_and_the_time_lost_waiting():
    text = status_text([{"key": "openai/gpt-4o", "requests": 10, "recent_rpm": 291.0, "rpm_limit": 300,
                         "recent_tpm": 1_940_000, "tpm_limit": 2_000_000, "active_s": 100.0, "throttled_s": 85.0,
                         "rate_limited": 2}])
    assert text == "openai/gpt-4o 291/300 rpm 1.94M/2M tpm throttled 85% 429s 2"
    assert status_text([{"key": "x", "requests": 0}]) == ""


def test_run_meta_figures_count_accepted_requests_and_time_waited():
    p, clock = pacer({"proxy": {"rpm": 60}})
    for _ in range(3):
        while p.delay("proxy"):
            clock.t += p.delay("proxy")
        p.release("proxy", "ok", ticket=p.acquire("proxy"))
    info = entry(p, "proxy")
    assert info["requests"] == 3 and info["rate_limited"] == 0
    assert info["active_s"] == pytest.approx(2 / HEADROOM, rel=1e-3)
    assert info["achieved_rpm"] == pytest.approx(3 / (2 / HEADROOM) * 60, rel=1e-3)


# ---------------------------------------------------------------------- reading the headers


def test_retry_after_may_be_an_http_date_or_milliseconds():
    now = datetime(2026, 1, 1, tzinfo=timezone.utc).timestamp()
    assert rate_headers.parse_retry_after({"retry-after": "Thu, 01 Jan 2026 00:00:05 GMT"}, now) == 5.0
    assert rate_headers.parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}, now) == 0.25


def test_headers_in_any_case_and_none_at_all():
    facts = rate_headers.parse({"X-RateLimit-Limit-Requests": "500", "X-RateLimit-Remaining-Tokens": "7"})
    assert facts.requests.limit == 500 and facts.input_tokens.remaining == 7 and not facts.empty
    assert rate_headers.parse({"content-type": "application/json"}).empty
    assert rate_headers.parse(None) is rate_headers.NO_HEADERS
