"""The scorecard as a record: what ``scoring.build_scorecard`` makes and every renderer and the loop read.

``Scorecard.to_dict`` is ``metrics.json`` exactly (the keys in the order they have always been written, so the file
stays byte-identical); ``Scorecard.from_dict`` reads one back (also a metrics.json written by an older version:
blocks it lacks take their defaults, keys this version does not know are kept in ``extra`` and written back).

"Official" has three senses, named apart here: ``official_judge`` (the configured judge is the official model, the
``judge.official`` flag of run-meta), ``official_verdicts`` (every verdict was made by it, live or from the verdict
archive) and ``comparable`` (no comparability note at all: judge, dataset, coverage, status, errors). Only the last
says whether the figures stand beside published LongMemEval ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping

from lme.core import codec, migrations
from lme.core.codec import Record
from lme.core.facts import SCHEMA_VERSION, SCHEMA_VERSIONS
from lme.core.run_records import FileChanges, JudgeIdentity
from lme.score import metrics

Json = Mapping[str, Any]


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _frac(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _interval(value: Any) -> tuple[float, float] | None:
    return (float(value[0]), float(value[1])) if isinstance(value, (list, tuple)) and len(value) == 2 else None


def _mapping(value: Any) -> Json:
    return value if isinstance(value, Mapping) else {}


# --------------------------------------------------------------------------- the figures


@dataclass(frozen=True)
class Figures(Record):
    """One metrics block (overall, abstention, a question type): n, judged, correct, both accuracies (strict: over
    all n, judged-only: over the judged items) with their 95% Wilson intervals."""

    n: int
    judged: int
    correct: int
    accuracy_strict: float | None
    accuracy_judged: float | None
    wilson_strict: tuple[float, float] | None
    wilson_judged: tuple[float, float] | None
    errors_or_not_run: int | None = codec.field(default=None, omit=None)
    """None in blocks written before it was recorded."""
    __codec_order__ = ("n", "judged", "correct", "errors_or_not_run")

    def accuracy(self, which: str) -> float | None:
        """``strict`` or ``judged``."""
        return self.accuracy_strict if which == "strict" else self.accuracy_judged

    def denominator(self, which: str) -> int:
        return self.n if which == "strict" else self.judged

    @classmethod
    def from_dict(cls, d: Any) -> "Figures":
        d = _mapping(d)
        return cls(n=_count(d.get("n")), judged=_count(d.get("judged")), correct=_count(d.get("correct")),
                   accuracy_strict=_frac(d.get("accuracy_strict")), accuracy_judged=_frac(d.get("accuracy_judged")),
                   wilson_strict=_interval(d.get("wilson_strict")), wilson_judged=_interval(d.get("wilson_judged")),
                   errors_or_not_run=d["errors_or_not_run"] if isinstance(d.get("errors_or_not_run"), int) else None)


@dataclass(frozen=True)
class TaskAveraged(Record):
    """The macro figure: the mean of the per-type accuracies over the types present (strict) or judged."""

    accuracy_strict: float | None
    accuracy_judged: float | None
    types_strict: tuple[str, ...]
    types_judged: tuple[str, ...]
    all_six_types: bool

    @classmethod
    def from_dict(cls, d: Any) -> "TaskAveraged":
        d = _mapping(d)
        return cls(accuracy_strict=_frac(d.get("accuracy_strict")), accuracy_judged=_frac(d.get("accuracy_judged")),
                   types_strict=tuple(d.get("types_strict") or ()), types_judged=tuple(d.get("types_judged") or ()),
                   all_six_types=bool(d.get("all_six_types")))


@dataclass(frozen=True)
class GoldEntry:
    """An item of the known-gold-error registry as the scorecard lists it (``excluded``/``listed_not_excluded``)."""

    question_id: str
    issues: tuple[int, ...]
    status: str | None

    @classmethod
    def from_dict(cls, d: Any) -> "GoldEntry":
        d = _mapping(d)
        return cls(str(d.get("question_id") or ""), tuple(d.get("issues") or ()), d.get("status"))


@dataclass(frozen=True)
class RegistryChange(Record):
    """The gold-error registry changed since the run was last scored: its size and the strict overall figure
    excluding gold errors then (as the metrics.json before rescoring recorded them) and now."""

    items_before: int
    items_now: int
    strict_before: float | None
    strict_now: float | None

    def line(self) -> str:
        return (f"the gold-error registry changed since this run was last scored ({self.items_before} items before, "
                f"{self.items_now} now): this figure moved from {metrics.fmt(self.strict_before)} to "
                f"{metrics.fmt(self.strict_now)}")

    @classmethod
    def from_dict(cls, d: Any) -> "RegistryChange | None":
        if not isinstance(d, Mapping):
            return None
        return cls(_count(d.get("items_before")), _count(d.get("items_now")), _frac(d.get("strict_before")),
                   _frac(d.get("strict_now")))


@dataclass(frozen=True)
class GoldExclusion(Record):
    """The second figure: the same run without the items whose gold was reported wrong upstream."""

    excluded: tuple[Json, ...]
    """``{question_id, issues, status}`` of each item left out."""
    listed_not_excluded: tuple[Json, ...]
    """Items in the registry with another status (counted in both figures)."""
    n_total: int
    correct: int
    judged: int
    overall: Figures
    task_averaged: TaskAveraged
    abstention: Figures
    registry: Json | None = codec.field(default=None, omit=None)
    """``{sha256, items}``: which registry the figure used (``gold_registry.identity``); None before it was kept."""
    registry_change: RegistryChange | None = codec.field(default=None, omit=None)

    def since(self, previous: "GoldExclusion") -> "GoldExclusion":
        """This figure, noting that the registry changed since ``previous`` (the run's metrics.json before
        rescoring) when ``previous`` recorded another registry."""
        before = previous.registry
        if not before or not self.registry or before.get("sha256") == self.registry.get("sha256"):
            return replace(self, registry_change=None)
        return replace(self, registry_change=RegistryChange(
            _count(before.get("items")), _count(self.registry.get("items")),
            previous.overall.accuracy_strict, self.overall.accuracy_strict))

    @property
    def excluded_entries(self) -> tuple[GoldEntry, ...]:
        """``excluded`` read as records (the block itself is kept as written)."""
        return tuple(GoldEntry.from_dict(e) for e in self.excluded)

    @property
    def listed_entries(self) -> tuple[GoldEntry, ...]:
        """``listed_not_excluded`` read as records."""
        return tuple(GoldEntry.from_dict(e) for e in self.listed_not_excluded)

    @classmethod
    def from_dict(cls, d: Any) -> "GoldExclusion":
        d = _mapping(d)
        return cls(excluded=tuple(d.get("excluded") or ()), listed_not_excluded=tuple(d.get("listed_not_excluded") or ()),
                   n_total=_count(d.get("n_total")), correct=_count(d.get("correct")), judged=_count(d.get("judged")),
                   overall=Figures.from_dict(d.get("overall")), task_averaged=TaskAveraged.from_dict(d.get("task_averaged")),
                   abstention=Figures.from_dict(d.get("abstention")),
                   registry=dict(d["registry"]) if isinstance(d.get("registry"), Mapping) else None,
                   registry_change=RegistryChange.from_dict(d.get("registry_change")))


# --------------------------------------------------------------------------- identity of what was scored


@dataclass(frozen=True)
class DatasetRef(Record):
    """The dataset file as every report names it."""

    sha256: str | None
    known_official: str | None
    path: str | None = None
    release: str | None = None
    recognition: Json | None = None
    duplicate_sessions: int = 0
    name: str = ""
    line: str = ""
    __codec_order__ = ("sha256", "path")

    @classmethod
    def from_dict(cls, d: Any) -> "DatasetRef":
        d = _mapping(d)
        return cls(sha256=d.get("sha256"), known_official=d.get("known_official"), path=d.get("path"),
                   release=d.get("release"), recognition=d.get("recognition"),
                   duplicate_sessions=_count(d.get("duplicate_sessions")), name=str(d.get("name") or ""),
                   line=str(d.get("line") or ""))


@dataclass(frozen=True)
class TargetRef(Record):
    """The target that answered; a hypotheses run also names its file and the file's sha256."""

    name: str | None
    provider: str | None
    model: str | None
    hypotheses: Json | None = codec.field(default=None, omit=None)
    """``{file, sha256}`` for a run judged from a hypotheses file, else None."""

    @property
    def hypotheses_file(self) -> Any:
        """The hypotheses file's path as recorded (None for a run that generated its answers)."""
        return None if self.hypotheses is None else self.hypotheses.get("file")

    @property
    def hypotheses_sha256(self) -> Any:
        return None if self.hypotheses is None else self.hypotheses.get("sha256")

    @classmethod
    def from_dict(cls, d: Any) -> "TargetRef":
        d = _mapping(d)
        hyp = d.get("hypotheses")
        return cls(name=d.get("name"), provider=d.get("provider"), model=d.get("model"),
                   hypotheses=hyp if isinstance(hyp, Mapping) else None)


