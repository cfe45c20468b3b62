"""The records of a run directory: ``ResultRow`` (item-results.jsonl), ``Manifest`` (manifest.json), ``RunMeta``
(run-meta.json). Frozen; ``to_dict`` is the JSON form the schemas in ``references/schemas`` check, ``from_dict``
reads it back (also rows and metas written by older versions: fields they lack take their defaults, fields this
version does not know are kept in ``extra`` and written back).

A result row is what one item's attempt ended as: ``judged`` with the judge's ``Verdict``, or ``error`` with the
failing stage (``RowError``). The last row per question id is the item's result; only a judged row is ever marked
completed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Iterator, Mapping, Sequence

from lme.core.facts import SCHEMA_VERSION, SCHEMA_VERSIONS, is_abstention
from lme.core.records import (CallRecord, ItemTruncation, PipelineStage, Question, ReportError, RetrievalDetail,
                              Verdict, call_records, pipeline_stages)

JUDGED, ERROR = "judged", "error"
RUN_STATUSES = ("running", "completed", "failed", "interrupted", "paused")


def _opt_float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _opt_int(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


# --------------------------------------------------------------------------- a result row's parts


@dataclass(frozen=True)
class RowError:
    """Why an item's attempt failed: the stage, a kind (``providers.KINDS``, ``target``, ``judge_input``,
    ``missing_hypothesis``), the message (at most 2000 characters) and the attempts the call took."""

    stage: str
    """``generate`` or ``judge``."""
    kind: str
    message: str
    attempts: int
    gone: bool = False
    """A ``not_found`` that says the model is not served any more (410 Gone, or 404 ``model_not_found``:
    ``provider_errors.answered_gone``), not a wrong URL or a route a gateway lacks."""

    def to_dict(self) -> dict[str, Any]:
        d = {"stage": self.stage, "kind": self.kind, "message": self.message, "attempts": self.attempts}
        if self.gone:
            d["gone"] = True
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RowError":
        return cls(stage=str(d.get("stage", "")), kind=str(d.get("kind", "unknown")),
                   message=str(d.get("message", "")), attempts=int(d.get("attempts") or 0),
                   gone=d.get("gone") is True)


@dataclass(frozen=True)
class RowTarget:
    """The target that answered: its name, provider and model, what the harness shows of its pipeline (``stages``,
    ``truncation``: the target's own, typed) and its own ``debug`` details (kept, never read by the harness)."""

    name: str
    provider: str
    model: str
    debug: Mapping[str, Any] = field(default_factory=dict)
    stages: tuple[PipelineStage, ...] | None = None
    truncation: ItemTruncation | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "provider": self.provider, "model": self.model, "debug": dict(self.debug),
                "stages": None if self.stages is None else [s.to_dict() for s in self.stages],
                "truncation": None if self.truncation is None else self.truncation.to_dict()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RowTarget":
        """A row's target block, in today's shape (an older row's is brought up to it by ``migrations``)."""
        debug = d.get("debug") if isinstance(d.get("debug"), Mapping) else {}
        stages = _stored(pipeline_stages, d.get("stages"))
        truncation = _stored(ItemTruncation.parse, d.get("truncation"))
        return cls(name=str(d.get("name", "")), provider=str(d.get("provider", "")), model=str(d.get("model", "")),
                   debug=debug, stages=stages, truncation=truncation)


def _stored(parse: Any, value: Any) -> Any:
    """A stored stages, truncation or retrieval value; None when a row holds one this version cannot read."""
    try:
        return parse(value)
    except ReportError:
        return None


@dataclass(frozen=True)
class RowRetrieval:
    """The sessions the target ranked (real ids, best first), the item's evidence sessions (upstream's rule), and
    how the target used the ranking (``detail``: top_k, granularity, whether top_k covered every session)."""

    retrieved_session_ids: tuple[str, ...] | None
    gold_session_ids: tuple[str, ...] = ()
    detail: RetrievalDetail | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {"retrieved_session_ids": None if self.retrieved_session_ids is None
               else list(self.retrieved_session_ids), "gold_session_ids": list(self.gold_session_ids)}
        return out | (self.detail or RetrievalDetail()).to_dict()  # its keys always: this row is not an old one

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RowRetrieval":
        """A row's retrieval block, in today's shape (an older row's is brought up to it by ``migrations``)."""
        ranked = d.get("retrieved_session_ids")
        detail = _stored(RetrievalDetail.parse, {k: d.get(k) for k in ("top_k", "granularity", "top_k_covers_all")})
        detail = None if detail == RetrievalDetail() else detail
        return cls(retrieved_session_ids=None if ranked is None else tuple(str(s) for s in ranked),
                   gold_session_ids=tuple(str(s) for s in d.get("gold_session_ids") or ()), detail=detail)


@dataclass(frozen=True)
class RowCost:
    """Dollars of the item's calls (cache hits free); None where a price is unknown."""

    generation_usd: float | None
    judge_usd: float | None
    total_usd: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"generation_usd": self.generation_usd, "judge_usd": self.judge_usd, "total_usd": self.total_usd}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RowCost":
        return cls(generation_usd=_opt_float(d.get("generation_usd")), judge_usd=_opt_float(d.get("judge_usd")),
                   total_usd=_opt_float(d.get("total_usd")))


