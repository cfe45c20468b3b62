"""The records of a run directory: ``ResultRow`` (item-results.jsonl), ``Manifest`` (manifest.json), ``RunMeta``
(run-meta.json).

A result row is what one item's attempt ended as: ``judged`` with the judge's ``Verdict``, or ``error`` with the
failing stage (``RowError``). The last row per question id is the item's result; only a judged row is ever marked
completed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Sequence

from lme.core import codec
from lme.core.codec import EXTRA, KEY_ORDER, Record
from lme.core.facts import SCHEMA_VERSION, SCHEMA_VERSIONS
from lme.core.records import (CallRecord, ItemTruncation, PipelineStage, Question, ReportError, RetrievalDetail,
                              Verdict, call_records, pipeline_stages)

JUDGED, ERROR = "judged", "error"


# --------------------------------------------------------------------------- a result row's parts


@dataclass(frozen=True)
class RowError(Record):
    """Why an item's attempt failed: the stage, a kind (``provider_errors``'s, ``target``, ``judge_input``,
    ``missing_hypothesis``), the message (at most 2000 characters) and the attempts the call took."""

    stage: str
    """``generate`` or ``judge``."""
    kind: str
    message: str
    attempts: int
    gone: bool = codec.field(default=False, omit=False)
    """A ``not_found`` that says the model is not served any more (410 Gone, or 404 ``model_not_found``:
    ``provider_errors.answered_gone``), not a wrong URL or a route a gateway lacks."""


def _stored(parse: Any) -> Any:
    """A reader of a stored stages, truncation or retrieval value: None when a row holds one this version cannot
    read (a target's own report, checked when it was made, not by the row's schema)."""
    def read(value: Any) -> Any:
        try:
            return parse(value)
        except ReportError:
            return None
    return read


@dataclass(frozen=True)
class RowTarget(Record):
    """The target that answered: its name, provider and model, what the harness shows of its pipeline (``stages``,
    ``truncation``: the target's own, typed) and its own ``debug`` details (kept, never read by the harness)."""

    name: str = ""
    provider: str = ""
    model: str = ""
    debug: Mapping[str, Any] = field(default_factory=dict)
    stages: tuple[PipelineStage, ...] | None = codec.field(default=None, decode=_stored(pipeline_stages))
    truncation: ItemTruncation | None = codec.field(default=None, decode=_stored(ItemTruncation.parse))


@dataclass(frozen=True)
class RowRetrieval:
    """The sessions the target ranked (real ids, best first), the item's evidence sessions (upstream's rule), and
    how the target used the ranking (``detail``: top_k, granularity, whether top_k covered every session)."""

    retrieved_session_ids: tuple[str, ...] | None
    gold_session_ids: tuple[str, ...] = ()
    detail: RetrievalDetail | None = codec.field(default=None, omit_if=lambda _: True)
    """Written as the block's own keys (``to_dict``)."""

    def to_dict(self) -> dict[str, Any]:
        """The ranking and the gold, with ``detail``'s keys in the same object (always: no row is an old one)."""
        return codec.to_dict(self) | (self.detail or RetrievalDetail()).to_dict()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RowRetrieval":
        """A row's retrieval block, ``detail`` read from its keys (None when they hold nothing)."""
        detail = _stored(RetrievalDetail.parse)({k: d.get(k) for k in codec.keys(RetrievalDetail)})
        return replace(codec.from_dict(cls, d), detail=None if detail == RetrievalDetail() else detail)


@dataclass(frozen=True)
class RowCost(Record):
    """Dollars of the item's calls (cache hits free); None where a price is unknown."""

    generation_usd: float | None
    judge_usd: float | None
    total_usd: float | None


# --------------------------------------------------------------------------- the row


@dataclass(frozen=True)
class ResultRow(Record):
    """One line of ``item-results.jsonl``: one item's attempt that reached an end."""

    question_id: str
    question_type: str
    status: str
    """``judged`` (``judgment`` set) or ``error`` (``error`` set; never marked completed)."""
    question: str = ""
    answer: str | int = ""
    abstention: bool = False
    """Upstream's rule: ``'_abs' in question_id``."""
    hypothesis: str | None = None
    """The text that was (to be) judged; None when generation failed."""
    judgment: Verdict | None = None
    latencyMs: float | None = 0.0
    """Generation wall time."""
    tokensIn: int | None = 0
    tokensOut: int | None = 0
    """Generation tokens (as the target reports them)."""
    target: RowTarget | None = None
    retrieval: RowRetrieval | None = None
    cost: RowCost | None = None
    calls: tuple[CallRecord, ...] = ()
    """One record per model call the target made (its JSON: ``Completion.to_dict()`` plus its ``role``)."""
    error: RowError | None = None
    finished_at: str = ""
    prompt_keys: tuple[str, ...] | None = codec.field(default=None, omit=None)
    """``ChatRequest.key()`` of each request the target sent (the requests are in the run's prompts.jsonl)."""
    code: str | None = codec.field(default=None, omit=None)
    """``CodeVersion.id`` of the code that made the row (the full record is in its invocation's run-meta entry);
    None: made before rows recorded it, or no file of the target's code could be fingerprinted."""
    schemaVersion: str = SCHEMA_VERSIONS["item-result"]
    extra: Mapping[str, Any] = codec.field(default_factory=dict, role=EXTRA)
    """Fields of a newer minor version this one does not know: kept, and written back."""
    __codec_order__ = ("schemaVersion", "question_id", "question_type", "question", "answer", "abstention", "status")
    """The keys a row has always begun with."""

    def __post_init__(self) -> None:
        if any(not isinstance(c, CallRecord) for c in self.calls):
            object.__setattr__(self, "calls", call_records(self.calls))

    @property
    def judged(self) -> bool:
        return self.status == JUDGED

    @property
    def label(self) -> bool | None:
        """The judge's label: True/False when judged, None for an error row."""
        if not self.judged or self.judgment is None:
            return None
        return self.judgment.label if isinstance(self.judgment.label, bool) else None

    @property
    def correct(self) -> bool:
        """Strict: only a judged row labelled correct; an error row is wrong."""
        return self.label is True

    @property
    def debug(self) -> Mapping[str, Any]:
        """The target's debug details ({} when there are none)."""
        return {} if self.target is None else self.target.debug

    @classmethod
    def for_question(cls, q: Question, **fields: Any) -> "ResultRow":
        return cls(question_id=q.question_id, question_type=q.question_type, question=q.question, answer=q.answer,
                   abstention=q.abstention, **fields)

    def with_(self, **changes: Any) -> "ResultRow":
        return replace(self, **changes)


def label_of(row: ResultRow | None) -> bool | None:
    """The label of an item's last row (None for an error row or no row)."""
    return None if row is None else row.label


# --------------------------------------------------------------------------- run-meta's blocks


class MetaBlock(Record):
    """A block of run-meta.json, written back as it was read: the keys present, in their order, and any key this
    version does not know (its ``extra`` and ``key_order`` fields, ``codec.EXTRA``/``KEY_ORDER``)."""

    def updated(self, **keys: Any) -> Any:
        """The block with these JSON keys set: one it lacked is written after the others, as in a dict."""
        return type(self).from_dict({**self.to_dict(), **keys})


def _kept() -> Any:
    """A block's keys this version does not know: kept, and written back."""
    return codec.field(default_factory=dict, role=EXTRA)


def _order() -> Any:
    """A block's key order as read: written back in it (not compared: blocks read in two orders are equal)."""
    return codec.field(default=(), compare=False, role=KEY_ORDER)


@dataclass(frozen=True)
class JudgeIdentity(MetaBlock):
    """The run's judge: ``provider``, ``model`` and ``official``, the first sense of "official": the configured
    judge is the official model (False as soon as one verdict was not official). Not: the run is comparable."""

    provider: str | None = None
    model: str | None = None
    official: bool | None = None
    extra: Mapping[str, Any] = _kept()
    key_order: tuple[str, ...] = _order()

    @property
    def official_judge(self) -> bool | None:
        return self.official if isinstance(self.official, bool) else None


@dataclass(frozen=True)
class DatasetInfo(MetaBlock):
    """The dataset file a run read: its path, sha256, items, size and mtime, release, item-fingerprint
    recognition and the sessions it repeats."""

    path: str | None = None
    sha256: str | None = None
    items: int | None = None
    file_bytes: int | None = None
    file_mtime_ns: int | None = None
    release: str | None = None
    recognition: Mapping[str, Any] | None = None
    duplicate_sessions: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = _kept()
    key_order: tuple[str, ...] = _order()


@dataclass(frozen=True)
class TargetInfo(MetaBlock):
    """The target that answered: its name, provider, model and options."""

    name: str | None = None
    provider: str | None = None
    model: str | None = None
    options: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = _kept()
    key_order: tuple[str, ...] = _order()


def _not_ended(invocation: "Invocation") -> bool:
    """An invocation made by this process and not ended yet: its end keys are not written (one read from the file
    keeps the keys it has, ``key_order``)."""
    return invocation.finished_at is None and not invocation.key_order


def _at_invocation_end() -> Any:
    return codec.field(default=None, omit_if=_not_ended)


def _if_set() -> Any:
    """A run-meta field written once it has a value: an end, an option given, the root meta of a sharded run."""
    return codec.field(default=None, omit=None)


@dataclass(frozen=True)
class Invocation(MetaBlock):
    """One start of the run (``run-meta.json``'s ``invocations``): when, what it planned and did, its calls,
    retries, cache and pacing figures and how it ended. Fields in the order a start writes them."""

    started_at: str | None = None
    pending_before: int | None = None
    planned_now: int | None = None
    endpoints: Mapping[str, Any] | None = None
    successor: str | None = _if_set()
    official_judge_gone: bool | None = _if_set()
    successor_only: bool | None = _if_set()
    max_cost_usd: float | None = _if_set()
    approved_usd: float | None = _if_set()
    """What the user approved for the run with ``--yes`` (``cost_gate``)."""
    code: Mapping[str, Any] | None = None
    """The code this invocation ran (``CodeVersion.to_dict``); None in invocations of older versions."""
    batch: Mapping[str, Any] | None = _if_set()
    finished_at: str | None = _if_set()
    status: str | None = _at_invocation_end()
    exit_status: int | None = _at_invocation_end()
    duration_seconds: float | None = _at_invocation_end()
    evaluated: int | None = _at_invocation_end()
    errors: int | None = _at_invocation_end()
    errors_by_kind: Mapping[str, int] | None = _at_invocation_end()
    calls: int | None = _at_invocation_end()
    cached_calls: int | None = _at_invocation_end()
    retries: int | None = _at_invocation_end()
    retries_by_kind: Mapping[str, int] | None = _at_invocation_end()
    retry_wait_s: float | None = _at_invocation_end()
    cache: Mapping[str, Any] | None = _at_invocation_end()
    pacing: tuple[Mapping[str, Any], ...] | None = _at_invocation_end()
    spent_usd: float | None = _if_set()
    """What the run had spent when a ``--max-cost`` invocation ended."""
    extra: Mapping[str, Any] = _kept()
    key_order: tuple[str, ...] = _order()

    @property
    def code_version(self) -> "CodeVersion | None":
        return CodeVersion.from_dict(self.code) if isinstance(self.code, Mapping) else None


@dataclass(frozen=True)
class FileChanges(Record):
    """The files that differ between two ``CodeVersion``s: changed (in both, other bytes), added, removed."""

    changed: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.changed or self.added or self.removed)

    def describe(self, most: int = 5) -> str:
        """``changed memsys.py; added helper.py`` (at most ``most`` names per kind, then how many more)."""
        def names(paths: tuple[str, ...]) -> str:
            shown = ", ".join(paths[:most])
            return shown + (f" and {len(paths) - most} more" if len(paths) > most else "")

        return "; ".join(f"{kind} {names(paths)}" for kind, paths in
                         (("changed", self.changed), ("added", self.added), ("removed", self.removed)) if paths)