# --------------------------------------------------------------------------- usage, cost, retrieval


@dataclass(frozen=True)
class Cost(Record):
    """What every row the run wrote cost (earlier attempts included: ``prices.spend``, the sums ``run_status``
    shows), the memory system's part (generation) apart from the judge's; a part is None when a row's is unknown
    (never counted as 0), and the known sums are beside it."""

    rows: int
    rows_unknown_cost: int
    total_usd: float | None
    known_total_usd: float
    known_generation_usd: float = 0.0
    known_judge_usd: float = 0.0
    generation_usd: float | None = 0.0
    judge_usd: float | None = 0.0
    rows_unknown_generation: int = 0
    rows_unknown_judge: int = 0

    @classmethod
    def from_dict(cls, d: Any) -> "Cost":
        """From metrics.json's ``cost`` (an older file's parts are set by ``migrations``)."""
        d = _mapping(d)
        return cls(rows=_count(d.get("rows")), rows_unknown_cost=_count(d.get("rows_unknown_cost")),
                   total_usd=_frac(d.get("total_usd")), known_total_usd=_frac(d.get("known_total_usd")) or 0.0,
                   known_generation_usd=_frac(d.get("known_generation_usd")) or 0.0,
                   known_judge_usd=_frac(d.get("known_judge_usd")) or 0.0,
                   generation_usd=_frac(d.get("generation_usd")), judge_usd=_frac(d.get("judge_usd")),
                   rows_unknown_generation=_count(d.get("rows_unknown_generation")),
                   rows_unknown_judge=_count(d.get("rows_unknown_judge")))


