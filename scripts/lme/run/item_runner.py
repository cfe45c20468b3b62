"""One item through the pipeline: Question -> Hypothesis (target) -> Verdict (judge) -> ResultRow.

Nothing here writes files: the run's single writer does. A failure at either stage becomes an error row (stage, kind,
message, attempts) that is never marked completed, so a resume re-runs the item.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from typing import Any, Sequence

from lme.core.clock import utc_now_precise
from lme.targets import generation_driver
from lme.judge import official
from lme.models import providers
from lme.models.provider_errors import answered_gone
from lme.judge import verdict_archive
from lme.core.errors import UserError
from lme.core.schemas import NewerVersionError
from lme.core.facts import HYPOTHESES_TARGET, is_offline
from lme.judge import offline_judge
from lme.models.prices import priced_row
from lme.core.records import (LLM, CallRecord, ChatRequest, Completion, Hypothesis, Question, TargetEndpointScope,
                              Verdict)
from lme.core.run_records import ERROR, JUDGED, ResultRow, RowError, RowRetrieval, RowTarget
from lme.run.settings import RunSettings

BILLING = "billing"


class RecordingLLM:
    """An ``records.LLM`` that notes every chat request it forwards (in call order; thread-safe)."""

    def __init__(self, llm: Any) -> None:
        self._llm = llm
        self._lock = threading.Lock()
        self.requests: list[ChatRequest] = []

    def complete(self, request: ChatRequest) -> Completion:
        with self._lock:
            self.requests.append(request)
        return self._llm.complete(request)

    def embed(self, provider: str, model: str, texts: Sequence[str]) -> list[list[float]]:
        return self._llm.embed(provider, model, texts)

    def keys(self) -> list[str]:
        """The requests' content addresses, first occurrence order, each once."""
        with self._lock:
            return list(dict.fromkeys(r.key() for r in self.requests))


def _target_block(settings: RunSettings, hyp: Hypothesis | None) -> RowTarget:
    return RowTarget(name=settings.target, provider=settings.target_provider, model=settings.target_model,
                     debug={} if hyp is None else dict(hyp.debug), stages=None if hyp is None else hyp.stages,
                     truncation=None if hyp is None else hyp.truncation)


def _failure(stage: str, kind: str, message: str, attempts: int = 1, *, gone: bool = False) -> RowError:
    """Why the item failed at ``stage`` (``generate`` or ``judge``), its message cut to the row's 2000 characters;
    ``gone``: a provider's answer that the model is not served any more."""
    return RowError(stage=stage, kind=kind, message=message[:2000], attempts=int(attempts), gone=gone)


def _error_row(q: Question, settings: RunSettings, failure: RowError, hyp: Hypothesis | None = None,
               hypothesis: str | None = None, calls: Sequence[CallRecord] = ()) -> ResultRow:
    """``hypothesis``: the text that was (to be) judged, when it differs from the target's raw output; ``calls``:
    the calls a failed generation made through the target endpoint (``hyp`` holds them once there is one)."""
    row = ResultRow.for_question(
        q,
        status=ERROR,
        hypothesis=hypothesis if hypothesis is not None else (None if hyp is None else hyp.hypothesis),
        judgment=None,
        latencyMs=0.0 if hyp is None else float(hyp.latencyMs),
        tokensIn=sum(c.tokensIn for c in calls) if hyp is None else int(hyp.tokensIn),
        tokensOut=sum(c.tokensOut for c in calls) if hyp is None else int(hyp.tokensOut),
        target=_target_block(settings, hyp),
        retrieval=None,
        cost=None,
        calls=tuple(calls) if hyp is None else tuple(hyp.calls),
        error=failure,
        finished_at=utc_now_precise(),
    )
    return row.with_(cost=priced_row(row))


def generate(q: Question, settings: RunSettings, llm: LLM | None,
             endpoint: TargetEndpointScope | None = None) -> Hypothesis:
    return generation_driver.run_target(
        q,
        settings.target_provider,
        settings.target_model,
        target=settings.target,
        llm=llm,
        options=dict(settings.target_options),
        cache_dir=settings.cache_dir,
        endpoint=endpoint,
    )


def _scope(endpoint: Any) -> Any:
    """The item's scope of the run's target endpoint (a context manager; ``None`` inside when the run has none)."""
    return contextlib.nullcontext() if endpoint is None else endpoint.item_scope()


def with_endpoint_calls(hyp: Hypothesis, calls: Sequence[CallRecord]) -> Hypothesis:
    """``hyp`` with the calls its system made through the target endpoint (``calls``): they join its calls, and the
    row's tokens are the calls' (what the provider reported). Tokens the system reported on its own (it cannot
    know which of its calls the endpoint saw) stay in ``debug.reported_tokens``."""
    if not calls:
        return hyp
    tokens_in, tokens_out = sum(c.tokensIn for c in calls), sum(c.tokensOut for c in calls)
    debug = dict(hyp.debug)
    if hyp.calls:  # a target's own calls through ctx.llm, counted in its tokens already
        tokens_in, tokens_out = tokens_in + hyp.tokensIn, tokens_out + hyp.tokensOut
    elif hyp.tokensIn or hyp.tokensOut:
        debug["reported_tokens"] = {"in": hyp.tokensIn, "out": hyp.tokensOut}
    return dataclasses.replace(hyp, calls=(*hyp.calls, *calls), tokensIn=tokens_in, tokensOut=tokens_out,
                               debug=debug)


def judged_text(hyp: Hypothesis, settings: RunSettings) -> str | None:
    """The text the judge reads (None: the target gave none). Upstream strips the reader's output, then judges it,
    even when empty; a file's hypothesis is judged as written, as upstream judges a file."""
    if not isinstance(hyp.hypothesis, str):
        return None
    return hyp.hypothesis if settings.target == HYPOTHESES_TARGET else hyp.hypothesis.strip()