# --------------------------------------------------------------------------- the row


_ROW_KEYS = ("schemaVersion", "question_id", "question_type", "question", "answer", "abstention", "status",
             "hypothesis", "judgment", "latencyMs", "tokensIn", "tokensOut", "target", "retrieval", "cost", "calls",
             "error", "finished_at", "prompt_keys", "code")


@dataclass(frozen=True)
class ResultRow:
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
    prompt_keys: tuple[str, ...] | None = None
    """``ChatRequest.key()`` of each request the target sent (the requests are in the run's prompts.jsonl)."""
    code: str | None = None
    """``CodeVersion.id`` of the code that made the row (the full record is in its invocation's run-meta entry);
    None: made before rows recorded it, or no file of the target's code could be fingerprinted."""
    schemaVersion: str = SCHEMA_VERSIONS["item-result"]
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Fields of a newer minor version this one does not know: kept, and written back."""

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
        """A row for ``q``: its identifying fields from the Question, the rest given."""
        return cls(question_id=q.question_id, question_type=q.question_type, question=q.question, answer=q.answer,
                   abstention=q.abstention, **fields)

    def with_(self, **changes: Any) -> "ResultRow":
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "schemaVersion": self.schemaVersion,
            "question_id": self.question_id,
            "question_type": self.question_type,
            "question": self.question,
            "answer": self.answer,
            "abstention": self.abstention,
            "status": self.status,
            "hypothesis": self.hypothesis,
            "judgment": None if self.judgment is None else self.judgment.to_dict(),
            "latencyMs": self.latencyMs,
            "tokensIn": self.tokensIn,
            "tokensOut": self.tokensOut,
            "target": None if self.target is None else self.target.to_dict(),
            "retrieval": None if self.retrieval is None else self.retrieval.to_dict(),
            "cost": None if self.cost is None else self.cost.to_dict(),
            "calls": [c.to_dict() for c in self.calls],
            "error": None if self.error is None else self.error.to_dict(),
            "finished_at": self.finished_at,
        }
        if self.prompt_keys is not None:
            d["prompt_keys"] = list(self.prompt_keys)
        if self.code is not None:
            d["code"] = self.code
        d.update(self.extra)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ResultRow":
        """From a row's JSON form (schema-checked by the reader)."""
        qid = str(d["question_id"])
        judgment, error, target = d.get("judgment"), d.get("error"), d.get("target")
        retrieval, cost, keys = d.get("retrieval"), d.get("cost"), d.get("prompt_keys")
        return cls(
            question_id=qid,
            question_type=str(d.get("question_type", "")),
            status=str(d.get("status", "")),
            question=str(d.get("question", "")),
            answer=d.get("answer", ""),
            abstention=bool(d["abstention"]) if isinstance(d.get("abstention"), bool) else is_abstention(qid),
            hypothesis=d.get("hypothesis"),
            judgment=Verdict.from_dict(judgment) if isinstance(judgment, Mapping) else None,
            latencyMs=_opt_float(d.get("latencyMs")),
            tokensIn=_opt_int(d.get("tokensIn")),
            tokensOut=_opt_int(d.get("tokensOut")),
            target=RowTarget.from_dict(target) if isinstance(target, Mapping) else None,
            retrieval=RowRetrieval.from_dict(retrieval) if isinstance(retrieval, Mapping) else None,
            cost=RowCost.from_dict(cost) if isinstance(cost, Mapping) else None,
            calls=tuple(CallRecord.from_dict(c) for c in d.get("calls") or () if isinstance(c, Mapping)),
            error=RowError.from_dict(error) if isinstance(error, Mapping) else None,
            finished_at=str(d.get("finished_at") or ""),
            prompt_keys=None if keys is None else tuple(str(k) for k in keys),
            code=d["code"] if isinstance(d.get("code"), str) else None,
            schemaVersion=str(d.get("schemaVersion", SCHEMA_VERSION)),
            extra={k: v for k, v in d.items() if k not in _ROW_KEYS},
        )


