"""The price table: exact and dated ids, unknown models are None (never 0)."""

from __future__ import annotations

import re

import pytest

from lme.models.prices import PRICES, PRICES_READ_ON, cost_usd, price_for


def test_official_judge_snapshot_costs_its_list_price():
    assert cost_usd("gpt-4o-2024-08-06", 1_000_000, 1_000_000) == pytest.approx(12.50)
    assert cost_usd("gpt-4o-2024-08-06", 1000, 10) == pytest.approx(0.0026)


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-3-5-haiku-20241022", "claude-3-5-haiku"),
        ("claude-3-7-sonnet-latest", "claude-3-7-sonnet"),
        ("gpt-4.1-mini-2025-04-14", "gpt-4.1-mini"),
        ("claude-opus-4-20250514", "claude-opus-4"),
    ],
)
def test_dated_snapshots_match_their_family(model, family):
    assert price_for(model) == PRICES[family]


@pytest.mark.parametrize("model", ["claude-opus-4-9", "gpt-4o-audio-preview", "my-local-llama", "", "gpt-4ox"])
def test_unknown_models_cost_none_not_zero(model):
    assert cost_usd(model, 1000, 1000) is None


def test_a_newer_family_member_does_not_inherit_an_older_price():
    assert price_for("claude-opus-4-5") != price_for("claude-opus-4")
    assert price_for("claude-opus-4-7") is None


def test_embeddings_have_no_output_price_and_zero_tokens_cost_zero():
    assert cost_usd("text-embedding-3-small", 1_000_000, 0) == pytest.approx(0.02)
    assert cost_usd("gpt-4o", 0, 0) == 0.0


def test_table_is_dated_and_well_formed():
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", PRICES_READ_ON)
    for model, (tin, tout) in PRICES.items():
        assert tin > 0 and tout >= 0, model