@dataclass(frozen=True)
class Latency(Record):
    """Percentiles of one stage's call latencies (ms); None when no call was timed."""

    n: int
    p50: float | None
    p95: float | None
    max: float | None

    @classmethod
    def from_dict(cls, d: Any) -> "Latency":
        d = _mapping(d)
        return cls(n=_count(d.get("n")), p50=_frac(d.get("p50")), p95=_frac(d.get("p95")), max=_frac(d.get("max")))


@dataclass(frozen=True)
class StageLatency(Record):
    generation: Latency
    judge: Latency

    @classmethod
    def from_dict(cls, d: Any) -> "StageLatency":
        d = _mapping(d)
        return cls(generation=Latency.from_dict(d.get("generation")), judge=Latency.from_dict(d.get("judge")))


@dataclass(frozen=True)
class Tokens:
    generation_in: int = 0
    generation_out: int = 0
    judge_in: int = 0
    judge_out: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"generation": {"in": self.generation_in, "out": self.generation_out},
                "judge": {"in": self.judge_in, "out": self.judge_out}}

    @classmethod
    def from_dict(cls, d: Any) -> "Tokens":
        gen, judge = _mapping(_mapping(d).get("generation")), _mapping(_mapping(d).get("judge"))
        return cls(_count(gen.get("in")), _count(gen.get("out")), _count(judge.get("in")), _count(judge.get("out")))


@dataclass(frozen=True)
class CacheHits(Record):
    generation_calls: int = 0
    generation_calls_cached: int = 0
    judge_cached: int = 0
    judge_archived: int = 0
    """Verdicts taken from the verdict archive (no call): not the same as cached."""

    @classmethod
    def from_dict(cls, d: Any) -> "CacheHits":
        d = _mapping(d)
        return cls(*(_count(d.get(f.name)) for f in fields(cls)))


@dataclass(frozen=True)
class Usage:
    """Tokens, latency percentiles, cache hits, retries and error rows by kind and by stage."""

    tokens: Tokens
    latency_ms: StageLatency
    cache: CacheHits
    retries_generation: int
    retries_judge: int
    errors_by_kind: Json
    errors_by_stage: Json

    def to_dict(self) -> dict[str, Any]:
        return {"tokens": self.tokens.to_dict(), "latency_ms": self.latency_ms.to_dict(), "cache": self.cache.to_dict(),
                "retries": {"generation": self.retries_generation, "judge": self.retries_judge},
                "errors_by_kind": dict(self.errors_by_kind), "errors_by_stage": dict(self.errors_by_stage)}

    @classmethod
    def from_dict(cls, d: Any) -> "Usage":
        d = _mapping(d)
        retries = _mapping(d.get("retries"))
        return cls(tokens=Tokens.from_dict(d.get("tokens")), latency_ms=StageLatency.from_dict(d.get("latency_ms")),
                   cache=CacheHits.from_dict(d.get("cache")), retries_generation=_count(retries.get("generation")),
                   retries_judge=_count(retries.get("judge")), errors_by_kind=_mapping(d.get("errors_by_kind")),
                   errors_by_stage=_mapping(d.get("errors_by_stage")))


@dataclass(frozen=True)
class BatchStage(Record):
    batch_calls: int
    batches: int
    batch_usd: float | None
    sync_calls: int

    @classmethod
    def from_dict(cls, d: Any) -> "BatchStage":
        d = _mapping(d)
        return cls(_count(d.get("batch_calls")), _count(d.get("batches")), _frac(d.get("batch_usd")),
                   _count(d.get("sync_calls")))