def label_of(row: ResultRow | None) -> bool | None:
    """The label of an item's last row (None for an error row or no row)."""
    return None if row is None else row.label


# --------------------------------------------------------------------------- run-meta's blocks


class MetaBlock(Mapping[str, Any]):
    """A typed block of run-meta.json that still reads as its JSON object (``block.get("model")``, ``{**block}``)
    for the code written against the dict form. ``to_dict`` writes it back as it was read: the keys present, in
    their order, and any key this version does not know (``extra``). Subclasses are frozen dataclasses whose
    fields are named as the JSON keys, followed by ``extra`` and ``key_order``."""

    _FIELDS: tuple[str, ...] = ()
    """The JSON keys the block knows; each is the attribute of that name, or of ``_ATTRIBUTE[key]`` where the name
    is a Mapping method's (``items``)."""
    _ATTRIBUTE: Mapping[str, str] = {}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Any:
        if isinstance(d, cls):
            return d
        d = d if isinstance(d, Mapping) else {}
        known = {cls._ATTRIBUTE.get(k, k): d[k] for k in cls._FIELDS if k in d}
        return cls(**known, extra={k: v for k, v in d.items() if k not in cls._FIELDS},
                   key_order=tuple(d))

    def to_dict(self) -> dict[str, Any]:
        extra: Mapping[str, Any] = getattr(self, "extra")
        out: dict[str, Any] = {}
        for key in getattr(self, "key_order") or self._FIELDS:
            if key in extra:
                out[key] = extra[key]
            elif key in self._FIELDS:
                out[key] = getattr(self, self._ATTRIBUTE.get(key, key))
        out.update({k: v for k, v in extra.items() if k not in out})
        return out

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_dict())

    def __len__(self) -> int:
        return len(self.to_dict())


@dataclass(frozen=True, eq=False)
class JudgeIdentity(MetaBlock):
    """The run's judge: ``provider``, ``model`` and ``official``, the first sense of "official": the configured
    judge is the official model (False as soon as one verdict was not official). Not: the run is comparable."""

    provider: str | None = None
    model: str | None = None
    official: bool | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    key_order: tuple[str, ...] = ()
    _FIELDS = ("provider", "model", "official")

    @property
    def official_judge(self) -> bool | None:
        return self.official if isinstance(self.official, bool) else None


@dataclass(frozen=True, eq=False)
class DatasetInfo(MetaBlock):
    """The dataset file a run read: its path, sha256, items, size and mtime, release, item-fingerprint
    recognition and the sessions it repeats."""

    path: str | None = None
    sha256: str | None = None
    n_items: int | None = None
    """JSON ``items``."""
    file_bytes: int | None = None
    file_mtime_ns: int | None = None
    release: str | None = None
    recognition: Mapping[str, Any] | None = None
    duplicate_sessions: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    key_order: tuple[str, ...] = ()
    _FIELDS = ("path", "sha256", "items", "file_bytes", "file_mtime_ns", "release", "recognition",
               "duplicate_sessions")
    _ATTRIBUTE = {"items": "n_items"}


@dataclass(frozen=True, eq=False)
class TargetInfo(MetaBlock):
    """The target that answered: its name, provider, model and options."""

    name: str | None = None
    provider: str | None = None
    model: str | None = None
    options: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    key_order: tuple[str, ...] = ()
    _FIELDS = ("name", "provider", "model", "options")


