"""A dated price table: tokens -> US dollars. Unknown models cost ``None`` (unknown), never 0.

Prices are list prices for standard (non-batch, non-cached) API use, in USD per million input / output tokens.
A model id matches an entry exactly, or as the entry plus a dated snapshot suffix (``claude-sonnet-4-5-20250929``,
``gpt-4o-mini-2024-07-18``) or ``-latest``; anything else is unknown, so a newer model never silently inherits an
older family's price. Sources: openai.com/api/pricing and docs.anthropic.com/en/docs/about-claude/pricing;
re-read them and update ``PRICES_READ_ON`` when you change a number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from lme.core.facts import is_offline
from lme.core.records import CallRecord, Verdict, call_records
from lme.core.run_records import ResultRow, RowCost

PRICES_READ_ON = "2026-11-29"

PRICES: dict[str, tuple[float, float]] = {
    # OpenAI chat
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-2024-08-06": (2.50, 10.00),
    "gpt-4o-2024-11-20": (2.50, 10.00),
    "gpt-4o-2024-05-13": (5.00, 15.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "o1": (15.00, 60.00),
    "o1-mini": (1.10, 4.40),
    "o3": (2.00, 8.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
    # Anthropic
    "claude-3-haiku": (0.25, 1.25),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-haiku-4-5": (1.00, 5.00),
    "claude-3-5-sonnet": (3.00, 15.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-sonnet-4-5": (3.00, 15.00),
    "claude-sonnet-4-6": (3.00, 15.00),
    "claude-3-opus": (15.00, 75.00),
    "claude-opus-4": (15.00, 75.00),
    "claude-opus-4-1": (15.00, 75.00),
    "claude-opus-4-5": (5.00, 25.00),
    "claude-opus-4-6": (5.00, 25.00),
    # OpenAI embeddings (no output tokens)
    "text-embedding-3-small": (0.02, 0.0),
    "text-embedding-3-large": (0.13, 0.0),
    "text-embedding-ada-002": (0.10, 0.0),
}

BATCH_DISCOUNT = 0.5
"""Share of the list price paid for a call through a provider's Batch API, input and output tokens alike.
OpenAI: the Batch API FAQ (help.openai.com/en/articles/9197833, "50% cost discount vs. the synchronous APIs") and
the Batch column of openai.com/api/pricing; Anthropic: the Pricing section of the batch-processing guide
(platform.claude.com/docs/en/build-with-claude/batch-processing, "all usage is charged at 50% of the standard API
prices") and the batch column of its pricing page. Read on ``PRICES_READ_ON``."""

_SNAPSHOT_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


def price_for(model: str) -> tuple[float, float] | None:
    """(input, output) USD per million tokens, or None when the model is not in the table."""
    if model in PRICES:
        return PRICES[model]
    base = _SNAPSHOT_SUFFIX.sub("", model)
    if base != model and base in PRICES:
        return PRICES[base]
    return None


def cost_usd(model: str, tokens_in: int, tokens_out: int, pricing: str = "sync") -> float | None:
    """Dollars for one call, or None for an unknown model (unknown is not free). ``pricing`` ``batch``: a call
    through a Batch API, at ``BATCH_DISCOUNT`` of the list price."""
    price = price_for(model)
    if price is None:
        return None
    usd = (tokens_in * price[0] + tokens_out * price[1]) / 1_000_000
    return usd * BATCH_DISCOUNT if pricing == "batch" else usd


def call_cost(calls: Iterable[CallRecord | Mapping[str, Any]]) -> float | None:
    """Dollars actually spent on these calls (cache hits are free); None when any paid call's price is unknown.
    A call may be given in its JSON form (a result row's ``calls`` entry)."""
    total = 0.0
    for call in call_records(list(calls)):
        if call.cached:
            continue
        usd = cost_usd(str(call.model or ""), call.tokensIn, call.tokensOut, call.pricing)
        if usd is None:
            return None
        total += usd
    return total


def verdict_cost(verdict: Verdict) -> float | None:
    """Dollars of the judge call behind ``verdict`` (offline, cached and archived verdicts are free)."""
    if is_offline(verdict.provider):
        return 0.0
    return call_cost([judge_call(verdict)])


def judge_call(verdict: Verdict) -> CallRecord:
    """The judge call behind ``verdict`` as a call record (what pricing and the batch figures read)."""
    return CallRecord(provider=verdict.provider, model=verdict.model, tokensIn=int(verdict.tokensIn or 0),
                      tokensOut=int(verdict.tokensOut or 0), cached=bool(verdict.cached),
                      pricing=str(verdict.pricing or "sync"), batch_id=verdict.batch_id)


def generation_cost(calls: Sequence[CallRecord], tokens_in: int, tokens_out: int, model: str) -> float | None:
    """Dollars of generating one answer: its calls when it has any (the toolkit's own, or a user's system's through
    the target endpoint); else the tokens the target reported, at the list price of ``model`` (the run's target
    model): None (unpriced) when the model is not in the table, never $0; no calls and no tokens: free."""
    if calls:
        return call_cost(calls)
    if not (tokens_in or tokens_out):
        return 0.0
    return cost_usd(model, tokens_in, tokens_out)


def priced_row(row: ResultRow) -> RowCost:
    """A row's cost from what it holds: its generation (``generation_cost`` of its calls, or of the tokens it
    reports at its target's model) and its judge call (none for an error row: 0); the total None when either
    part is unpriced."""
    model = "" if row.target is None else row.target.model
    generation = generation_cost(row.calls, int(row.tokensIn or 0), int(row.tokensOut or 0), model)
    judge = 0.0 if row.judgment is None else verdict_cost(row.judgment)
    return RowCost(generation_usd=generation, judge_usd=judge,
                   total_usd=None if generation is None or judge is None else generation + judge)


def row_cost(row: ResultRow) -> RowCost:
    """A row's cost: as the row recorded it (the item runner writes ``priced_row``), else ``priced_row`` (a row
    written before error rows recorded theirs)."""
    return row.cost if row.cost is not None else priced_row(row)


def row_spend(row: ResultRow) -> float | None:
    """Dollars this toolkit paid for one result row (``row_cost``'s total; cache hits free)."""
    return row_cost(row).total_usd


@dataclass(frozen=True)
class Spend:
    """What a run's rows cost, the memory system's part (generation) apart from the judge's: every reader of a run's
    dollars (the scorecard, ``run_status``, the progress line, the cost cap) adds its rows up with ``spend``."""

    rows: int = 0
    known_generation_usd: float = 0.0
    known_judge_usd: float = 0.0
    rows_unknown_generation: int = 0
    """Rows whose generation is unpriced (a model not in the price table)."""
    rows_unknown_judge: int = 0
    rows_unknown: int = 0
    """Rows with either part unpriced."""

    @property
    def generation_usd(self) -> float | None:
        return None if self.rows_unknown_generation else self.known_generation_usd

    @property
    def judge_usd(self) -> float | None:
        return None if self.rows_unknown_judge else self.known_judge_usd

    @property
    def known_total_usd(self) -> float:
        return self.known_generation_usd + self.known_judge_usd

    @property
    def total_usd(self) -> float | None:
        return None if self.rows_unknown else self.known_total_usd

    def split(self) -> str:
        """``memory system $0.0123, judge $0.3008`` (``split_text``)."""
        return split_text(part_text(self.generation_usd, self.known_generation_usd, self.rows_unknown_generation),
                          part_text(self.judge_usd, self.known_judge_usd, self.rows_unknown_judge))


def part_text(usd: float | None, known_usd: float, unknown_rows: int) -> str:
    """One part of a spend in words: ``$0.0123``, or ``unpriced for 2 row(s) (known part $0.0100)``."""
    if usd is not None:
        return f"${usd:,.4f}"
    return f"unpriced for {unknown_rows} row(s) (known part ${known_usd:,.4f})"


def split_text(generation: str, judge: str) -> str:
    """The words every report uses for a run's spend apart: ``memory system $0.0123, judge $0.3008``."""
    return f"memory system {generation}, judge {judge}"


def spend(rows: Iterable[ResultRow]) -> Spend:
    """``rows`` added up (``row_cost`` each), per part: an unpriced generation leaves the judge's part known."""
    n = unknown = unknown_generation = unknown_judge = 0
    generation = judge = 0.0
    for row in rows:
        cost = row_cost(row)
        n += 1
        unknown += cost.generation_usd is None or cost.judge_usd is None
        if cost.generation_usd is None:
            unknown_generation += 1
        else:
            generation += cost.generation_usd
        if cost.judge_usd is None:
            unknown_judge += 1
        else:
            judge += cost.judge_usd
    return Spend(rows=n, known_generation_usd=generation, known_judge_usd=judge,
                 rows_unknown_generation=unknown_generation, rows_unknown_judge=unknown_judge, rows_unknown=unknown)