@dataclass(frozen=True)
class Batches(Record):
    """Which stages ran through Batch APIs (the scorecard holds None when no call was batched)."""

    generation: BatchStage
    judge: BatchStage

    def stages(self) -> tuple[tuple[str, BatchStage], ...]:
        return (("generation", self.generation), ("judge", self.judge))

    @classmethod
    def from_dict(cls, d: Any) -> "Batches":
        d = _mapping(d)
        return cls(BatchStage.from_dict(d.get("generation")), BatchStage.from_dict(d.get("judge")))


@dataclass(frozen=True)
class RetrievalScope:
    """One row of the retrieval table: ``overall`` or a question type, its item count and its metric means."""

    name: str
    n: int
    means: Json

    def mean(self, metric: str, k: int) -> float | None:
        """``recall_any``, ``recall_all`` or ``ndcg_any`` at ``k`` (None when not measured)."""
        return _frac(self.means.get(f"{metric}@{k}"))


@dataclass(frozen=True)
class Retrieval(Record):
    """Session-level retrieval metrics at ``ks`` (``overall``/``per_type``: metric name -> mean; per type also
    ``n``)."""

    ks: tuple[int, ...]
    items_with_retrieval: int
    scored: int
    skipped_abstention: int
    skipped_no_gold: int
    overall: Json
    per_type: Mapping[str, Json]
    level: str | None = codec.field(default="session", omit=None)
    granularity: Json = field(default_factory=dict)
    top_k_covers_all: int = 0
    rankings_with_repeated_ids: int = 0
    __codec_order__ = ("ks", "level", "granularity", "items_with_retrieval", "scored", "skipped_abstention",
                       "skipped_no_gold", "top_k_covers_all", "rankings_with_repeated_ids")

    @classmethod
    def from_dict(cls, d: Any) -> "Retrieval":
        d = _mapping(d)
        return cls(ks=tuple(d.get("ks") or ()), items_with_retrieval=_count(d.get("items_with_retrieval")),
                   scored=_count(d.get("scored")), skipped_abstention=_count(d.get("skipped_abstention")),
                   skipped_no_gold=_count(d.get("skipped_no_gold")), overall=_mapping(d.get("overall")),
                   per_type={t: _mapping(m) for t, m in _mapping(d.get("per_type")).items()},
                   level=d.get("level"), granularity=_mapping(d.get("granularity")),
                   top_k_covers_all=_count(d.get("top_k_covers_all")),
                   rankings_with_repeated_ids=_count(d.get("rankings_with_repeated_ids")))

    def scopes(self) -> list[RetrievalScope]:
        """``overall`` (over the scored items), then each type in its order."""
        return [RetrievalScope("overall", self.scored, self.overall)] + [
            RetrievalScope(t, _count(m.get("n")), m) for t, m in self.per_type.items()]


@dataclass(frozen=True)
class Truncation(Record):
    """How often the reader's history was cut to fit the context window, and how often that lost evidence."""

    items_reporting: int
    truncated: int
    lost_evidence: int
    lost_evidence_unknown: int
    retried_after_too_long: int

    @classmethod
    def from_dict(cls, d: Any) -> "Truncation":
        d = _mapping(d)
        return cls(*(_count(d.get(f.name)) for f in fields(cls)))


@dataclass(frozen=True)
class JudgeStability(Record):
    """Labels whose judge prompt got both yes and no."""

    repeated_items: int
    unstable_in_run: int
    flaky_in_registry: int
    unstable_ids: tuple[str, ...]
    archive_conflicts: int = 0
    """Labels scored from archived official verdicts of both labels (``verdict_archive``'s rule)."""
    __codec_order__ = ("repeated_items", "unstable_in_run", "flaky_in_registry", "archive_conflicts")

    @classmethod
    def from_dict(cls, d: Any) -> "JudgeStability":
        d = _mapping(d)
        return cls(_count(d.get("repeated_items")), _count(d.get("unstable_in_run")),
                   _count(d.get("flaky_in_registry")), tuple(d.get("unstable_ids") or ()),
                   _count(d.get("archive_conflicts")))


@dataclass(frozen=True)
class EmptyHypotheses(Record):
    """Answers that are the empty string (judged as upstream does) and the reader calls' finish reasons."""

    n: int
    judged: int
    finish_reasons: Json

    @classmethod
    def from_dict(cls, d: Any) -> "EmptyHypotheses":
        d = _mapping(d)
        return cls(_count(d.get("n")), _count(d.get("judged")), _mapping(d.get("finish_reasons")))


