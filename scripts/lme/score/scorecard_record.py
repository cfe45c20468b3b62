"""The scorecard as a record: what ``scoring.build_scorecard`` makes and every renderer and the loop read.

Every block is a record whose JSON form ``lme.core.codec`` derives from its fields: ``Scorecard.to_dict`` is
``metrics.json`` exactly (the keys in the order they have always been written, so the file stays byte-identical);
``Scorecard.from_dict`` reads one back (also a metrics.json written by an older version: blocks it lacks take their
defaults and are not written back, keys this version does not know are kept in ``extra`` and written back).

"Official" has three senses, named apart here: ``official_judge`` (the configured judge is the official model, the
``judge.official`` flag of run-meta), ``official_verdicts`` (every verdict was made by it, live or from the verdict
archive) and ``comparable`` (no comparability note at all: judge, dataset, coverage, status, errors). Only the last
says whether the figures stand beside published LongMemEval ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from lme.core import codec, migrations
from lme.core.codec import Record
from lme.core.errors import UserError
from lme.core.facts import SCHEMA_VERSION, SCHEMA_VERSIONS
from lme.core.run_records import FileChanges, JudgeIdentity
from lme.score import metrics
from lme.score.metrics import Figures, TaskAveraged
from lme.score.loop_rows import LoopRows
from lme.score.pipeline_health import PipelineHealth

Json = Mapping[str, Any]


# --------------------------------------------------------------------------- the figures


@dataclass(frozen=True)
class GoldEntry(Record):
    """An item of the known-gold-error registry as the scorecard lists it (``excluded``/``listed_not_excluded``)."""

    question_id: str
    issues: tuple[int, ...]
    status: str | None


@dataclass(frozen=True)
class RegistryIdentity(Record):
    """Which gold-error registry a figure used (``gold_registry.identity``)."""

    sha256: str
    items: int


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


@dataclass(frozen=True)
class GoldExclusion(Record):
    """The second figure: the same run without the items whose gold was reported wrong upstream."""

    excluded: tuple[GoldEntry, ...] = ()
    listed_not_excluded: tuple[GoldEntry, ...] = ()
    """Items in the registry with another status (counted in both figures)."""
    n_total: int = 0
    correct: int = 0
    judged: int = 0
    overall: Figures = Figures()
    task_averaged: TaskAveraged = TaskAveraged()
    abstention: Figures = Figures()
    registry: RegistryIdentity | None = codec.field(default=None, omit=None)
    """None before it was kept."""
    registry_change: RegistryChange | None = codec.field(default=None, omit=None)

    def since(self, previous: "GoldExclusion") -> "GoldExclusion":
        """This figure, noting that the registry changed since ``previous`` (the run's metrics.json before
        rescoring) when ``previous`` recorded another registry."""
        before, now = previous.registry, self.registry
        if before is None or now is None or before.sha256 == now.sha256:
            return replace(self, registry_change=None)
        return replace(self, registry_change=RegistryChange(
            before.items, now.items, previous.overall.accuracy_strict, self.overall.accuracy_strict))


# --------------------------------------------------------------------------- identity of what was scored


@dataclass(frozen=True)
class DatasetRef(Record):
    """The dataset file as every report names it."""

    sha256: str | None = None
    known_official: str | None = None
    path: str | None = None
    release: str | None = None
    recognition: Json | None = None
    duplicate_sessions: int = 0
    name: str = ""
    line: str = ""
    __codec_order__ = ("sha256", "path")


@dataclass(frozen=True)
class HypothesesRef(Record):
    """The hypotheses file a run was judged from, as recorded, and its sha256."""

    file: str | None
    sha256: str | None


@dataclass(frozen=True)
class TargetRef(Record):
    """The target that answered; a hypotheses run also names its file."""

    name: str | None = None
    provider: str | None = None
    model: str | None = None
    hypotheses: HypothesesRef | None = codec.field(default=None, omit=None)


# --------------------------------------------------------------------------- usage, cost, retrieval


@dataclass(frozen=True)
class Cost(Record):
    """What every row the run wrote cost (earlier attempts included: ``prices.spend``, the sums ``run_status``
    shows), the memory system's part (generation) apart from the judge's; a part is None when a row's is unknown
    (never counted as 0), and the known sums are beside it."""

    rows: int = 0
    rows_unknown_cost: int = 0
    total_usd: float | None = None
    known_total_usd: float = 0.0
    known_generation_usd: float = 0.0
    known_judge_usd: float = 0.0
    generation_usd: float | None = 0.0
    judge_usd: float | None = 0.0
    rows_unknown_generation: int = 0
    rows_unknown_judge: int = 0


@dataclass(frozen=True)
class Latency(Record):
    """Percentiles of one stage's call latencies (ms); None when no call was timed."""

    n: int = 0
    p50: float | None = None
    p95: float | None = None
    max: float | None = None


