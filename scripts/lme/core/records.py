"""The typed records that cross each stage boundary.

One way through the data: dataset -> Question -> (target) Hypothesis -> (judge) Verdict -> result row -> scorecard.
Raw dataset JSON enters through ``Question.from_dict`` only; targets only ever see ``Question.public()``, which
carries no gold field (no answer, no evidence ids, no ``has_answer``) and hides real session ids behind aliases,
because upstream's evidence session ids contain the substring ``answer``.

The facts of the protocol (the six question types, the abstention rule, the official judge) are defined in
``facts`` and re-exported here.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping, Protocol, Sequence

from lme.core import codec
from lme.core.codec import KEY_ORDER, EXTRA, Record

from lme.core.facts import (  # noqa: F401  (re-exported: the protocol's facts beside the records)
    OFFICIAL_JUDGE_MODEL,
    OFFICIAL_JUDGE_PROVIDER,
    OFFICIAL_JUDGE_ROUTES,
    QUESTION_TYPES,
    SCHEMA_VERSION,
    is_abstention,
    is_official_judge,
)


def session_alias(index: int) -> str:
    """The id a target sees for the haystack session at ``index`` (0-based); real ids may leak gold."""
    return f"session_{index + 1:03d}"


# --------------------------------------------------------------------------- dataset side


@dataclass(frozen=True)
class Turn:
    role: str
    """``user`` or ``assistant``."""
    content: str
    has_answer: bool | None = None
    """Gold label: this turn holds evidence. Never shown to a target."""


@dataclass(frozen=True)
class Session:
    session_id: str
    """The real upstream id. Evidence ids contain ``answer``: never shown to a target."""
    date: str
    """``%Y/%m/%d (%a) %H:%M`` as in the dataset."""
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class PublicTurn:
    role: str
    content: str


@dataclass(frozen=True)
class PublicSession:
    session_id: str
    """An alias (``session_001`` ...), never the real id."""
    date: str
    turns: tuple[PublicTurn, ...]


@dataclass(frozen=True)
class PublicItem(Record):
    """What a target (memory system under test) receives: no gold, no question id, no question type."""

    question: str
    question_date: str
    sessions: tuple[PublicSession, ...]


@dataclass(frozen=True)
class Question:
    """One LongMemEval item, with its gold labels."""

    question_id: str
    question_type: str
    question: str
    answer: str | int
    question_date: str
    sessions: tuple[Session, ...]
    answer_session_ids: tuple[str, ...]

    @property
    def abstention(self) -> bool:
        return is_abstention(self.question_id)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> "Question":
        """Build from one upstream item (already schema-validated by ``dataset``). Does not mutate ``raw``."""
        sessions = tuple(
            Session(
                session_id=str(sid),
                date=str(date),
                turns=tuple(
                    Turn(role=t["role"], content=t["content"], has_answer=t.get("has_answer"))
                    for t in turns
                ),
            )
            for sid, date, turns in zip(
                raw["haystack_session_ids"], raw["haystack_dates"], raw["haystack_sessions"]
            )
        )
        return cls(
            question_id=str(raw["question_id"]),
            question_type=str(raw["question_type"]),
            question=str(raw["question"]),
            answer=raw["answer"],
            question_date=str(raw["question_date"]),
            sessions=sessions,
            answer_session_ids=tuple(str(s) for s in raw.get("answer_session_ids", ())),
        )

    def public(self) -> PublicItem:
        return PublicItem(
            question=self.question,
            question_date=self.question_date,
            sessions=tuple(
                PublicSession(
                    session_id=session_alias(i),
                    date=s.date,
                    turns=tuple(PublicTurn(role=t.role, content=t.content) for t in s.turns),
                )
                for i, s in enumerate(self.sessions)
            ),
        )

    def real_session_id(self, alias: str) -> str | None:
        """Map a target's alias back to the real session id (None for an unknown alias)."""
        for i, s in enumerate(self.sessions):
            if session_alias(i) == alias:
                return s.session_id
        return None

    def gold_session_ids(self) -> tuple[str, ...]:
        """Evidence sessions with upstream's retrieval semantics: id holds ``answer`` AND a user turn has_answer.

        Upstream renames an ``answer`` session with no has_answer user turn to ``noans``: it is not gold.
        """
        return tuple(
            s.session_id
            for s in self.sessions
            if "answer" in s.session_id and any(t.role == "user" and t.has_answer for t in s.turns)
        )


# --------------------------------------------------------------------------- model calls