@dataclass(frozen=True)
class Successor:
    """A successor judge that made some of the verdicts, with its calibration (None: uncalibrated)."""

    judge: str
    verdicts: int
    request_shape: Json | None
    calibration: Json | None

    @classmethod
    def from_dict(cls, d: Any) -> "Successor":
        d = _mapping(d)
        shape, calibration = d.get("request_shape"), d.get("calibration")
        return cls(str(d.get("judge") or ""), _count(d.get("verdicts")),
                   shape if isinstance(shape, Mapping) else None,
                   calibration if isinstance(calibration, Mapping) else None)


@dataclass(frozen=True)
class VerdictSources:
    """The ``verdicts`` block read as a record (``judge_provenance.summary`` writes it; the scorecard keeps the
    block as written): the four counts, the endpoint hosts, each invocation's judge endpoint, the successors."""

    official_live: int
    official_archived: int
    successor: int
    other: int
    endpoints: Mapping[str, int]
    invocation_endpoints: tuple[str, ...]
    successors: tuple[Successor, ...]
    origins: Mapping[str, Any] = field(default_factory=dict)
    """Where the official verdicts come from: ``made_here`` (live or archived, by host), ``imported`` (per file:
    its author's claim), ``conflicts`` (``judge_provenance``); empty in a metrics.json of an older version."""

    def any_verdict(self) -> bool:
        """Some verdict is counted (an offline-judged run has none)."""
        return bool(self.official_live or self.official_archived or self.successor or self.other)

    def official(self) -> bool | None:
        """Every counted verdict is the official judge's; None when none is counted."""
        official, others = self.official_live + self.official_archived, self.successor + self.other
        return None if official + others == 0 else others == 0

    @classmethod
    def from_dict(cls, d: Any) -> "VerdictSources":
        d = _mapping(d)
        return cls(official_live=_count(d.get("official_live")), official_archived=_count(d.get("official_archived")),
                   successor=_count(d.get("successor")), other=_count(d.get("other")),
                   endpoints=_mapping(d.get("endpoints")),
                   invocation_endpoints=tuple(str(e) for e in d.get("invocation_endpoints") or ()),
                   successors=tuple(Successor.from_dict(e) for e in d.get("successors") or ()),
                   origins=_mapping(d.get("origins")))


# --------------------------------------------------------------------------- the estimate under the official judge


@dataclass(frozen=True)
class EstimatedFigure(Record):
    """One figure of ``OfficialEstimate``: an estimate, strict and judged-only, each with its 95% interval; all None
    and a ``reason`` when there is none. Per type also how many items a calibrated judge labelled (``corrected``)
    and whose rates corrected them (``rates``: ``type``, the type's own, or ``pooled``, the whole calibration's)."""

    accuracy: float | None
    ci95: tuple[float, float] | None
    accuracy_judged: float | None
    ci95_judged: tuple[float, float] | None
    reason: str | None = None
    corrected: int | None = codec.field(default=None, omit=None)
    rates: str | None = codec.field(default=None, omit=None)

    @classmethod
    def from_dict(cls, d: Any) -> "EstimatedFigure":
        d = _mapping(d)
        return cls(_frac(d.get("accuracy")), _interval(d.get("ci95")), _frac(d.get("accuracy_judged")),
                   _interval(d.get("ci95_judged")), d.get("reason") if isinstance(d.get("reason"), str) else None,
                   d["corrected"] if isinstance(d.get("corrected"), int) else None,
                   d.get("rates") if isinstance(d.get("rates"), str) else None)


@dataclass(frozen=True)
class EstimateCalibration(Record):
    """A calibrated judge whose labels the estimate corrects: how many, the calibration record it cites (its
    identifying fields; None: uncalibrated) and the pooled rates, and the types corrected with their own rates."""

    judge: str
    verdicts: int
    record: Json | None
    sensitivity: float | None = None
    specificity: float | None = None
    rates_by_type: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, d: Any) -> "EstimateCalibration":
        d = _mapping(d)
        record = d.get("record")
        return cls(str(d.get("judge") or ""), _count(d.get("verdicts")),
                   record if isinstance(record, Mapping) else None, _frac(d.get("sensitivity")),
                   _frac(d.get("specificity")), tuple(str(t) for t in d.get("rates_by_type") or ()))


@dataclass(frozen=True)
class SourceEstimate(Record):
    """The overall strict estimate under one hypothesis source's own rates (None: unusable, ``reason``)."""

    source: str
    n: int
    accuracy: float | None
    reason: str | None = None

    @classmethod
    def from_dict(cls, d: Any) -> "SourceEstimate":
        d = _mapping(d)
        return cls(str(d.get("source") or ""), _count(d.get("n")), _frac(d.get("accuracy")),
                   d.get("reason") if isinstance(d.get("reason"), str) else None)