@dataclass(frozen=True)
class StageLatency(Record):
    generation: Latency = Latency()
    judge: Latency = Latency()


@dataclass(frozen=True)
class TokenCount(Record):
    tokens_in: int = codec.field(default=0, key="in")
    tokens_out: int = codec.field(default=0, key="out")


@dataclass(frozen=True)
class Tokens(Record):
    generation: TokenCount = TokenCount()
    judge: TokenCount = TokenCount()


@dataclass(frozen=True)
class CacheHits(Record):
    generation_calls: int = 0
    generation_calls_cached: int = 0
    judge_cached: int = 0
    judge_archived: int = 0
    """Verdicts taken from the verdict archive (no call): not the same as cached."""


@dataclass(frozen=True)
class Retries(Record):
    generation: int = 0
    judge: int = 0


@dataclass(frozen=True)
class Usage(Record):
    """Tokens, latency percentiles, cache hits, retries and error rows by kind and by stage."""

    tokens: Tokens = Tokens()
    latency_ms: StageLatency = StageLatency()
    cache: CacheHits = CacheHits()
    retries: Retries = Retries()
    errors_by_kind: Mapping[str, int] = field(default_factory=dict)
    errors_by_stage: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class BatchStage(Record):
    batch_calls: int = 0
    batches: int = 0
    batch_usd: float | None = None
    sync_calls: int = 0


@dataclass(frozen=True)
class Batches(Record):
    """Which stages ran through Batch APIs (the scorecard holds None when no call was batched)."""

    generation: BatchStage = BatchStage()
    judge: BatchStage = BatchStage()

    def stages(self) -> tuple[tuple[str, BatchStage], ...]:
        return (("generation", self.generation), ("judge", self.judge))


@dataclass(frozen=True)
class RetrievalScope:
    """One row of the retrieval table: ``overall`` or a question type, its item count and its metric means."""

    name: str
    n: int
    means: Mapping[str, float]

    def mean(self, metric: str, k: int) -> float | None:
        """``recall_any``, ``recall_all`` or ``ndcg_any`` at ``k`` (None when not measured)."""
        return self.means.get(f"{metric}@{k}")


@dataclass(frozen=True)
class Retrieval(Record):
    """Session-level retrieval metrics at ``ks`` (``overall``/``per_type``: metric name -> mean; per type also
    ``n``)."""

    ks: tuple[int, ...] = ()
    items_with_retrieval: int = 0
    scored: int = 0
    skipped_abstention: int = 0
    skipped_no_gold: int = 0
    overall: Mapping[str, float] = field(default_factory=dict)
    per_type: Mapping[str, Json] = field(default_factory=dict)
    level: str | None = codec.field(default="session", omit=None)
    granularity: Mapping[str, int] = field(default_factory=dict)
    top_k_covers_all: int = 0
    rankings_with_repeated_ids: int = 0
    __codec_order__ = ("ks", "level", "granularity", "items_with_retrieval", "scored", "skipped_abstention",
                       "skipped_no_gold", "top_k_covers_all", "rankings_with_repeated_ids")

    def scopes(self) -> list[RetrievalScope]:
        """``overall`` (over the scored items), then each type in its order."""
        return [RetrievalScope("overall", self.scored, self.overall)] + [
            RetrievalScope(t, int(m.get("n") or 0), m) for t, m in self.per_type.items()]


@dataclass(frozen=True)
class Truncation(Record):
    """How often the reader's history was cut to fit the context window, and how often that lost evidence."""

    items_reporting: int = 0
    truncated: int = 0
    lost_evidence: int = 0
    lost_evidence_unknown: int = 0
    retried_after_too_long: int = 0


@dataclass(frozen=True)
class JudgeStability(Record):
    """Labels whose judge prompt got both yes and no."""

    repeated_items: int = 0
    unstable_in_run: int = 0
    flaky_in_registry: int = 0
    unstable_ids: tuple[str, ...] = ()
    archive_conflicts: int = 0
    """Labels scored from archived official verdicts of both labels (``verdict_archive``'s rule)."""
    __codec_order__ = ("repeated_items", "unstable_in_run", "flaky_in_registry", "archive_conflicts")


@dataclass(frozen=True)
class JudgeAgreement(Record):
    """The latest agreement measured for a non-official judge with the official verdicts, without its per-item
    lists (``judge_agreement.compact``)."""

    candidate: str | None = None
    candidate_provider: str | None = None
    candidate_model: str | None = None
    request_shape: Json | None = None
    verdict_set_sha256: str | None = None
    n: int | None = None
    agreement: float | None = None
    kappa: float | None = None
    kappa_ci95: tuple[float, float] | None = None
    measured_at: str | None = None
    source: str | None = None
    flips: int = 0