@dataclass(frozen=True)
class CodeVersion(Record):
    """The code an invocation ran (``invocations[].code`` of run-meta.json): each file that makes the target's
    answers with its sha256, what was fingerprinted (``sources``) and ``id``, one digest of them all that each row
    the invocation wrote carries as ``code``. See ``lme.run.code_version`` for which files a target has."""

    id: str | None
    """The first 16 hex digits of the sha256 over the sorted (path, sha256) pairs; None when no file could be
    fingerprinted (then no row carries a ``code``, and no comparison calls the code the same)."""
    files: Mapping[str, str] = field(default_factory=dict)
    """Path (relative to the project when inside it, to the plugin for its built-in targets) -> sha256."""
    sources: tuple[str, ...] = ()
    """What was fingerprinted, one phrase each (``python file memsys.py``, ``folder memory_system/ (git)``)."""
    git: Mapping[str, Any] | None = None
    """For files in the project's git work tree: ``commit`` (HEAD) and ``uncommitted`` (those files that differ
    from it or are untracked); None outside git."""
    capped: bool = codec.field(default=False, omit=False)
    """A folder held more files than are fingerprinted (``code_version.MAX_FILES``): only the first were."""
    note: str | None = codec.field(default=None, omit_if=lambda version: not version.note)
    """Why nothing (or not everything) could be fingerprinted, with what to do."""

    @staticmethod
    def digest(files: Mapping[str, str]) -> str | None:
        """The sha256 over the sorted (path, sha256) pairs (``id`` is its first 16 hex digits; run-meta's
        ``target_source_sha256`` is all of it); None for no file."""
        if not files:
            return None
        return hashlib.sha256("".join(f"{p}\t{h}\n" for p, h in sorted(files.items())).encode("utf-8")).hexdigest()

    @property
    def sha256(self) -> str | None:
        return self.digest(self.files)

    def changes_to(self, other: "CodeVersion") -> FileChanges:
        a, b = self.files, other.files
        return FileChanges(changed=tuple(sorted(p for p in a if p in b and a[p] != b[p])),
                           added=tuple(sorted(p for p in b if p not in a)),
                           removed=tuple(sorted(p for p in a if p not in b)))


