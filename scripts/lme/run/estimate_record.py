"""The dry run's estimate as a record: what ``dry_run.estimate`` returns and the cost gate, the unattended gate and
``--dry-run`` read. ``to_dict`` is ``--dry-run --json``'s record exactly (keys in their order)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

Json = Mapping[str, Any]


@dataclass(frozen=True)
class RoleEstimate:
    """One role of the target's calls (reader, writer, ...): calls, free ones, tokens and an upper-bound cost."""

    calls: int
    cached_calls: int
    tokens_in: int
    tokens_out_max: int
    usd_max: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "cached_calls": self.cached_calls, "tokens_in": self.tokens_in,
                "tokens_out_max": self.tokens_out_max, "usd_max": self.usd_max}

    @classmethod
    def from_dict(cls, d: Json) -> "RoleEstimate":
        return cls(d["calls"], d["cached_calls"], d["tokens_in"], d["tokens_out_max"], d["usd_max"])


@dataclass(frozen=True)
class GenerationEstimate:
    """The target's calls over every role; output tokens counted at ``max_tokens`` (an upper bound)."""

    calls: int
    cached_calls: int
    tokens_in: int
    tokens_out_max: int
    usd_max: float | None
    seconds: float
    unpriced_models: tuple[str, ...]
    by_role: Mapping[str, RoleEstimate]

    def to_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "cached_calls": self.cached_calls, "tokens_in": self.tokens_in,
                "tokens_out_max": self.tokens_out_max, "usd_max": self.usd_max, "seconds": self.seconds,
                "unpriced_models": list(self.unpriced_models),
                "by_role": {role: r.to_dict() for role, r in self.by_role.items()}}

    @classmethod
    def from_dict(cls, d: Json) -> "GenerationEstimate":
        return cls(d["calls"], d["cached_calls"], d["tokens_in"], d["tokens_out_max"], d["usd_max"], d["seconds"],
                   tuple(d["unpriced_models"]), {role: RoleEstimate.from_dict(r) for role, r in d["by_role"].items()})


@dataclass(frozen=True)
class JudgeEstimate:
    """The judge's calls. Counted unless the run is known to make none: a hypotheses run's exact judge prompt with
    an archived official verdict (``archived_calls``) or its exact request in the call cache (``cached_calls``);
    a run that generates its answers has every judge call counted (its hypotheses are not known before it runs)."""

    calls: int
    tokens_in: int
    tokens_out: int
    usd: float | None
    seconds: float
    unpriced_models: tuple[str, ...]
    cached_calls: int = 0
    archived_calls: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "cached_calls": self.cached_calls, "archived_calls": self.archived_calls,
                "tokens_in": self.tokens_in, "tokens_out": self.tokens_out, "usd": self.usd,
                "seconds": self.seconds, "unpriced_models": list(self.unpriced_models)}

    @classmethod
    def from_dict(cls, d: Json) -> "JudgeEstimate":
        return cls(d["calls"], d["tokens_in"], d["tokens_out"], d["usd"], d["seconds"], tuple(d["unpriced_models"]),
                   int(d.get("cached_calls", 0)), int(d.get("archived_calls", 0)))


@dataclass(frozen=True)
class BatchEstimate:
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

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "discount": self.discount,
                "stages": {name: dict(stage) for name, stage in self.stages.items()},
                "sync_usd_max": self.sync_usd_max, "batch_usd_max": self.batch_usd_max,
                "chosen_usd_max": self.chosen_usd_max, "sync_requests": self.sync_requests,
                "sync_seconds": self.sync_seconds, "batch_time": self.batch_time,
                "by_role_calls": dict(self.by_role_calls)}

    @classmethod
    def from_dict(cls, d: Json) -> "BatchEstimate":
        return cls(d["mode"], d["discount"], dict(d["stages"]), d["sync_usd_max"], d["batch_usd_max"],
                   d["chosen_usd_max"], d["sync_requests"], d["sync_seconds"], d["batch_time"], dict(d["by_role_calls"]))


@dataclass(frozen=True)
class Estimate:
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
    calls_check: Json | None = None
    """``dry_run.calls_check``: set by ``--dry-run`` only."""

    def with_calls_check(self, check: Json) -> "Estimate":
        return replace(self, calls_check=check)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "items": self.items, "items_without_prompt_preview": self.items_without_prompt_preview,
            "generation": self.generation.to_dict(), "judge": self.judge.to_dict(),
            "total_usd_max": self.total_usd_max, "batch": self.batch.to_dict(), "seconds": self.seconds,
            "concurrency": self.concurrency, "target": self.target, "judge_model": self.judge_model,
            "note": self.note}
        if self.calls_check is not None:
            out["calls_check"] = dict(self.calls_check)
        return out

    @classmethod
    def from_dict(cls, d: Json) -> "Estimate":
        check = d.get("calls_check")
        return cls(d["items"], d["items_without_prompt_preview"], GenerationEstimate.from_dict(d["generation"]),
                   JudgeEstimate.from_dict(d["judge"]), d["total_usd_max"], BatchEstimate.from_dict(d["batch"]),
                   d["seconds"], d["concurrency"], d["target"], d["judge_model"], d["note"],
                   None if check is None else dict(check))