@dataclass(frozen=True)
class SourceSpread(Record):
    """The estimate's spread across the calibration's hypothesis sources (systems): the overall strict figure under
    each source's own rates, and their min and max; ``too_few``: sources with fewer than the minimum of official yes
    or no verdicts, left out."""

    sources: tuple[SourceEstimate, ...]
    min: float | None
    max: float | None
    too_few: int

    @classmethod
    def from_dict(cls, d: Any) -> "SourceSpread":
        d = _mapping(d)
        return cls(tuple(SourceEstimate.from_dict(s) for s in d.get("sources") or ()), _frac(d.get("min")),
                   _frac(d.get("max")), _count(d.get("too_few")))


@dataclass(frozen=True)
class OfficialEstimate:
    """``metrics.json`` ``official_estimate``: the accuracy the official judge would have given, estimated from the
    labels of calibrated judges corrected by their calibration (``corrected_figures`` builds it). Never an official
    figure. The overall (micro) figure sits at the top level; None on the scorecard when no label came from a
    non-official judge."""

    overall: EstimatedFigure
    method: str
    calibration: tuple[EstimateCalibration, ...]
    official: int
    """Judged items whose label is official (counted as it is)."""
    corrected: int
    """Judged items a calibrated (or uncalibrated) non-official judge labelled."""
    min_per_class: int
    assumption: str
    task_averaged: EstimatedFigure
    abstention: EstimatedFigure
    per_type: Mapping[str, EstimatedFigure]
    by_source: SourceSpread | None = None
    spread_note: str | None = None
    """Why there is no ``by_source`` (an older calibration record, several judges)."""

    def to_dict(self) -> dict[str, Any]:
        return {**self.overall.to_dict(), "method": self.method,
                "calibration": [c.to_dict() for c in self.calibration], "official": self.official,
                "corrected": self.corrected, "min_per_class": self.min_per_class, "assumption": self.assumption,
                "task_averaged": self.task_averaged.to_dict(), "abstention": self.abstention.to_dict(),
                "per_type": {t: f.to_dict() for t, f in self.per_type.items()},
                "by_source": None if self.by_source is None else self.by_source.to_dict(),
                "spread_note": self.spread_note}

    @classmethod
    def from_dict(cls, d: Any) -> "OfficialEstimate":
        d = _mapping(d)
        spread = d.get("by_source")
        overall = {k: d.get(k) for k in ("accuracy", "ci95", "accuracy_judged", "ci95_judged", "reason")}
        return cls(overall=EstimatedFigure.from_dict(overall), method=str(d.get("method") or ""),
                   calibration=tuple(EstimateCalibration.from_dict(c) for c in d.get("calibration") or ()),
                   official=_count(d.get("official")), corrected=_count(d.get("corrected")),
                   min_per_class=_count(d.get("min_per_class")), assumption=str(d.get("assumption") or ""),
                   task_averaged=EstimatedFigure.from_dict(d.get("task_averaged")),
                   abstention=EstimatedFigure.from_dict(d.get("abstention")),
                   per_type={t: EstimatedFigure.from_dict(f) for t, f in _mapping(d.get("per_type")).items()},
                   by_source=SourceSpread.from_dict(spread) if isinstance(spread, Mapping) else None,
                   spread_note=d.get("spread_note") if isinstance(d.get("spread_note"), str) else None)


# --------------------------------------------------------------------------- the scorecard


SHOWN_HEX = 8
"""Digits of a code version's id shown to people (the records keep all 16)."""


def short_code(code_id: str | None) -> str:
    return "unknown" if code_id is None else code_id[:SHOWN_HEX]


@dataclass(frozen=True)
class VersionRows(Record):
    """One version of a run's code: its id (None: rows that carry none), how many rows it made, how many files
    it fingerprinted, and the files that changed from the version before it (in invocation order)."""

    id: str | None
    rows: int
    files: int | None = None
    changes: FileChanges | None = codec.field(default=None, key="changes_from_previous")
    """None for the first version, or when either record is missing."""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "VersionRows":
        changes = d.get("changes_from_previous")
        return cls(id=d.get("id") if isinstance(d.get("id"), str) else None, rows=int(d.get("rows") or 0),
                   files=d.get("files") if isinstance(d.get("files"), int) else None,
                   changes=FileChanges.from_dict(changes) if isinstance(changes, Mapping) else None)