# --------------------------------------------------------------------------- manifest


@dataclass(frozen=True)
class ManifestItem(Record):
    question_id: str
    question_type: str


@dataclass(frozen=True)
class Manifest(Record):
    """``manifest.json``: the question ids and types a run covers, in dataset order (the strict denominator)."""

    items: tuple[ManifestItem, ...]
    n_total: int
    schemaVersion: str = SCHEMA_VERSIONS["manifest"]
    __codec_order__ = ("schemaVersion", "n_total")

    @classmethod
    def of(cls, questions: Iterable[tuple[str, str]]) -> "Manifest":
        items = tuple(ManifestItem(str(q), str(t)) for q, t in questions)
        return cls(items=items, n_total=len(items))

    @property
    def question_ids(self) -> list[str]:
        return [i.question_id for i in self.items]

    def first(self, n: int) -> "Manifest":
        """The first ``n`` items (all when there are fewer): the item set of a run started with ``--max n``."""
        return self if n >= self.n_total else Manifest(items=self.items[:n], n_total=min(n, len(self.items)),
                                                       schemaVersion=self.schemaVersion)

    def types(self) -> dict[str, str]:
        return {i.question_id: i.question_type for i in self.items}


# --------------------------------------------------------------------------- run-meta


@dataclass(frozen=True)
class RunMeta(Record):
    """``run-meta.json``: how a run was made (dataset, target, judge, settings, provenance, endpoints) and how it
    stands (status, error, counts, one ``invocations`` entry per start). The run's driver writes it atomically."""

    runId: str
    status: str
    """``running``, ``completed``, ``failed``, ``interrupted`` or ``paused``."""
    started_at: str
    variant: str
    dataset: DatasetInfo
    target: TargetInfo
    judge: JudgeIdentity
    finished_at: str | None = None
    duration_seconds: float | None = 0.0
    plugin_version: str | None = None
    project_git_commit: str | None = None
    error: str | None = None
    provenance: Mapping[str, Any] = field(default_factory=dict)
    """Plugin and project commits, package versions, prompt hashes (``provenance.describe``)."""
    endpoints: Mapping[str, str] = field(default_factory=dict)
    """Where each provider's calls went (the banner names a judge that is not at the official host)."""
    settings: Mapping[str, Any] = field(default_factory=dict)
    """``RunSettings.to_dict()``: a resume reads the run's own settings back."""
    shard: str | None = None
    invocations: tuple[Invocation, ...] = ()
    counts: Mapping[str, Any] | None = _if_set()
    limiter: Any = _if_set()
    pacing: tuple[Mapping[str, Any], ...] | None = _if_set()
    """The pacer's figures per budget key when the invocation ended (SPEC.md, Rate limits)."""
    exit_status: int | None = _if_set()
    retries: int | None = _if_set()
    shards: Mapping[str, str] | None = _if_set()
    """The root meta of a sharded run: each shard's status."""
    schemaVersion: str = SCHEMA_VERSIONS["run-meta"]
    extra: Mapping[str, Any] = codec.field(default_factory=dict, role=EXTRA)
    __codec_order__ = ("schemaVersion", "runId", "status", "started_at", "finished_at", "duration_seconds",
                       "variant", "dataset", "target", "judge")

    @property
    def judge_provider(self) -> str | None:
        return self.judge.provider

    @property
    def judge_model(self) -> str | None:
        return self.judge.model

    @property
    def dataset_sha256(self) -> str | None:
        return self.dataset.sha256

    @property
    def project(self) -> str | None:
        """The project the run was started in (its recorded settings)."""
        return self.settings.get("project")

    def with_(self, **changes: Any) -> "RunMeta":
        return replace(self, **changes)


