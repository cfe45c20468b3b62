"""Learning a limit nobody states, from the 429s: the finder's rules on their own, then whole runs through the pacer
against a simulated provider (``pacer_sim``: a fake clock, seeded, milliseconds of real time). No timing asserts: the
clock only moves when the simulation moves it."""

from __future__ import annotations

import pytest

from lme.models import rate_guess
from lme.models.rate_guess import START_DOUBLING_S, START_WINDOW, LimitFinder
from lme.models.rate_budget import HEADROOM
from lme.models.rate_guess import MIN_RPM as GUESS_MIN_RPM
from lme.models.rate_pacer import Pacer
from pacer_sim import KEY, Provider, SimClock, simulate

LIMIT_RPM = 600.0
"""The issue's provider: 10 requests a second per model, buckets of one second."""


def steady(finder: LimitFinder, start: float, end: float, per_s: float, tokens: float = 100.0) -> None:
    t = start
    while t < end:
        finder.sent(t, tokens)
        t += 1.0 / per_s


# ---------------------------------------------------------------------- the finder's rules


def test_the_slow_start_opens_with_time_only_while_it_holds_calls_back():
    finder = LimitFinder(32)
    assert finder.slow_start_wait(START_WINDOW - 1, 0.0) == 0.0
    assert finder.slow_start_wait(START_WINDOW, 50.0) > 0.0  # 50 s without calls held back grew nothing
    in_flight, t = START_WINDOW, 50.0
    while t < 50.0 + 3 * START_DOUBLING_S + 0.01:  # calls waiting all along: admitted as it opens
        while finder.slow_start_wait(in_flight, t) == 0.0 and in_flight < 32:
            in_flight += 1
        t += 0.005
    assert in_flight == 32  # 4 -> 32 in three doublings
    finder.refused_unpaced(16, t)
    assert finder.slow_start_wait(9, t) > 0.0  # a 429 that set no guess halves it


def test_a_429_for_a_call_sent_before_the_last_cut_is_the_same_congestion_event():
    finder = LimitFinder(8)
    steady(finder, 0.0, 1.0, 10.0)
    first = finder.after_429(1.05, 1.0, None, None, 0.1)
    assert first is not None
    assert finder.after_429(1.06, 1.02, *first, 0.1) is None  # in flight when the cut was made
    steady(finder, 1.2, 4.5, 10.0)
    assert finder.after_429(4.55, 4.5, *first, 0.1) is not None  # sent at the guess and refused: a new event


def test_a_cut_goes_to_the_rate_the_provider_accepted_between_two_refusals():
    finder = LimitFinder(8)
    steady(finder, 0.0, 1.0, 20.0)  # the provider's initial burst makes the first guess too high
    finder.refused(1.0, 100.0)
    rpm, tpm = finder.after_429(1.01, 1.0, None, None, 0.0)
    assert tpm > 1.2 * LIMIT_RPM * 100 and rpm > tpm / 100  # tokens pace until the sizes say which ran out
    finder.evidence = rate_guess.EVIDENCE_NEEDED  # small calls were refused: requests run out
    steady(finder, 1.02, 6.0, 15.0)  # sending at 15/s for 5 s, the provider refused 5 a second of them
    for k in range(int(5 * 4.98)):
        finder.refused(1.02 + k / 5.0, 100.0)
    new_rpm, new_tpm = finder.after_429(6.01, 6.0, rpm, tpm, 0.0)
    assert new_rpm == pytest.approx(LIMIT_RPM, rel=0.05) and new_tpm is None


def test_small_refused_calls_say_requests_ran_out_and_only_large_ones_tokens():
    requests, tokens = LimitFinder(8), LimitFinder(8)
    for finder in (requests, tokens):
        for k in range(20):
            finder.sent(k * 0.05, 200.0 if k % 2 else 8_000.0)  # judge-sized and reader-sized calls
    requests.refused(0.9, 200.0)
    assert requests.limited_by == "requests"
    for at in (0.5, 0.7, 0.95):
        tokens.refused(at, 8_000.0)
    assert tokens.limited_by == "tokens"
    alike = LimitFinder(8)
    steady(alike, 0.0, 1.0, 20.0)
    for at in (0.5, 0.7, 0.9):
        alike.refused(at, 100.0)
    assert alike.limited_by is None  # calls of one size say nothing (and either budget paces them alike)