@dataclass(frozen=True)
class EmptyHypotheses(Record):
    """Answers that are the empty string (judged as upstream does) and the reader calls' finish reasons."""

    n: int = 0
    judged: int = 0
    finish_reasons: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Successor(Record):
    """A successor judge that made some of the verdicts, with its calibration (None: uncalibrated)."""

    judge: str
    verdicts: int
    request_shape: Json | None = None
    calibration: Json | None = None


@dataclass(frozen=True)
class VerdictSources(Record):
    """metrics.json's ``verdicts`` (``judge_provenance.summary`` makes it): the four counts, the endpoint hosts,
    why verdicts are not official, each invocation's judge endpoint, the successors."""

    official_live: int = 0
    official_archived: int = 0
    successor: int = 0
    other: int = 0
    endpoints: Mapping[str, int] = field(default_factory=dict)
    without_recorded_endpoint: int = 0
    not_official_reasons: Mapping[str, int] = field(default_factory=dict)
    prompt_templates: tuple[str, ...] = ()
    invocation_endpoints: tuple[str, ...] = ()
    origins: Json = field(default_factory=dict)
    """Where the official verdicts come from: ``made_here`` (live or archived, by host), ``imported`` (per file:
    its author's claim), ``conflicts`` (``judge_provenance``); empty in a metrics.json of an older version."""
    successors: tuple[Successor, ...] = ()

    def counts(self) -> dict[str, int]:
        return {"official_live": self.official_live, "official_archived": self.official_archived,
                "successor": self.successor, "other": self.other}

    def any_verdict(self) -> bool:
        """Some verdict is counted (an offline-judged run has none)."""
        return any(self.counts().values())

    def official(self) -> bool | None:
        """Every counted verdict is the official judge's; None when none is counted."""
        official, others = self.official_live + self.official_archived, self.successor + self.other
        return None if official + others == 0 else others == 0


# --------------------------------------------------------------------------- the estimate under the official judge


@dataclass(frozen=True)
class EstimatedFigure(Record):
    """One figure of ``OfficialEstimate``: an estimate, strict and judged-only, each with its 95% interval; all None
    and a ``reason`` when there is none. Per type also how many items a calibrated judge labelled (``corrected``)
    and whose rates corrected them (``rates``: ``type``, the type's own, or ``pooled``, the whole calibration's)."""

    accuracy: float | None = None
    ci95: tuple[float, float] | None = None
    accuracy_judged: float | None = None
    ci95_judged: tuple[float, float] | None = None
    reason: str | None = None
    corrected: int | None = codec.field(default=None, omit=None)
    rates: str | None = codec.field(default=None, omit=None)


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


@dataclass(frozen=True)
class SourceEstimate(Record):
    """The overall strict estimate under one hypothesis source's own rates (None: unusable, ``reason``)."""

    source: str
    n: int
    accuracy: float | None
    reason: str | None = None


@dataclass(frozen=True)
class SourceSpread(Record):
    """The estimate's spread across the calibration's hypothesis sources (systems): the overall strict figure under
    each source's own rates, and their min and max; ``too_few``: sources with fewer than the minimum of official yes
    or no verdicts, left out."""

    sources: tuple[SourceEstimate, ...]
    min: float | None
    max: float | None
    too_few: int


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
        return {**self.overall.to_dict(), **{k: v for k, v in codec.to_dict(self).items() if k != "overall"}}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "OfficialEstimate":
        overall = {k: d[k] for k in ("accuracy", "ci95", "accuracy_judged", "ci95_judged", "reason") if k in d}
        return codec.from_dict(cls, {**d, "overall": overall})


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


@dataclass(frozen=True)
class CodeVersions(Record):
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
        return {**codec.to_dict(self), "mixed": self.mixed}


def _later(name: str) -> Any:
    """A block after ``cost``: a metrics.json of an older version may lack it, and is written back without it."""
    return codec.field(default=None, omit_if=lambda card: name in card.absent)