def counts_of(manifest: Manifest, planned: Sequence[str], completed: set[str]) -> dict[str, int]:
    """run-meta's ``counts``: the run's items, those this writer plans, and how many of them are done."""
    return {"n_total": manifest.n_total, "planned": len(planned),
            "completed": sum(1 for q in planned if q in completed),
            "pending": sum(1 for q in planned if q not in completed)}


def item_set(manifest: Manifest | None, rows: Mapping[str, ResultRow],
             n_total: int | None = None) -> tuple[dict[str, str], int]:
    """The items the strict denominator covers: ``(types in manifest order, unattributed)``.

    With a manifest, the first ``n_total`` manifest items (all when ``n_total`` is None). Without one, the rows'
    own ids and types. When ``n_total`` exceeds what is known, the excess count is returned as ``unattributed``:
    items never run whose type is unknown (they count as wrong in the overall strict figure only).
    """
    if manifest is not None:
        known = [(i.question_id, i.question_type) for i in manifest.items]
    else:
        known = [(qid, row.question_type) for qid, row in rows.items()]
    if n_total is not None and n_total < 0:
        raise ValueError(f"n_total must be >= 0, got {n_total}")
    if n_total is not None and n_total < len(known):
        known = known[:n_total]
    types = dict(known)
    unattributed = max(0, (n_total or 0) - len(types)) if n_total is not None else 0
    return types, unattributed