def test_growth_holds_after_a_cut_then_speeds_up_but_only_while_the_guess_is_in_use():
    finder = LimitFinder(8)
    steady(finder, 0.0, 2.0, 10.0)
    _, tpm = finder.after_429(2.0, 2.0, None, None, 0.0)
    assert finder.grow(5.0, None, tpm) == (None, tpm)  # nothing sent lately: the guess is not in use
    steady(finder, 5.0, 13.0, 2 * tpm / 60.0 / 100.0)  # calls enough to use it as it grows
    finder.grow(8.0, None, tpm)
    grown, steps = tpm, []
    for t in range(9, 13):
        before = grown
        _, grown = finder.grow(float(t), None, grown)
        steps.append(grown / before)
    assert steps[0] > 1.0 and steps[-1] > steps[0]  # grows, and faster the longer no 429 comes
    finder.after_429(13.5, 13.4, None, grown, 3.0)
    assert finder.grow(15.0, None, grown) == (None, grown)  # held for the Retry-After (3 s) after a cut


# ---------------------------------------------------------------------- whole runs against a simulated provider


@pytest.mark.parametrize("concurrency", [8, 32, 64])
@pytest.mark.parametrize("refusal_latency", [0.003, 0.04])
def test_without_headers_the_limit_is_found_with_few_429s_whatever_the_concurrency(concurrency, refusal_latency):
    for seed in range(3):
        run = simulate(concurrency=concurrency, seed=seed, latency=0.05, refusal_latency=refusal_latency)
        assert run.refused(before=10.0) <= 20, f"seed {seed}: {run.refused(10.0)} 429s in the first 10 s"
        assert run.share_429() <= 0.10 and run.share_of_limit() >= 0.9, (seed, run.share_429(), run.share_of_limit())


@pytest.mark.parametrize("concurrency", [8, 32, 64])
def test_with_headers_the_limit_is_held_without_a_429(concurrency):
    run = simulate(concurrency=concurrency, provider=Provider(headers=True))
    assert run.refused() == 0 and run.share_of_limit() >= 0.95


def test_a_retry_after_in_whole_seconds_does_not_cost_the_limit():
    for seed in range(3):
        run = simulate(seed=seed, provider=Provider(retry_after="seconds"), refusal_latency=0.05)
        assert run.share_429() <= 0.10 and run.share_of_limit() >= 0.9, (seed, run.share_429(), run.share_of_limit())


def test_a_tokens_only_limit_without_headers_is_found():
    for seed in range(3):
        run = simulate(seed=seed, provider=Provider(rpm=None, tpm=2_000_000))
        assert run.share_429() <= 0.10 and run.share_of_limit() >= 0.9, (seed, run.share_429(), run.share_of_limit())
        assert 0.7 * 2_000_000 <= run.pacer.pacing()[0]["tpm_limit"] <= 1.5 * 2_000_000  # found (and probing)


@pytest.mark.parametrize("precise", [False, True])
def test_a_guess_cut_to_a_third_of_the_limit_is_back_near_it_within_seconds(precise):
    clock = SimClock()
    pacer = Pacer(32, clock=clock, wall=lambda: 1_800_000_000.0 + clock.t)
    key = pacer._key(*KEY)
    key.requests.guessed = LIMIT_RPM / 3  # what a cut to a third (R = 5 in the issue) left
    key.finder.precise = precise  # gentle growth, as after a measured cut, or quick
    run = simulate(pacer=pacer, items=300, provider=Provider())
    back = next((t for t in range(60) if run.accepted_rate(t, t + 2.0) >= 0.9 * LIMIT_RPM / 60), None)
    assert back is not None and back <= 15, back  # growing 2% a second, it took 55 s
    assert run.share_429() <= 0.05


def test_no_call_waits_longer_than_a_retry_after_or_the_slowest_guess():
    slowest = 60.0 / (GUESS_MIN_RPM * HEADROOM)  # also a token guess: one of the largest recent calls at that pace
    for provider in (Provider(), Provider(retry_after="seconds"), Provider(rpm=None, tpm=2_000_000),
                     Provider(burst_s=0.0)):
        run = simulate(provider=provider, items=40)
        assert run.longest_wait <= 2.0, (provider, run.longest_wait)  # a call's spacing, or a whole-second pause
    slow = simulate(provider=Provider(rpm=60.0), items=40)  # one request a second: long waits, never a crawl
    assert slow.longest_wait <= slowest + 3.0, slow.longest_wait  # (it was 62 s when a guess could reach 1 rpm)


def test_the_slow_start_costs_an_unlimited_server_well_under_a_second():
    for latency in (0.1, 1.0):
        run = simulate(concurrency=32, items=20, latency=latency, provider=Provider(rpm=None))
        ideal = 2 * latency + latency  # reader then judge; the first reply's token gate holds one round trip
        assert run.finished_at <= ideal + 0.5, (latency, run.finished_at)
        assert run.refused() == 0
