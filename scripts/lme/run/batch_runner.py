"""Run a stage through the providers' Batch APIs, then hand the results to the ordinary per-item path.

Collect, then replay: for the pending items this phase finds the calls a stage would make (the judge's; under
``--batch all`` also a single-call target's reader call), leaves out the ones the call cache or the verdict archive
already answers, submits the rest as batches (``batch_api``), polls, collects, and keeps every answer in a
``BatchLLM``. The run driver then runs its usual items through that LLM: ``complete(request)`` returns the batch's
Completion for ``request.key()`` (``pricing`` ``batch``), so rows, verdicts, prompt hashes and checkpoints come
from the same code as a synchronous run. Every step is in the run directory's ledger (``batch_ledger``) before the
next one starts: a resume from any process polls and collects the same batches, never creating them again.

What is resubmitted, what stops the run and what stays pending: ``references/SPEC.md``, "Batch APIs".
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from lme.models import batch_api
from lme.store import batch_ledger
from lme.core import fileio
from lme.targets import generation_driver
from lme.run import item_runner
from lme.run.batch_settings import BATCHABLE_TARGETS
from lme.core.errors import UserError
from lme.models.provider_errors import ProviderError
from lme.models.provider_routes import _POOL, endpoint_host
from lme.models.run_gateway import cacheable
from lme.core.records import ChatRequest, Completion, Question
from lme.models.request_bodies import request_body
from lme.run.settings import RunSettings
from lme.targets.targets import TargetError

RETRY_ROUNDS = 2
"""Resubmissions of a request that failed retryably or expired, before it becomes an error row."""


def generation_batchable(settings: RunSettings) -> bool:
    """The target makes one model call per item (``BATCHABLE_TARGETS``) on a provider with a Batch API."""
    return settings.target in BATCHABLE_TARGETS and settings.target_provider in batch_api.SUPPORTED


def batchable_roles(settings: RunSettings) -> tuple[str, ...]:
    """The roles a multi-call target declares batchable (``BATCHABLE_ROLES``: calls independent of each other and
    of the rest of the item, previewed exactly by ``prepare_requests_by_role``; memory-ref's writer)."""
    if settings.target in BATCHABLE_TARGETS:
        return ()
    try:
        module = generation_driver.load_target(settings.target)
    except UserError:
        return ()
    if not hasattr(module, "prepare_requests_by_role"):
        return ()
    return tuple(str(role) for role in getattr(module, "BATCHABLE_ROLES", ()))


def batched_stages(settings: RunSettings) -> tuple[str, ...]:
    """The stages this run sends through Batch APIs: ``judge``; under ``--batch all`` also ``generate`` (a
    single-call target) or the roles the target declares batchable (run first: the items' generation uses them)."""
    if settings.batch == "off":
        return ()
    if settings.batch == "all" and generation_batchable(settings):
        return ("generate", "judge")
    if settings.batch == "all":
        return (*batchable_roles(settings), "judge")
    return ("judge",)


# --------------------------------------------------------------------------- the LLM the items run through


class Deferred(TargetError):
    """A call to be batched (raised while planning; a TargetError so a target's driver passes it through)."""

    def __init__(self, request: ChatRequest) -> None:
        super().__init__("deferred to a batch")
        self.request = request


def _fresh_error(err: ProviderError) -> ProviderError:
    return ProviderError(err.kind, err.message, attempts=err.attempts, status=err.status)


class BatchLLM:
    """``records.LLM`` for a batched run: a request's batch answer (or final batch error) first, else the run's
    gateway (call cache, then a synchronous call), remembered so the replay makes no second call."""

    def __init__(self, gateway: Any) -> None:
        self.gateway = gateway
        self.stats = gateway.stats
        self.answers: dict[str, Completion | ProviderError] = {}
        self._lock = threading.Lock()

    def complete(self, request: ChatRequest) -> Completion:
        return self._complete(request, defer=False)

    def _complete(self, request: ChatRequest, *, defer: bool) -> Completion:
        key = request.key()
        with self._lock:
            got = self.answers.get(key)
        if isinstance(got, Completion):
            return got
        if isinstance(got, ProviderError):
            raise _fresh_error(got)
        if defer:
            gone = getattr(self.gateway, "gone", None)
            known_gone = gone(request) if gone is not None else None
            if known_gone is not None:  # the official judge is gone: never batched (a successor may stand in)
                raise known_gone
            cached = getattr(self.gateway, "cached", None)
            hit = cached(request) if cached is not None else None
            if hit is not None:  # a cached call is never batched
                return hit
            raise Deferred(request)
        try:
            completion = self.gateway.complete(request)
        except ProviderError as err:
            with self._lock:
                self.answers[key] = err
            raise
        with self._lock:
            self.answers[key] = completion
        return completion

    def complete_fresh(self, request: ChatRequest) -> Completion:
        return self.gateway.complete_fresh(request)

    def embed(self, provider: str, model: str, texts: Sequence[str]) -> list[list[float]]:
        return self.gateway.embed(provider, model, texts)

    def planning(self) -> "_Planning":
        return _Planning(self)


class _Planning:
    """The view a stage is planned through: a call not yet answered is raised as ``Deferred``."""

    def __init__(self, llm: BatchLLM) -> None:
        self._llm = llm

    def complete(self, request: ChatRequest) -> Completion:
        return self._llm._complete(request, defer=True)

    def embed(self, provider: str, model: str, texts: Sequence[str]) -> list[list[float]]:
        return self._llm.embed(provider, model, texts)


# --------------------------------------------------------------------------- planning


def _stage_calls(q: Question, settings: RunSettings, llm: BatchLLM, stage: str) -> list[ChatRequest]:
    """The calls ``stage`` still needs for ``q`` ([]: answered, cached, archived, or the item fails before)."""
    if stage not in ("generate", "judge"):  # a target's batchable role: its exact requests, from its preview
        return _role_calls(q, settings, llm, stage)
    gen_llm = llm.planning() if stage == "generate" else llm
    try:
        hyp = item_runner.generate(q, settings, gen_llm)
    except Deferred as deferred:
        return [deferred.request] if stage == "generate" else []
    except Exception:  # noqa: BLE001 - the replay writes this item's error row
        return []
    if stage != "judge":
        return []
    text = item_runner.judged_text(hyp, settings)
    if text is None:
        return []
    try:
        item_runner.judge(q, text, settings, llm.planning())
    except Deferred as deferred:
        return [deferred.request]
    except Exception:  # noqa: BLE001
        return []
    return []


def _role_calls(q: Question, settings: RunSettings, llm: BatchLLM, role: str) -> list[ChatRequest]:
    try:
        by_role = generation_driver.prepare_requests_by_role(
            q, settings.target_provider, settings.target_model, target=settings.target,
            options=dict(settings.target_options), cache_dir=settings.cache_dir) or {}
    except Exception:  # noqa: BLE001 - the replay runs the item and records what fails
        return []
    wanted = []
    for request in by_role.get(role, ()):
        if request.provider not in batch_api.SUPPORTED:
            continue  # no Batch API there: the item calls it synchronously
        try:
            llm.planning().complete(request)  # answered already (this run's batches, or the call cache)
        except Deferred:
            wanted.append(request)
    return wanted


@dataclass
class Outcome:
    """What the batch phase leaves for the replay."""

    llm: BatchLLM
    pending: set[str] = field(default_factory=set)
    """Question ids whose calls are not answered yet (a cancelled batch, an interrupt): no row this time."""
    stop: str | None = None
    """None, ``cancelled``, ``interrupted`` or ``batch_failed``."""
    message: str | None = None
    figures: dict[str, int] = field(default_factory=dict)
    """This invocation's batch figures for run-meta: requests submitted, results collected, failed lines."""
    replay: bool = True
    """False: no item is run this time (a Batch API call failed; what was collected is used by the resume)."""


@dataclass
class _Want:
    request: ChatRequest
    qids: list[str]
    stage: str
    sub: int = 0
    """The request's index within its item (a session's writer call)."""


class BatchPhase:
    def __init__(self, settings: RunSettings, gateway: Any, work: Path, run_id: str, *,
                 provider_settings: Any, should_stop: Callable[[], bool], say: Callable[[str], None]) -> None:
        self.settings = settings
        self.work = Path(work)
        self.run_id = run_id
        self.ledger = batch_ledger.Ledger(work)
        self.llm = BatchLLM(gateway)
        self.provider_settings = provider_settings
        self.should_stop = should_stop
        self.say = say
        self.cache = getattr(gateway, "cache", None)
        self._apis: dict[str, Any] = {}
        self._results: dict[str, dict[str, Any]] = {}
        self._requests: dict[str, ChatRequest] = {}
        self.cancelled_now: set[str] = set()
        self._planned_now: set[str] = set()
        """Chunks planned by this process: no create of theirs can predate this process, so none is looked for."""
        self.submitted = self.collected_ok = self.collected_failed = 0
        """This invocation's figures: requests submitted, results collected, failed lines."""
        self._preload()

    def _preload(self) -> None:
        """Every answer already collected in this run: within the run the ledger's results win over the call
        cache, so a crash between collect and rows still records the batch (and its price)."""
        for chunk in self.ledger:
            if chunk.collected and chunk.results_path and (self.work / chunk.results_path).is_file():
                keys = chunk.keys()
                for cid, got in self._parse(chunk, self.work / chunk.results_path).items():
                    if isinstance(got, Completion) and cid in keys:
                        self.llm.answers[keys[cid]] = got

    def api(self, provider: str) -> Any:
        if provider not in self._apis:
            self._apis[provider] = batch_api.batches_for(provider, self.provider_settings)
        return self._apis[provider]

    # ------------------------------------------------------------------ the phase

    def run(self, questions: Callable[[], Iterator[Question]]) -> Outcome:
        """``questions()``: a fresh iterator over the pending items (streamed: ``_m`` need not fit in memory)."""
        outcome = Outcome(self.llm)
        for stage in batched_stages(self.settings):
            wants = self._plan(questions(), stage)
            if self.should_stop():
                stop, message, pending_keys = "interrupted", "interrupted while planning batches", set()
            else:
                stop, message, pending_keys = self._settle(wants)
            outcome.pending |= {qid for key in pending_keys for qid in wants[key].qids}
            if stop is not None:
                outcome.stop, outcome.message = stop, message
                outcome.pending |= {qid for want in wants.values() for qid in want.qids
                                    if want.request.key() not in self.llm.answers}
                break
        outcome.figures = {"submitted_requests": self.submitted, "collected": self.collected_ok,
                           "failed_lines": self.collected_failed}
        return outcome

    def _plan(self, questions: Iterator[Question], stage: str) -> dict[str, _Want]:
        wants: dict[str, _Want] = {}
        width = self.settings.concurrency
        with cf.ThreadPoolExecutor(max_workers=width, thread_name_prefix="plan") as pool:
            while not self.should_stop():
                some = list(itertools.islice(questions, width * 4))
                if not some:
                    break
                calls = list(pool.map(lambda q: _stage_calls(q, self.settings, self.llm, stage), some))
                for q, requests in zip(some, calls):
                    for sub, request in enumerate(requests):
                        key = request.key()
                        want = wants.setdefault(key, _Want(request, [], stage, sub))  # identical calls: one id
                        want.qids.append(q.question_id)
                        self._requests[key] = request
        return wants

    def _settle(self, wants: dict[str, _Want]) -> tuple[str | None, str | None, set[str]]:
        """Answer every wanted key from the ledger or from new batches; returns (stop, message, pending keys)."""
        fallback: list[str] = []
        while True:
            to_submit: dict[str, int] = {}  # key -> attempt
            open_chunks: dict[str, batch_ledger.Chunk] = {}
            pending: set[str] = set()
            chunks_of = self.ledger.by_key()
            for key, want in wants.items():
                if key in self.llm.answers or key in fallback:
                    continue
                chunks = chunks_of.get(key, [])
                if not chunks:
                    to_submit[key] = 0
                    continue
                last = chunks[-1]
                if not last.collected:
                    open_chunks[last.name] = last
                    continue
                answer = self._answer(last, key)
                if isinstance(answer, Completion):
                    self.llm.answers[key] = answer
                    continue
                if answer.kind == "batch_cancelled" and last.name in self.cancelled_now:
                    pending.add(key)  # cancelled in this invocation: a clean stop; the next resume submits it
                    continue
                if answer.kind in ("batch_cancelled", "batch_failed") or (
                        (answer.retryable or answer.kind == "batch_expired" or _temperature(answer))
                        and len(chunks) <= RETRY_ROUNDS):
                    if self.settings.batch_fallback == "sync" and answer.kind not in ("batch_cancelled",
                                                                                      "batch_failed"):
                        fallback.append(key)  # the replay calls it synchronously (the gateway)
                    else:
                        to_submit[key] = len(chunks)
                    continue
                final = ProviderError(answer.kind, answer.message, attempts=len(chunks), status=answer.status)
                final.empty, final.finish_reason = answer.empty, answer.finish_reason  # a reader's "" (as sync)
                self.llm.answers[key] = final
            if pending and not open_chunks:
                return "cancelled", "a batch was cancelled: its unanswered items stay pending", pending
            if not to_submit and not open_chunks:
                return None, None, pending
            for chunk in self._plan_chunks(wants, to_submit):
                open_chunks[chunk.name] = chunk
            stop = self._drive(list(open_chunks.values()))
            if stop is not None:
                return stop[0], stop[1], pending

    # ------------------------------------------------------------------ chunks: plan, submit, poll, collect

    def _plan_chunks(self, wants: dict[str, _Want], attempts: dict[str, int]) -> list[batch_ledger.Chunk]:
        groups: dict[tuple[str, str, str], list[str]] = {}
        for key in attempts:
            want = wants[key]
            groups.setdefault((want.request.provider, want.request.model, want.stage), []).append(key)
        made = []
        for (provider, model, stage), keys in groups.items():
            max_n, max_bytes = batch_api.LIMITS[provider]
            lines: list[bytes] = []
            entries: list[dict[str, Any]] = []
            size = 0
            for key in keys:
                want = wants[key]
                cid = batch_ledger.custom_id(self.run_id, stage, want.qids[0], want.sub, attempts[key])
                line = _input_line(provider, cid, want.request)
                if entries and (len(entries) >= max_n or size + len(line) > max_bytes):
                    made.append(self._write_plan(provider, model, stage, entries, lines))
                    lines, entries, size = [], [], 0
                lines.append(line)
                size += len(line)
                entries.append({"custom_id": cid, "qid": want.qids[0], "sub": want.sub, "attempt": attempts[key],
                                "key": key, "allow_empty": want.request.allow_empty})
            if entries:
                made.append(self._write_plan(provider, model, stage, entries, lines))
        return made

    def _write_plan(self, provider: str, model: str, stage: str, entries: list[dict[str, Any]],
                    lines: list[bytes]) -> batch_ledger.Chunk:
        name = self.ledger.next_name(stage)
        folder = fileio.make_dirs(batch_ledger.batches_dir(self.work))
        path = folder / f"{name}.input.jsonl"
        fileio.write_atomic_bytes(path, b"".join(lines))
        self.ledger.append("planned", name, provider=provider, model=model, stage=stage, requests=entries,
                           input=str(path.relative_to(self.work)), input_sha256=fileio.sha256_file(path))
        self._planned_now.add(name)
        return self.ledger.chunks[name]

    def _metadata(self, chunk: batch_ledger.Chunk) -> dict[str, str]:
        """OpenAI metadata naming the chunk (run, shard directory, chunk): how recovery finds its batch."""
        tag = batch_ledger.run_tag(self.run_id)
        return {"lme_run": tag, "lme_chunk": f"{tag}-{self.work.name[:40]}-{chunk.name}"}

    def _submit(self, chunk: batch_ledger.Chunk) -> None:
        api = self.api(chunk.provider)
        if chunk.name not in self._planned_now:  # planned by a process that may have created it, then died
            found = api.find(self._metadata(chunk), chunk.planned_t - 600, self.ledger.known_batch_ids(),
                             len(chunk.requests))  # a create whose event a crash cut off: adopt, never create twice
            if found is not None:
                self.ledger.append("adopted", chunk.name, batch_id=found)
                return
        path = self.work / str(chunk.input_path)
        if chunk.provider == "anthropic":
            requests = [rec for _, rec in fileio.iter_jsonl(path)]
            batch_id = api.create(requests)
        else:
            if chunk.file_id is None:
                self.ledger.append("uploaded", chunk.name, file_id=api.upload(path))
            batch_id = api.create(chunk.file_id, self._metadata(chunk))
        self.ledger.append("submitted", chunk.name, batch_id=batch_id)
        self.submitted += len(chunk.requests)
        self.say(f"{chunk.stage} batch {batch_id}: {len(chunk.requests)} requests submitted to {chunk.provider}")

    def _drive(self, chunks: list[batch_ledger.Chunk]) -> tuple[str, str] | None:
        for chunk in chunks:
            if not chunk.batch_id:
                self._submit(chunk)
        waiting = [c for c in chunks if not c.collected]
        started, tick = time.monotonic(), 0
        base = float(self.settings.batch_poll_s)
        while waiting:
            if self.should_stop():
                return "interrupted", "interrupted while waiting for batches; resume to collect them"
            for chunk in list(waiting):
                remote = self.api(chunk.provider).retrieve(str(chunk.batch_id))
                counts = dict(remote.counts)
                if remote.status != chunk.status or counts != chunk.counts:
                    self.ledger.append("status", chunk.name, batch_id=chunk.batch_id, status=remote.status,
                                       counts=counts)
                    self.say(f"{chunk.stage} batch {chunk.batch_id} {remote.status} {_count_text(counts)}")
                if remote.status == "failed":  # the provider refused our input file: stop, keep the items pending
                    first = remote.errors[0] if remote.errors else "no reason given"
                    self.ledger.append("collected", chunk.name, batch_id=chunk.batch_id, status="failed",
                                       results=None, outcomes={r["custom_id"]: "batch_failed" for r in chunk.requests})
                    return "batch_failed", (f"batch {chunk.batch_id} ({chunk.name}) failed validation: {first}; "
                                            "its items stay pending (a resume submits them again)")
                if remote.ended:
                    if self._collect(chunk, remote):
                        waiting.remove(chunk)
                    else:  # an adopted batch that was not ours: submit the chunk after all
                        self._submit(chunk)
            if waiting:
                cap = base * (6 if time.monotonic() - started < 600 else 30)
                self._nap(min(base * (2 ** tick), cap))
                tick += 1
        return None

    def _nap(self, seconds: float) -> None:
        """Wait between polls, waking at once when the run is asked to stop (Ctrl-C, SIGTERM)."""
        until = time.monotonic() + seconds
        while not self.should_stop() and time.monotonic() < until:
            time.sleep(min(0.2, max(0.0, until - time.monotonic())))

    def _collect(self, chunk: batch_ledger.Chunk, remote: batch_api.Remote) -> bool:
        """Download, keep locally, record the outcomes (the commit point); False for an adopted batch whose
        custom_ids are not the chunk's (then abandoned: it is someone else's, and nothing of it is used)."""
        data = self.api(chunk.provider).results(remote)
        if chunk.adopted and not _same_requests(chunk, data):
            self.ledger.append("abandoned", chunk.name, batch_id=chunk.batch_id)
            return False
        folder = batch_ledger.batches_dir(self.work)
        path = folder / f"{chunk.name}.results.jsonl"
        fileio.write_atomic_bytes(path, data)
        parsed = self._parse(chunk, path)
        outcomes = {}
        for entry in chunk.requests:
            got = parsed.get(entry["custom_id"])
            if got is None:
                got = ProviderError("batch_cancelled" if remote.status in ("cancelled", "canceled") else
                                    "batch_expired", f"{chunk.provider} {chunk.model}: no result line in batch "
                                    f"{chunk.batch_id}", retryable=True)
            outcomes[entry["custom_id"]] = "ok" if isinstance(got, Completion) else got.kind
            if isinstance(got, ProviderError) and _temperature(got):
                _POOL.mark_rejects_temperature(chunk.model)
        if any(o == "batch_cancelled" for o in outcomes.values()):
            self.cancelled_now.add(chunk.name)
        self.ledger.append("collected", chunk.name, batch_id=chunk.batch_id, status=remote.status,
                           results=str(path.relative_to(self.work)), results_sha256=fileio.sha256_file(path),
                           outcomes=outcomes)
        keys = chunk.keys()
        for cid, got in parsed.items():
            if isinstance(got, Completion) and cid in keys:
                self.llm.answers[keys[cid]] = got
                request = self._requests.get(keys[cid])
                if self.cache is not None and request is not None and cacheable(request, got):
                    self.cache.put(request, got)  # a later run reads it as a (free) cache hit
        self.ledger.append("closed", chunk.name)
        self.collected_ok += sum(1 for o in outcomes.values() if o == "ok")
        self.collected_failed += sum(1 for o in outcomes.values() if o != "ok")
        return True

    def _parse(self, chunk: batch_ledger.Chunk, path: Path) -> dict[str, Any]:
        if chunk.name in self._results:
            return self._results[chunk.name]
        entries = {e["custom_id"]: e for e in chunk.requests}
        kind = "anthropic" if chunk.provider == "anthropic" else "openai"
        host = endpoint_host(chunk.provider, self.provider_settings)  # the batches went through the same route
        parsed: dict[str, Any] = {}
        for _, line in fileio.iter_jsonl(path):
            cid = str(line.get("custom_id"))
            if cid in entries:
                got = batch_api.parse_line(kind, line, provider=chunk.provider, model=chunk.model,
                                           allow_empty=bool(entries[cid].get("allow_empty")),
                                           batch_id=str(chunk.batch_id),
                                           request=self._requests.get(entries[cid]["key"]))
                parsed[cid] = dataclasses.replace(got, endpoint_host=host) if isinstance(got, Completion) else got
        self._results[chunk.name] = parsed
        return parsed

    def _answer(self, chunk: batch_ledger.Chunk, key: str) -> Any:
        path = None if chunk.results_path is None else self.work / chunk.results_path
        parsed = self._parse(chunk, path) if path is not None and path.is_file() else {}
        for entry in chunk.requests:
            if entry["key"] == key:
                got = parsed.get(entry["custom_id"])
                if got is not None:
                    return got
                kind = (chunk.outcomes or {}).get(entry["custom_id"], "batch_expired")
                return ProviderError(kind if kind != "ok" else "batch_expired",
                                     f"{chunk.provider} {chunk.model}: batch {chunk.batch_id} gave no usable line",
                                     retryable=True)
        raise KeyError(key)


def _same_requests(chunk: batch_ledger.Chunk, data: bytes) -> bool:
    """The results carry exactly the chunk's custom_ids (a batch that ended before running any request lists
    none: then it is judged by its size alone, as it was adopted)."""
    ids = set()
    for raw in data.splitlines():
        if raw.strip():
            try:
                ids.add(str(json.loads(raw).get("custom_id")))
            except ValueError:
                return False
    return not ids or ids == {r["custom_id"] for r in chunk.requests}


def _temperature(err: ProviderError) -> bool:
    return err.kind == "bad_request" and "temperature" in err.message.lower()


def _input_line(provider: str, cid: str, request: ChatRequest) -> bytes:
    if provider == "anthropic":
        body = request_body(request, "anthropic", temperature=not batch_api.rejects_temperature(request.model))
        line: dict[str, Any] = {"custom_id": cid, "params": body}
    else:
        line = {"custom_id": cid, "method": "POST", "url": batch_api.OPENAI_ENDPOINT,
                "body": request_body(request, "openai")}
    return fileio.json_line(line)


def _count_text(counts: dict[str, Any]) -> str:
    return " ".join(f"{k} {v}" for k, v in counts.items())


def run_phase(settings: RunSettings, questions: Callable[[], Iterator[Question]], gateway: Any, work: Path, run_id: str, *,
              should_stop: Callable[[], bool], say: Callable[[str], None]) -> Outcome:
    """The batch phase of one invocation over the pending ``questions`` (see the module docstring). The Batch API
    clients use the ``gateway``'s provider settings (keys, base URLs, timeouts), as its synchronous calls do."""
    phase = BatchPhase(settings, gateway, work, run_id, provider_settings=gateway.settings,
                       should_stop=should_stop, say=say)
    try:
        return phase.run(questions)
    except ProviderError as err:  # a Files/Batches call refused after retries (key, billing, quota): a clean stop
        return Outcome(phase.llm, stop="billing" if err.kind == "billing" else "batch_failed",
                       message=f"a Batch API call failed ({err.kind}): {err}; the items stay pending", replay=False)