@dataclass(frozen=True)
class CodeVersions:
    """metrics.json's ``code_versions``: the versions of the code that made the scored rows, with their row
    counts, in the order the run first ran them."""

    versions: tuple[VersionRows, ...]

    @property
    def mixed(self) -> bool:
        """The rows come from more than one version (rows without a recorded code count as one more)."""
        return len(self.versions) > 1

    def describe(self) -> str:
        """``code 1a2b3c4d (24 rows)`` or ``rows from 2 code versions: 1a2b3c4d 3 rows, 5e6f7a8b 21 rows (changed
        memsys.py)``."""
        parts = [f"{short_code(v.id)} {v.rows} row{'s' if v.rows != 1 else ''}" for v in self.versions]
        if not self.mixed:
            return f"code {short_code(self.versions[0].id)} ({self.versions[0].rows} rows)"
        changed = "; ".join(v.changes.describe() for v in self.versions if v.changes)
        return (f"rows from {len(self.versions)} code versions: {', '.join(parts)}"
                + (f" ({changed})" if changed else ""))

    def to_dict(self) -> dict[str, Any]:
        return {"versions": [v.to_dict() for v in self.versions], "mixed": self.mixed}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "CodeVersions":
        return cls(tuple(VersionRows.from_dict(v) for v in d.get("versions") or () if isinstance(v, Mapping)))


_LATER_BLOCKS = ("batches", "usage", "latency", "retrieval", "truncation", "pipeline_health", "loop_rows",
                 "judge_stability", "judge_agreement", "verdicts", "empty_hypotheses", "official_estimate",
                 "code_versions")
"""The blocks after ``cost``, in metrics.json's order; a metrics.json of an older version may lack some."""