@dataclass(frozen=True)
class Scorecard(Record):
    """A run's figures (``metrics.json``, its keys in the order of the fields), at full precision (round only for
    display). A key a metrics.json lacks takes its default (a file of an older version, a hand-made card)."""

    schema_version: str = codec.field(default=SCHEMA_VERSIONS["metrics"], key="schemaVersion")
    run_id: str = ""
    variant: str | None = None
    status: str | None = None
    judge: JudgeIdentity = field(default_factory=JudgeIdentity)
    dataset: DatasetRef = DatasetRef()
    target: TargetRef = TargetRef()
    n_total: int = 0
    judged: int = 0
    correct: int = 0
    """The STRICT correct count (the loop's termination rule reads it)."""
    coverage: float = 0.0
    unattributed: int = 0
    overall: Figures = Figures()
    task_averaged: TaskAveraged = TaskAveraged()
    abstention: Figures = Figures()
    per_type: Mapping[str, Figures] = field(default_factory=dict)
    errors: int = 0
    not_run: int = 0
    rows_outside_item_set: int = 0
    excluding_gold_errors: GoldExclusion = GoldExclusion()
    cost: Cost = Cost()
    batches: Batches | None = _later("batches")
    usage: Usage = codec.field(default=Usage(), omit_if=lambda card: "usage" in card.absent)
    latency: StageLatency = codec.field(default=StageLatency(), omit_if=lambda card: "latency" in card.absent)
    retrieval: Retrieval | None = _later("retrieval")
    truncation: Truncation | None = _later("truncation")
    pipeline_health: PipelineHealth | None = _later("pipeline_health")
    loop_rows: LoopRows | None = _later("loop_rows")
    judge_stability: JudgeStability | None = _later("judge_stability")
    judge_agreement: JudgeAgreement | None = _later("judge_agreement")
    verdicts: VerdictSources | None = _later("verdicts")
    """Where the verdicts came from; None when the card does not record it."""
    empty_hypotheses: EmptyHypotheses | None = _later("empty_hypotheses")
    official_estimate: OfficialEstimate | None = _later("official_estimate")
    """The accuracy the official judge would have given, estimated from a calibrated judge's labels (never
    official); None when no label came from a non-official judge (every verdict official, or judged offline)."""
    code_versions: CodeVersions | None = _later("code_versions")
    """None when the run recorded none (made before rows carried their code)."""
    comparability_notes: tuple[str, ...] = ()
    """Every reason the figures cannot stand beside published LongMemEval figures; empty = comparable."""
    fingerprint: str | None = codec.field(default=None, omit=None)
    """sha256 of what scoring read (``score_fingerprint``); None when not computed."""
    extra: Json = codec.field(default_factory=dict, role=codec.EXTRA)
    """Keys of a metrics.json this version does not know, written back as they were."""
    absent: frozenset[str] = codec.field(default=frozenset(), omit_if=lambda card: True)
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
        return None if self.verdicts is None else self.verdicts.official()

    def types_present(self) -> list[tuple[str, Figures]]:
        """The per-type blocks of the types with items, in their order."""
        return [(t, b) for t, b in self.per_type.items() if b.n]

    # ----------------------------------------------------------------- metrics.json

    def to_dict(self) -> dict[str, Any]:
        """metrics.json as it has always been written (the key order included: ``comparable`` before the notes)."""
        out: dict[str, Any] = {}
        for key, value in codec.to_dict(self).items():
            if key == "comparability_notes":
                out["comparable"] = self.comparable
            out[key] = value
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Scorecard":
        """A scorecard from metrics.json's form (an older file's brought up to today's shape first:
        ``migrations``)."""
        d = migrations.upgrade("metrics", d)
        read = {"schemaVersion": SCHEMA_VERSION, **{k: v for k, v in d.items() if k not in ("comparable", "absent")}}
        try:
            card = codec.from_dict(cls, read)
        except (TypeError, AttributeError, ValueError) as err:  # a block of another shape: edited by hand
            raise UserError(f"metrics.json of run {d.get('run_id')!r} is not in the scorecard's shape ({err})",
                            fix="re-run the scorecard for this run") from None
        return replace(card, absent=frozenset(name for name in _LATER_BLOCKS if name not in d))

    def with_fingerprint(self, fingerprint: str | None) -> "Scorecard":
        return replace(self, fingerprint=fingerprint)


_LATER_BLOCKS = ("batches", "usage", "latency", "retrieval", "truncation", "pipeline_health", "loop_rows",
                 "judge_stability", "judge_agreement", "verdicts", "empty_hypotheses", "official_estimate",
                 "code_versions")
"""The blocks after ``cost``, in metrics.json's order; a metrics.json of an older version may lack some."""


def require(card: Any) -> Scorecard:
    """``card`` itself when it is a ``Scorecard``; a TypeError otherwise (a renderer is handed the record, never
    metrics.json's dict: ``Scorecard.from_dict`` reads one)."""
    if not isinstance(card, Scorecard):
        raise TypeError(f"expected a Scorecard, got {type(card).__name__} (read metrics.json with "
                        "Scorecard.from_dict)")
    return card