def judge(q: Question, hypothesis: str, settings: RunSettings, llm: LLM, run_id: str | None = None) -> Verdict:
    """The run's judge on ``hypothesis``: an archived official verdict, else a call (an official verdict it makes
    goes into the project's archive, ``by`` the run ``run_id``; without one, as when a batch is planned, it is
    not archived). When the official judge is gone (404 / 410) and the run names a successor, the successor judges
    it (``Verdict.successor``); a loop run after the day (``successor_only``) asks the successor alone."""
    if is_offline(settings.judge_provider):
        return offline_judge.offline_verdict(q.question_id, q.question_type, q.question, q.answer, hypothesis)

    judged = official.Judged(q.question_id, q.question_type, q.question, q.answer, hypothesis)
    route = official.JudgeRoute(settings.longmemeval_root, settings.judge_provider, settings.judge_model, llm,
                                repeat=settings.judge_repeat, reasoning_effort=settings.judge_reasoning_effort)
    successor = settings.successor
    if settings.successor_only and successor is not None:  # a loop after the day: one judge throughout
        return official.judge_verdict(judged, route.to(*successor, successor=True))
    archive = verdict_archive.for_project(settings.project)
    try:
        return official.judge_verdict(judged, route.to(route.provider, route.model, archive=archive,
                                                       archive_as=None if run_id is None else f"run {run_id}"))
    except providers.ProviderError as err:
        if successor is None or not official.official_judge_gone(err, settings.judge_provider,
                                                                    settings.judge_model):
            raise
    return official.judge_verdict(judged, route.to(*successor, successor=True))


def run_item(q: Question, settings: RunSettings, llm: LLM,
             prompts: list[ChatRequest] | None = None, endpoint: Any = None, *,
             run_id: str | None = None) -> ResultRow:
    """The row's ``prompt_keys`` name the chat requests the target sent (``ChatRequest.key()``, in order); the
    requests themselves go into ``prompts`` when given, for the run's writer to store (``prompt_store``).
    ``endpoint``: the run's target endpoint (``target_endpoint.TargetEndpoint``) for a user's own system: the item
    gets a scope of it, and the calls made under it go into the row. ``run_id``: the run an official verdict made
    here is archived ``by``."""
    recorder = None if llm is None else RecordingLLM(llm)
    row = _run_item(q, settings, llm, recorder, endpoint, run_id)
    if recorder is None:
        return row
    if prompts is not None:
        prompts.extend(recorder.requests)
    return row.with_(prompt_keys=tuple(recorder.keys()))


def _generated(q: Question, settings: RunSettings, gen_llm: LLM | None, endpoint: Any) -> Hypothesis | ResultRow:
    """The target's hypothesis for ``q`` with the calls made through the target endpoint, or the error row."""
    with _scope(endpoint) as scope:
        try:
            hyp = generate(q, settings, gen_llm, scope)
        except providers.ProviderError as err:
            failure = _failure("generate", err.kind, str(err), getattr(err, "attempts", 1))
        except UserError as err:
            failure = _failure("generate", getattr(err, "kind", "target"), str(err))
        except Exception as err:  # a target bug must not take the run down: it is this item's error
            failure = _failure("generate", "target", f"{type(err).__name__}: {err}")
        else:
            return with_endpoint_calls(hyp, () if scope is None else scope.calls())
        return _error_row(q, settings, failure, calls=() if scope is None else scope.calls())


def _run_item(q: Question, settings: RunSettings, llm: LLM, gen_llm: LLM | None, endpoint: Any,
              run_id: str | None) -> ResultRow:
    t0 = time.monotonic()
    hyp = _generated(q, settings, gen_llm, endpoint)
    if isinstance(hyp, ResultRow):
        return hyp
    gen_ms = (time.monotonic() - t0) * 1000.0

    hypothesis = judged_text(hyp, settings)
    if hypothesis is None:
        return _error_row(q, settings, _failure("generate", "target", "the target returned no hypothesis text"), hyp)

    try:
        verdict = judge(q, hypothesis, settings, llm, run_id)
    except providers.ProviderError as err:
        failure = _failure("judge", err.kind, str(err), getattr(err, "attempts", 1), gone=answered_gone(err))
        return _error_row(q, settings, failure, hyp, hypothesis)
    except NewerVersionError:
        raise  # the project's verdict archive is from a newer version: the run stops, no item is failed by it
    except UserError as err:
        return _error_row(q, settings, _failure("judge", "judge_input", str(err)), hyp, hypothesis)
    except Exception as err:  # an unforeseen reply must fail this item, not the run
        failure = _failure("judge", "malformed", f"{type(err).__name__}: {err}")
        return _error_row(q, settings, failure, hyp, hypothesis)

    gen_calls = hyp.calls
    if gen_calls:  # the calls' own time, not the item's wait for its first connection, tokenizer or target import
        gen_ms = sum(c.latencyMs or 0.0 for c in gen_calls)

    retrieved = hyp.retrieved_session_ids
    row = ResultRow.for_question(
        q,
        status=JUDGED,
        hypothesis=hypothesis,
        judgment=verdict,
        latencyMs=round(gen_ms, 3),
        tokensIn=int(hyp.tokensIn),
        tokensOut=int(hyp.tokensOut),
        target=_target_block(settings, hyp),
        retrieval=None if retrieved is None else RowRetrieval(tuple(retrieved), tuple(q.gold_session_ids()),
                                                              hyp.retrieval),
        cost=None,
        calls=gen_calls,
        error=None,
        finished_at=utc_now_precise(),
    )
    return row.with_(cost=priced_row(row))