@dataclass(frozen=True)
class Scorecard:
    """A run's figures (``metrics.json``). Accuracies come twice: strict over all ``n_total`` items (errors and items
    not run count as wrong) and judged-only; full precision (round only for display)."""

    run_id: str
    variant: str | None
    status: str | None
    judge: JudgeIdentity
    dataset: DatasetRef
    target: TargetRef
    n_total: int
    judged: int
    correct: int
    """The STRICT correct count (the loop's termination rule reads it)."""
    coverage: float
    unattributed: int
    overall: Figures
    task_averaged: TaskAveraged
    abstention: Figures
    per_type: Mapping[str, Figures]
    errors: int
    not_run: int
    rows_outside_item_set: int
    excluding_gold_errors: GoldExclusion
    cost: Cost
    usage: Usage
    latency: StageLatency
    comparability_notes: tuple[str, ...]
    """Every reason the figures cannot stand beside published LongMemEval figures; empty = comparable."""
    batches: Batches | None = None
    retrieval: Retrieval | None = None
    truncation: Truncation | None = None
    pipeline_health: Json | None = None
    """``pipeline_health.summarise``'s record (that module reads and prints it)."""
    loop_rows: Json | None = None
    """``loop_rows.summary``'s record (that module reads and prints it)."""
    judge_stability: JudgeStability | None = None
    judge_agreement: Json | None = None
    """``judge_agreement.compact``'s record of the latest agreement measured for a non-official judge."""
    verdicts: Json | None = None
    """``judge_provenance.summary``'s record: where the verdicts came from (``verdict_sources`` describes it)."""
    empty_hypotheses: EmptyHypotheses | None = None
    official_estimate: OfficialEstimate | None = None
    """The accuracy the official judge would have given, estimated from a calibrated judge's labels (never
    official); None when no label came from a non-official judge (every verdict official, or judged offline)."""
    code_versions: CodeVersions | None = None
    """The versions of the target's code that made the scored rows, with their row counts (``code_versions``);
    None when the run recorded none (made before rows carried their code)."""
    schema_version: str = SCHEMA_VERSIONS["metrics"]
    fingerprint: str | None = None
    """sha256 of what scoring read (``score_fingerprint``); None when not computed."""
    extra: Json = field(default_factory=dict)
    """Keys of a metrics.json this version does not know, written back as they were."""
    absent: frozenset[str] = frozenset()
    """Blocks of ``_LATER_BLOCKS`` the metrics.json read lacked (older versions): not written back."""

    # ----------------------------------------------------------------- the three senses of "official"

    @property
    def comparable(self) -> bool:
        """The one that matters: the figures stand beside published LongMemEval results (no note at all)."""
        return not self.comparability_notes

    @property
    def official_judge(self) -> bool | None:
        """The configured judge is the official model (says nothing of the verdicts or of comparability)."""
        return self.judge.official_judge

    @property
    def official_verdicts(self) -> bool | None:
        """Every verdict came from the official judge (live or from the verdict archive); None when the card does
        not record where its verdicts came from or there is none."""
        sources = self.verdict_sources
        return None if sources is None else sources.official()

    @property
    def verdict_sources(self) -> VerdictSources | None:
        """``verdicts`` read as a record; None when the card does not record where its verdicts came from."""
        return VerdictSources.from_dict(self.verdicts) if self.verdicts else None

    def types_present(self) -> list[tuple[str, Figures]]:
        """The per-type blocks of the types with items, in their order."""
        return [(t, b) for t, b in self.per_type.items() if b.n]

    # ----------------------------------------------------------------- metrics.json

    def to_dict(self) -> dict[str, Any]:
        """metrics.json as it has always been written (the key order included)."""
        out: dict[str, Any] = {
            "schemaVersion": self.schema_version, "run_id": self.run_id, "variant": self.variant,
            "status": self.status, "judge": self.judge.to_dict(), "dataset": self.dataset.to_dict(),
            "target": self.target.to_dict(), "n_total": self.n_total, "judged": self.judged,
            "correct": self.correct, "coverage": self.coverage, "unattributed": self.unattributed,
            "overall": self.overall.to_dict(), "task_averaged": self.task_averaged.to_dict(),
            "abstention": self.abstention.to_dict(),
            "per_type": {t: b.to_dict() for t, b in self.per_type.items()},
            "errors": self.errors, "not_run": self.not_run, "rows_outside_item_set": self.rows_outside_item_set,
            "excluding_gold_errors": self.excluding_gold_errors.to_dict(), "cost": self.cost.to_dict(),
        }
        for name in _LATER_BLOCKS:
            if name in self.absent:
                continue
            value = getattr(self, name)
            out[name] = value.to_dict() if hasattr(value, "to_dict") else (
                None if value is None else _plain(value))
        out["comparable"] = self.comparable
        out["comparability_notes"] = list(self.comparability_notes)
        if self.fingerprint is not None:
            out["fingerprint"] = self.fingerprint
        out.update({k: v for k, v in self.extra.items() if k not in out})
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Scorecard":
        """A scorecard from metrics.json's form (``build_scorecard`` checks ``to_dict`` against the schema); an
        older file's brought up to today's shape first (``migrations``)."""
        d = migrations.upgrade("metrics", d)
        def opt(name: str, reader: Any) -> Any:
            value = d.get(name)
            return None if not isinstance(value, Mapping) else reader(value)

        known = {f.name for f in fields(cls)} | {"schemaVersion", "comparable"}
        return cls(
            run_id=str(d.get("run_id") or ""), variant=d.get("variant"), status=d.get("status"),
            judge=JudgeIdentity.from_dict(_mapping(d.get("judge"))), dataset=DatasetRef.from_dict(d.get("dataset")),
            target=TargetRef.from_dict(d.get("target")), n_total=_count(d.get("n_total")),
            judged=_count(d.get("judged")), correct=_count(d.get("correct")), coverage=_frac(d.get("coverage")) or 0.0,
            unattributed=_count(d.get("unattributed")), overall=Figures.from_dict(d.get("overall")),
            task_averaged=TaskAveraged.from_dict(d.get("task_averaged")),
            abstention=Figures.from_dict(d.get("abstention")),
            per_type={t: Figures.from_dict(b) for t, b in _mapping(d.get("per_type")).items()},
            errors=_count(d.get("errors")), not_run=_count(d.get("not_run")),
            rows_outside_item_set=_count(d.get("rows_outside_item_set")),
            excluding_gold_errors=GoldExclusion.from_dict(d.get("excluding_gold_errors")),
            cost=Cost.from_dict(d.get("cost")), usage=Usage.from_dict(d.get("usage")),
            latency=StageLatency.from_dict(d.get("latency")),
            comparability_notes=tuple(str(n) for n in d.get("comparability_notes") or ()),
            batches=opt("batches", Batches.from_dict), retrieval=opt("retrieval", Retrieval.from_dict),
            truncation=opt("truncation", Truncation.from_dict), pipeline_health=opt("pipeline_health", dict),
            loop_rows=opt("loop_rows", dict), judge_stability=opt("judge_stability", JudgeStability.from_dict),
            judge_agreement=opt("judge_agreement", dict), verdicts=opt("verdicts", dict),
            empty_hypotheses=opt("empty_hypotheses", EmptyHypotheses.from_dict),
            official_estimate=opt("official_estimate", OfficialEstimate.from_dict),
            code_versions=opt("code_versions", CodeVersions.from_dict),
            schema_version=str(d.get("schemaVersion") or SCHEMA_VERSION),
            fingerprint=d.get("fingerprint") if isinstance(d.get("fingerprint"), str) else None,
            extra={k: v for k, v in d.items() if k not in known},
            absent=frozenset(name for name in _LATER_BLOCKS if name not in d))

    def with_fingerprint(self, fingerprint: str | None) -> "Scorecard":
        return replace(self, fingerprint=fingerprint)


def _plain(value: Any) -> Any:
    return dict(value) if isinstance(value, Mapping) else value


def require(card: Any) -> Scorecard:
    """``card`` itself when it is a ``Scorecard``; a TypeError otherwise (a renderer is handed the record, never
    metrics.json's dict: ``Scorecard.from_dict`` reads one)."""
    if not isinstance(card, Scorecard):
        raise TypeError(f"expected a Scorecard, got {type(card).__name__} (read metrics.json with "
                        "Scorecard.from_dict)")
    return card