@dataclass(frozen=True, eq=False)
class Invocation(MetaBlock):
    """One start of the run (``run-meta.json``'s ``invocations``): when, what it planned and did, its calls,
    retries, cache and pacing figures and how it ended."""

    started_at: str | None = None
    finished_at: str | None = None
    status: str | None = None
    exit_status: int | None = None
    duration_seconds: float | None = None
    pending_before: int | None = None
    planned_now: int | None = None
    evaluated: int | None = None
    errors: int | None = None
    calls: int | None = None
    cached_calls: int | None = None
    retries: int | None = None
    endpoints: Mapping[str, Any] | None = None
    code: Mapping[str, Any] | None = None
    """The code this invocation ran (``CodeVersion.to_dict``); None in invocations of older versions."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    key_order: tuple[str, ...] = ()
    _FIELDS = ("started_at", "finished_at", "status", "exit_status", "duration_seconds", "pending_before",
               "planned_now", "evaluated", "errors", "calls", "cached_calls", "retries", "endpoints", "code")

    @property
    def code_version(self) -> "CodeVersion | None":
        return CodeVersion.from_dict(self.code) if isinstance(self.code, Mapping) else None


@dataclass(frozen=True)
class FileChanges:
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

    def to_dict(self) -> dict[str, Any]:
        return {"changed": list(self.changed), "added": list(self.added), "removed": list(self.removed)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "FileChanges":
        return cls(*(tuple(str(p) for p in d.get(k) or ()) for k in ("changed", "added", "removed")))


@dataclass(frozen=True)
class CodeVersion:
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
    capped: bool = False
    """A folder held more files than are fingerprinted (``code_version.MAX_FILES``): only the first were."""
    note: str | None = None
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
        """``digest`` of this version's files."""
        return self.digest(self.files)

    def changes_to(self, other: "CodeVersion") -> FileChanges:
        """The files that differ from this version to ``other``."""
        a, b = self.files, other.files
        return FileChanges(changed=tuple(sorted(p for p in a if p in b and a[p] != b[p])),
                           added=tuple(sorted(p for p in b if p not in a)),
                           removed=tuple(sorted(p for p in a if p not in b)))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "files": dict(self.files), "sources": list(self.sources),
                               "git": None if self.git is None else dict(self.git)}
        if self.capped:
            out["capped"] = True
        if self.note:
            out["note"] = self.note
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "CodeVersion":
        files = d.get("files") if isinstance(d.get("files"), Mapping) else {}
        git = d.get("git")
        return cls(id=d["id"] if isinstance(d.get("id"), str) else None,
                   files={str(k): str(v) for k, v in files.items()},
                   sources=tuple(str(s) for s in d.get("sources") or ()),
                   git=dict(git) if isinstance(git, Mapping) else None, capped=bool(d.get("capped")),
                   note=d["note"] if isinstance(d.get("note"), str) else None)


# --------------------------------------------------------------------------- manifest


@dataclass(frozen=True)
class ManifestItem:
    question_id: str
    question_type: str


@dataclass(frozen=True)
class Manifest:
    """``manifest.json``: the question ids and types a run covers, in dataset order (the strict denominator)."""

    items: tuple[ManifestItem, ...]
    n_total: int
    schemaVersion: str = SCHEMA_VERSIONS["manifest"]

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

    def to_dict(self) -> dict[str, Any]:
        return {"schemaVersion": self.schemaVersion, "n_total": self.n_total,
                "items": [{"question_id": i.question_id, "question_type": i.question_type} for i in self.items]}

    def item_dicts(self) -> list[dict[str, str]]:
        return self.to_dict()["items"]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Manifest":
        items = tuple(ManifestItem(str(i["question_id"]), str(i["question_type"])) for i in d.get("items", []))
        return cls(items=items, n_total=int(d.get("n_total", len(items))),
                   schemaVersion=str(d.get("schemaVersion", SCHEMA_VERSION)))


# --------------------------------------------------------------------------- run-meta


_META_KEYS = ("schemaVersion", "runId", "status", "started_at", "finished_at", "duration_seconds", "variant",
              "dataset", "target", "judge", "plugin_version", "project_git_commit", "error", "provenance",
              "endpoints", "settings", "shard", "invocations", "counts", "limiter", "pacing", "exit_status", "retries",
              "shards")
_META_OPTIONAL = ("counts", "limiter", "pacing", "exit_status", "retries", "shards")
"""Written once the run has an end (or, ``shards``, by the root meta of a sharded run)."""


