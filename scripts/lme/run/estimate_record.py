"""The dry run's estimate as a record: what ``dry_run.estimate`` returns and the cost gate, the unattended gate and
``--dry-run`` read. ``to_dict`` is ``--dry-run --json``'s record exactly (keys in their order)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from lme.core import codec
from lme.core.codec import Record

Json = Mapping[str, Any]


@dataclass(frozen=True)
class RoleEstimate(Record):
    """One role of the target's calls (reader, writer, ...): calls, free ones, tokens and an upper-bound cost."""

    calls: int
    cached_calls: int
    tokens_in: int
    tokens_out_max: int
    usd_max: float | None


@dataclass(frozen=True)
class GenerationEstimate(Record):
    """The target's calls over every role; output tokens counted at ``max_tokens`` (an upper bound)."""

    calls: int
    cached_calls: int
    tokens_in: int
    tokens_out_max: int
    usd_max: float | None
    seconds: float
    unpriced_models: tuple[str, ...]
    by_role: Mapping[str, RoleEstimate]


@dataclass(frozen=True)
class JudgeEstimate(Record):
    """The judge's calls. Counted unless the run is known to make none: a hypotheses run's exact judge prompt with
    an archived official verdict (``archived_calls``) or its exact request in the call cache (``cached_calls``);
    a run that generates its answers has every judge call counted (its hypotheses are not known before it runs)."""

    calls: int
    cached_calls: int
    archived_calls: int
    tokens_in: int
    tokens_out: int
    usd: float | None
    seconds: float
    unpriced_models: tuple[str, ...]


@dataclass(frozen=True)
class BatchEstimate(Record):
    """Both prices and both times: synchronous and through the Batch APIs, per stage (``stages``, as
    ``dry_run.batch_figures`` builds them) and in total; ``chosen_usd_max`` is what this run's ``--batch`` pays."""

    mode: str
    discount: float
    stages: Mapping[str, Json]
    sync_usd_max: float | None
    batch_usd_max: float | None
    chosen_usd_max: float | None
    sync_requests: int
    sync_seconds: float
    batch_time: str
    by_role_calls: Mapping[str, int]


@dataclass(frozen=True)
class Estimate(Record):
    """What an invocation would cost and take: per stage, in total (an upper bound), with what was assumed."""

    items: int
    items_without_prompt_preview: int
    generation: GenerationEstimate
    judge: JudgeEstimate
    total_usd_max: float | None
    batch: BatchEstimate
    seconds: float
    concurrency: int
    target: str
    judge_model: str
    note: str
    calls_check: Json | None = codec.field(default=None, omit=None)
    """``dry_run.calls_check``: set by ``--dry-run`` only."""
