"""One per-minute budget as a bucket: its refill, its burst, a call larger than the bucket, an unknown limit."""

from __future__ import annotations

import pytest

from lme.models.rate_budget import BURST_S, HEADROOM, Budget


def test_a_budget_refills_at_the_limit_less_headroom_and_holds_one_second_of_it():
    budget = Budget(configured=600.0)
    assert budget.capacity() == 600 * BURST_S / 60 == 10
    budget.level = budget.capacity()
    budget.take(10)
    budget.refill(1.0)
    assert budget.level == pytest.approx(10 * HEADROOM)
    budget.refill(100.0)
    assert budget.level == 10  # never more than the burst


def test_a_call_larger_than_the_bucket_goes_when_it_is_full_and_leaves_it_in_debt():
    budget = Budget(configured=60_000.0)  # 1,000 tokens a second, a bucket of 1,000
    budget.level = 400.0
    assert budget.wait_for(5_000) == pytest.approx(600 / (1000 * HEADROOM))
    budget.level = 1000.0
    assert budget.wait_for(5_000) == 0.0
    budget.take(5_000)
    assert budget.wait_for(5_000) == pytest.approx(5_000 / (1000 * HEADROOM))


def test_an_unknown_budget_never_waits():
    assert Budget().wait_for(10**9) == 0.0