@dataclass(frozen=True)
class RunMeta:
    """``run-meta.json``: how a run was made (dataset, target, judge, settings, provenance, endpoints) and how it
    stands (status, error, counts, one ``invocations`` entry per start). The run's driver writes it atomically."""

    runId: str
    status: str
    """``running``, ``completed``, ``failed``, ``interrupted`` or ``paused``."""
    started_at: str
    variant: str
    dataset: DatasetInfo
    """``path``, ``sha256``, ``items``, the file's size and mtime, ``release`` and ``recognition``."""
    target: TargetInfo
    """``name``, ``provider``, ``model``, ``options``."""
    judge: JudgeIdentity
    """``provider``, ``model``, ``official`` (False as soon as one verdict was not official)."""
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
    counts: Mapping[str, Any] | None = None
    limiter: Any = None
    pacing: tuple[Mapping[str, Any], ...] | None = None
    """The pacer's figures per budget key when the invocation ended (SPEC.md, Rate limits)."""
    exit_status: int | None = None
    retries: int | None = None
    shards: Mapping[str, str] | None = None
    """The root meta of a sharded run: each shard's status."""
    schemaVersion: str = SCHEMA_VERSIONS["run-meta"]
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """The blocks as records (a caller may pass their JSON form)."""
        for name, kind in (("dataset", DatasetInfo), ("target", TargetInfo), ("judge", JudgeIdentity)):
            value = getattr(self, name)
            if not isinstance(value, kind):
                object.__setattr__(self, name, kind.from_dict(value))
        if any(not isinstance(i, Invocation) for i in self.invocations):
            object.__setattr__(self, "invocations", tuple(Invocation.from_dict(i) for i in self.invocations))

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

    def to_dict(self) -> dict[str, Any]:
        d = {
            "schemaVersion": self.schemaVersion,
            "runId": self.runId,
            "status": self.status,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "duration_seconds": self.duration_seconds,
            "variant": self.variant,
            "dataset": self.dataset.to_dict(),
            "target": self.target.to_dict(),
            "judge": self.judge.to_dict(),
            "plugin_version": self.plugin_version,
            "project_git_commit": self.project_git_commit,
            "error": self.error,
            "provenance": dict(self.provenance),
            "endpoints": dict(self.endpoints),
            "settings": dict(self.settings),
            "shard": self.shard,
            "invocations": [i.to_dict() for i in self.invocations],
        }
        for key in _META_OPTIONAL:
            value = getattr(self, key)
            if value is not None:
                d[key] = dict(value) if isinstance(value, Mapping) else \
                    [dict(v) for v in value] if isinstance(value, tuple) else value
        d.update(self.extra)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RunMeta":
        known = {k: d[k] for k in _META_KEYS if k in d}
        known["invocations"] = tuple(known.get("invocations") or ())
        if known.get("pacing") is not None:
            known["pacing"] = tuple(known["pacing"])
        for key in ("provenance", "endpoints", "settings"):
            known[key] = known.get(key) or {}
        return cls(**known, extra={k: v for k, v in d.items() if k not in _META_KEYS})


def counts_of(manifest: Manifest, planned: Sequence[str], completed: set[str]) -> dict[str, int]:
    """run-meta's ``counts``: the run's items, those this writer plans, and how many of them are done."""
    return {"n_total": manifest.n_total, "planned": len(planned),
            "completed": sum(1 for q in planned if q in completed),
            "pending": sum(1 for q in planned if q not in completed)}


def item_set(
    manifest_items: Iterable[Mapping[str, Any]] | None,
    rows: Mapping[str, ResultRow],
    n_total: int | None = None,
) -> tuple[dict[str, str], int]:
    """The items the strict denominator covers: ``(types in manifest order, unattributed)``.

    With a manifest, the first ``n_total`` manifest items (all when ``n_total`` is None). Without one, the rows'
    own ids and types. When ``n_total`` exceeds what is known, the excess count is returned as ``unattributed``:
    items never run whose type is unknown (they count as wrong in the overall strict figure only).
    """
    if manifest_items is not None:
        known = [(str(i["question_id"]), str(i["question_type"])) for i in manifest_items]
    else:
        known = [(qid, row.question_type) for qid, row in rows.items()]
    if n_total is not None and n_total < 0:
        raise ValueError(f"n_total must be >= 0, got {n_total}")
    if n_total is not None and n_total < len(known):
        known = known[:n_total]
    types = dict(known)
    unattributed = max(0, (n_total or 0) - len(types)) if n_total is not None else 0
    return types, unattributed