@dataclass(frozen=True)
class ChatRequest:
    """One chat call, provider-neutral. ``messages`` are ``{"role", "content"}`` dicts without a system turn."""

    provider: str
    model: str
    messages: tuple[Mapping[str, str], ...]
    system: str | None = None
    max_tokens: int = 500
    temperature: float | None = 0.0
    """None: not sent (a reasoning model takes only its default temperature)."""
    n: int | None = None
    """Sent only when set (the official judge sends ``n=1``)."""
    allow_empty: bool = False
    """An empty or blank reply text is a reply, not an error (the judge: upstream labels it False). Not part of the
    call's key: it changes what we accept, not what the model is asked."""
    max_tokens_field: str = "max_tokens"
    """The body field ``max_tokens`` goes in: ``max_completion_tokens`` for OpenAI's reasoning models, which reject
    ``max_tokens``."""
    reasoning_effort: str | None = None
    """A reasoning model's ``reasoning_effort`` (``low``, ``medium``, ``high``); None: not sent (its default)."""
    judge: bool = False
    """A judge call: its call-cache entry is bound to the endpoint host (a verdict is only as official as the
    server that gave it), and a reply naming another model than asked is never cached. Not part of the key."""

    def canonical(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "provider": self.provider,
            "model": self.model,
            "messages": [dict(m) for m in self.messages],
            "system": self.system,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "n": self.n,
        }
        if self.max_tokens_field != "max_tokens":  # only when set: the keys of every older call stay as they were
            out["max_tokens_field"] = self.max_tokens_field
        if self.reasoning_effort is not None:
            out["reasoning_effort"] = self.reasoning_effort
        return out

    def key(self) -> str:
        """Content address of the call: every field that changes what the model is asked."""
        blob = json.dumps(self.canonical(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _sync(record: Any) -> bool:
    """A synchronous call: its record stays as it always was (no ``billing``, no ``batch_id``)."""
    return record.pricing == "sync"


@dataclass(frozen=True)
class Completion(Record):
    text: str
    tokensIn: int
    tokensOut: int
    latencyMs: float
    provider: str
    model: str
    """The model id as the API returned it (e.g. ``gpt-4o-2024-08-06``)."""
    request_id: str | None = None
    attempts: int = 1
    """1 + the number of retries this call took."""
    cached: bool = False
    stop_reason: str | None = None
    pricing: str = codec.field(default="sync", key="billing", omit_if=_sync)
    """``batch`` for a reply that came through a provider's Batch API (priced at ``prices.BATCH_DISCOUNT``). The
    file field is ``billing``; the code's name is ``pricing``, as ``billing`` also names the error kind of an
    account out of quota."""
    batch_id: str | None = codec.field(default=None, omit_if=_sync)
    endpoint_host: str | None = codec.field(default=None, omit=None)
    """The host (``host[:port]``) the call went to, parsed from the route's resolved base URL (no credentials)."""


def _int(value: Any, default: int = 0) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


_NO_EXTRA: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class CallRecord(Record):
    """One model call a target made, as a result row's ``calls`` keeps it: ``Completion.to_dict()`` and the
    ``role`` the target gave it (reader, writer, ...). ``to_dict`` writes it back exactly as it was read: the keys
    present, in their order, with any key this version does not know (``extra``)."""

    text: str | None = None
    tokensIn: int = 0
    tokensOut: int = 0
    latencyMs: float | None = None
    provider: str | None = None
    model: str | None = None
    request_id: str | None = None
    attempts: int = 1
    """1 + the number of retries this call took."""
    cached: bool = False
    stop_reason: str | None = None
    pricing: str = codec.field(default="sync", key="billing")
    """``batch``: priced as a call through a provider's Batch API (the file field ``billing``)."""
    batch_id: str | None = None
    endpoint_host: str | None = None
    role: str | None = None
    extra: Mapping[str, Any] = codec.field(default_factory=lambda: _NO_EXTRA, role=EXTRA)
    """Keys beyond the known ones (a target's own), kept and written back."""
    key_order: tuple[str, ...] = codec.field(default=(), role=KEY_ORDER)
    """The keys the call's JSON had, in order (what ``to_dict`` writes; empty: every known key)."""

    @property
    def retries(self) -> int:
        return max(0, self.attempts - 1)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "CallRecord":
        """A call as a target handed it back, or as a row keeps it. A target's call is not checked against a
        schema: its counts are read leniently here (a count that is not a number is 0, a billing that is not
        set is ``sync``), and the keys as they came are written back."""
        return codec.from_dict(cls, {**d, **_lenient_counts(d)})

    @classmethod
    def of(cls, call: "CallRecord | Mapping[str, Any]") -> "CallRecord":
        """``call`` as a record (a target may still hand back a ``Completion.to_dict()`` plus ``role``)."""
        return call if isinstance(call, CallRecord) else cls.from_dict(call)



def _lenient_counts(d: Mapping[str, Any]) -> dict[str, Any]:
    """The counts ``d`` holds, read leniently (only the keys it has: the others take their defaults)."""
    latency = d.get("latencyMs")
    read = {"tokensIn": _int(d.get("tokensIn")), "tokensOut": _int(d.get("tokensOut")),
            "latencyMs": float(latency) if isinstance(latency, (int, float)) and not isinstance(latency, bool)
            else None, "attempts": _int(d.get("attempts"), 1) or 1, "cached": bool(d.get("cached")),
            "billing": str(d.get("billing") or "sync")}
    return {k: v for k, v in read.items() if k in d}


def call_records(calls: Sequence["CallRecord | Mapping[str, Any]"]) -> tuple[CallRecord, ...]:
    return tuple(CallRecord.of(c) for c in calls)


class LLM(Protocol):
    """Anything that answers a ChatRequest: the provider layer, or the run's cached/limited gateway around it.

    It routes on ``request.provider``, so one LLM serves every role of a model stack.
    """

    def complete(self, request: ChatRequest) -> Completion: ...

    def embed(self, provider: str, model: str, texts: Sequence[str]) -> list[list[float]]: ...


class Limiter(Protocol):
    """Admission control around each attempt of a model call (the run's pacer: ``rate_pacer.Pacer``)."""

    def acquire(self, provider: str, *, model: str = "", tokens: Any = 0, extra_tokens: int = 0) -> Any:
        """Block until the attempt may go; return a ticket for ``release``. ``tokens``: its input tokens, or a
        function that counts them; ``extra_tokens``: what else the provider counts against the budget up front."""

    def release(self, provider: str, outcome: str, retry_after: float | None = None, *, ticket: Any = None,
                headers: Any = None, used_tokens: int | None = None) -> None:
        """Free the slot. ``outcome``: ``ok``, ``rate_limit``, ``server`` (5xx/529), ``refused`` (a call the provider
        will never take: larger than its tokens-per-minute budget), or ``error``; ``headers``: the
        reply's (rate-limit headers); ``used_tokens``: the input tokens the provider reported."""


class TargetEndpointScope(Protocol):
    """One item's view of the run's target endpoint (``lme.models.target_endpoint.ItemScope``)."""

    token: str
    openai_base_url: str
    """``http://127.0.0.1:PORT/t/<token>/v1``: an OpenAI client's ``base_url``."""
    anthropic_base_url: str
    """``http://127.0.0.1:PORT/t/<token>``: an Anthropic client's ``base_url``."""

    def env(self) -> dict[str, str]:
        """The environment variables of a process that serves only this item."""

    def bind(self, worker_token: str) -> None:
        """Attribute a long-lived worker's calls (its fixed token) to this item until the scope ends."""

    def calls(self) -> tuple["CallRecord", ...]:
        """The calls made under this item so far."""


@dataclass(frozen=True)
class TargetContext:
    """What a target gets besides the item: its model, the run's LLM gateway and its options."""

    provider: str
    model: str
    llm: LLM
    options: Mapping[str, Any] = field(default_factory=dict)
    """Target options from config ``targetOptions`` / ``--target-option k=v``."""
    cache_dir: str | None = None
    """A directory the target may use for on-disk caches (embeddings, extracted facts)."""
    endpoint: "TargetEndpointScope | None" = None
    """The run's target endpoint for this item (a user's own system only; None otherwise): the base URLs its own
    SDK clients call so that the run caches, paces, retries and prices those calls and puts them in the item's
    row (``lme.models.target_endpoint.ItemScope``)."""


# --------------------------------------------------------------------------- stage outputs


STAGE_STATUSES = ("ok", "skipped", "failed", "fallback")
"""A pipeline stage on one item: it ran as meant; it did not run (off, or nothing to do); it failed; it ran a
fallback instead of its own way."""


class ReportError(ValueError):
    """A target's ``stages``, ``truncation`` or ``retrieval`` is malformed: its one-line message names the field."""


def _count(value: Any, where: str, *, optional: bool = True) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ReportError(f"{where} must be a whole number >= 0, got {value!r}")
    return value


def _object(value: Any, where: str, known: Sequence[str]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ReportError(f"{where} must be an object, got {type(value).__name__}")
    unknown = sorted(str(k) for k in value if k not in known)
    if unknown:
        raise ReportError(f"{where} has unknown key(s) {', '.join(unknown)} (known: {', '.join(known)})")
    return value


def _text(value: Any, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ReportError(f"{where} must be a string, got {type(value).__name__}")


@dataclass(frozen=True)
class PipelineStage(Record):
    """One stage of a target's pipeline on one item: the report's stage lines and the run's pipeline health (a
    stage failed on every item is a broken stage) read these, never a target's ``debug``."""

    name: str
    status: str
    """One of ``STAGE_STATUSES``."""
    detail: str | None = codec.field(default=None, omit_if=lambda stage: not stage.detail)
    """What it did, or why not, in a few words (``0 facts from 40 sessions``)."""

    @classmethod
    def parse(cls, value: Any, where: str = "stages[]") -> "PipelineStage":
        """The stage ``value`` (a record, or its JSON); ReportError naming ``where`` when it is malformed."""
        if isinstance(value, PipelineStage):
            return value
        d = _object(value, where, codec.keys(cls))
        name, status = d.get("name"), d.get("status")
        if not isinstance(name, str) or not name.strip():
            raise ReportError(f"{where}.name must be a non-empty string, got {name!r}")
        if status not in STAGE_STATUSES:
            raise ReportError(f"{where}.status must be one of {', '.join(STAGE_STATUSES)}, got {status!r}")
        return cls(name=name.strip(), status=status, detail=_text(d.get("detail"), f"{where}.detail"))


def pipeline_stages(value: Any, where: str = "stages") -> tuple[PipelineStage, ...] | None:
    """A target's ``stages`` (None: it reported none); ReportError when it is not a list of stages."""
    if value is None:
        return None
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise ReportError(f"{where} must be a list of {{name, status, detail?}} objects")
    return tuple(PipelineStage.parse(v, f"{where}[{i}]") for i, v in enumerate(value))


@dataclass(frozen=True)
class ItemTruncation(Record):
    """The history the target's reader got, cut to fit its context window (oldest sessions dropped first)."""

    truncated: bool
    dropped_sessions: int = 0
    kept_sessions: int | None = None
    dropped_session_ids: tuple[str, ...] = ()
    """As the target named them (aliases); the run records the real ids."""
    tokens: int | None = None
    """The prompt's tokens after the cut."""
    counted_with: str | None = None
    """How they were counted (``tiktoken``, ``provider``, ``estimate``)."""
    retried_after_too_long: bool = False
    """The provider refused the first prompt as too long, and a shorter one was sent."""
    dropped_evidence: int | None = None
    """Set by the run, never by the target (only the run holds the gold): how many dropped sessions were evidence;
    None when it cannot say (no dropped ids)."""
    unknown_dropped: int = codec.field(default=0, omit=0)
    """Set by the run: dropped ids that named no session of the item."""

    @classmethod
    def parse(cls, value: Any, where: str = "truncation") -> "ItemTruncation | None":
        """``value`` (a record, its JSON, or None); ReportError naming ``where`` when it is malformed."""
        if value is None or isinstance(value, ItemTruncation):
            return value
        d = _object(value, where, codec.keys(cls))
        if not isinstance(d.get("truncated"), bool):
            raise ReportError(f"{where}.truncated must be true or false, got {d.get('truncated')!r}")
        ids = d.get("dropped_session_ids") or []
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise ReportError(f"{where}.dropped_session_ids must be a list of session id strings")
        counts = {k: _count(d.get(k), f"{where}.{k}") for k in ("kept_sessions", "tokens", "dropped_evidence")}
        counts.update({k: _count(d.get(k) or 0, f"{where}.{k}") for k in ("dropped_sessions", "unknown_dropped")})
        return cls(truncated=d["truncated"], dropped_session_ids=tuple(ids), **counts,
                   counted_with=_text(d.get("counted_with"), f"{where}.counted_with"),
                   retried_after_too_long=bool(d.get("retried_after_too_long")))


@dataclass(frozen=True)
class RetrievalDetail(Record):
    """How the target used its ranking (``retrieved_session_ids``): how many it read, at which granularity."""

    top_k: int | None = None
    """At most this many of the ranked sessions were read (the report marks them)."""
    granularity: str | None = None
    """What was indexed: ``session`` or ``turn`` (a turn ranks its session); the scorecard counts rows per value."""
    covers_all: bool | None = codec.field(default=None, key="top_k_covers_all")
    """Set by the run: ``top_k`` is at least the item's number of sessions (retrieval chose nothing)."""

    @classmethod
    def parse(cls, value: Any, where: str = "retrieval") -> "RetrievalDetail | None":
        if value is None or isinstance(value, RetrievalDetail):
            return value
        d = _object(value, where, codec.keys(cls))
        covers = d.get("top_k_covers_all")
        return cls(top_k=_count(d.get("top_k"), f"{where}.top_k"), granularity=_text(d.get("granularity"),
                   f"{where}.granularity"), covers_all=covers if isinstance(covers, bool) else None)


@dataclass(frozen=True)
class Hypothesis(Record):
    """A target's answer to one item, with its accounting and what the harness shows of its pipeline (``stages``,
    ``truncation``, ``retrieval``: typed, optional, any target may fill them; ``debug`` is the target's own)."""

    hypothesis: str
    tokensIn: int = 0
    tokensOut: int = 0
    latencyMs: float = 0.0
    calls: tuple[CallRecord, ...] = ()
    """One record per model call the target made (a target may pass ``Completion.to_dict()`` plus a ``role``:
    it is read into a ``CallRecord``)."""
    retrieved_session_ids: tuple[str, ...] | None = None
    """Ranked, as the target returned them (aliases until the driver maps them to real ids)."""
    debug: Mapping[str, Any] = field(default_factory=dict)
    """Target-specific details, kept in the row as they came; the harness reads none of them."""
    stages: tuple[PipelineStage, ...] | None = None
    """The pipeline's stages on this item, in order (a target may pass their JSON: it is read into records)."""
    truncation: ItemTruncation | None = None
    """The reader's history cut to fit (None: the target does not say)."""
    retrieval: RetrievalDetail | None = None
    """How the ranking was used (None: the target does not say)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "calls", call_records(self.calls))
        object.__setattr__(self, "stages", pipeline_stages(self.stages))
        object.__setattr__(self, "truncation", ItemTruncation.parse(self.truncation))
        object.__setattr__(self, "retrieval", RetrievalDetail.parse(self.retrieval))


@dataclass(frozen=True)
class Verdict(Record):
    """The judge's label for one hypothesis."""

    label: bool
    raw: str | None
    """The judge's reply, verbatim; None for an archived verdict whose source published only its label (an
    upstream eval-results file)."""
    provider: str
    model: str
    """The model id the API returned (or the offline judge's name)."""
    requested_model: str
    official: bool
    """What the judge's rule said when the verdict was made (upstream's prompt, sent to openai gpt-4o-2024-08-06
    with upstream's settings at an official host). Older versions wrote True at any host: read a row's through
    ``verdict_sources.classify`` (the scorecard's rule), never alone."""
    prompt_sha256: str | None = None
    template_sha256: str | None = None
    """sha256 of the upstream ``evaluate_qa.py`` the prompt came from."""
    tokensIn: int = 0
    tokensOut: int = 0
    latencyMs: float = 0.0
    attempts: int = 1
    cached: bool = False
    source: str = "call"
    """``call`` (a model call), ``cache`` (the call cache) or ``archive`` (an imported official verdict)."""
    verdicts: tuple[Mapping[str, Any], ...] | None = codec.field(default=None, omit=None)
    """``--judge-repeat K``: all K verdicts in call order (the first is the label); None without repeats."""
    stability: Mapping[str, Any] | None = codec.field(default=None, omit=None)
    """``--judge-repeat K``: ``{n, yes, no, flaky}`` over ``verdicts``."""
    pricing: str = codec.field(default="sync", key="billing", omit="sync")
    """``batch``: the judge call went through a provider's Batch API (``batch_id``), at batch prices (the file
    field ``billing``)."""
    batch_id: str | None = codec.field(default=None, omit=None)
    endpoint_host: str | None = codec.field(default=None, omit=None)
    """Where the verdict was made: the judge endpoint's host (``host[:port]``, parsed; for an archived verdict the
    host its line records). None: not recorded (the offline judge; rows of older versions)."""
    request_shape: Mapping[str, Any] | None = codec.field(default=None, omit=None)
    """The call's settings (``judge_shapes``): ``{family: upstream, max_tokens: 10, temperature: 0, n: 1}``, or a
    reasoning model's ``{family: reasoning, max_completion_tokens, reasoning_effort}``."""
    successor: bool = codec.field(default=False, omit=False)
    """Judged by the run's named successor (``--successor``) because the official judge is gone: never official."""
    origin: Mapping[str, Any] | None = codec.field(default=None, omit=None)
    """An archived verdict's origin (``verdict_archive``): ``{kind: made, by}`` (this project's judge made it) or
    ``{kind: imported, file, file_sha256, format, label_only?}`` (its author's claim); None for a call's."""
    conflict: Mapping[str, Any] | None = codec.field(default=None, omit=None)
    """The archive holds official verdicts of both labels for this prompt: ``{yes, no, rule}`` (the label is the
    rule's); None otherwise."""
