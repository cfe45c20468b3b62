"""One item through the pipeline: Question -> Hypothesis (target) -> Verdict (judge) -> ResultRow.

Nothing here writes files: the run's single writer does. A failure at either stage becomes an error row (stage, kind,
message, attempts) that is never marked completed, so a resume re-runs the item.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Sequence

from lme.core.clock import utc_now_precise
from lme.targets import generation_driver
from lme.judge import official as judge_official
from lme.models import providers
from lme.judge import verdict_archive
from lme.core.errors import UserError
from lme.core.facts import HYPOTHESES_TARGET, is_offline
from lme.judge import offline_judge
from lme.models.prices import call_cost, verdict_cost
from lme.core.records import LLM, ChatRequest, Completion, Hypothesis, Question, Verdict
from lme.core.run_records import ERROR, JUDGED, ResultRow, RowCost, RowError, RowRetrieval, RowTarget
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
                     debug={} if hyp is None else dict(hyp.debug))


def _failure(stage: str, kind: str, message: str, attempts: int = 1) -> RowError:
    """Why the item failed at ``stage`` (``generate`` or ``judge``), its message cut to the row's 2000 characters."""
    return RowError(stage=stage, kind=kind, message=message[:2000], attempts=int(attempts))


def _error_row(q: Question, settings: RunSettings, failure: RowError, hyp: Hypothesis | None = None,
               hypothesis: str | None = None) -> ResultRow:
    """``hypothesis``: the text that was (to be) judged, when it differs from the target's raw output."""
    return ResultRow.for_question(
        q,
        status=ERROR,
        hypothesis=hypothesis if hypothesis is not None else (None if hyp is None else hyp.hypothesis),
        judgment=None,
        latencyMs=0.0 if hyp is None else float(hyp.latencyMs),
        tokensIn=0 if hyp is None else int(hyp.tokensIn),
        tokensOut=0 if hyp is None else int(hyp.tokensOut),
        target=_target_block(settings, hyp),
        retrieval=None,
        cost=None,
        calls=() if hyp is None else tuple(hyp.calls),
        error=failure,
        finished_at=utc_now_precise(),
    )


def generate(q: Question, settings: RunSettings, llm: LLM | None) -> Hypothesis:
    return generation_driver.run_target(
        q,
        settings.target_provider,
        settings.target_model,
        target=settings.target,
        llm=llm,
        options=dict(settings.target_options),
        cache_dir=settings.cache_dir,
    )


def judged_text(hyp: Hypothesis, settings: RunSettings) -> str | None:
    """The text the judge reads (None: the target gave none). Upstream strips the reader's output, then judges it,
    even when empty; a file's hypothesis is judged as written, as upstream judges a file."""
    if not isinstance(hyp.hypothesis, str):
        return None
    return hyp.hypothesis if settings.target == HYPOTHESES_TARGET else hyp.hypothesis.strip()


def judge(q: Question, hypothesis: str, settings: RunSettings, llm: LLM) -> Verdict:
    """The run's judge on ``hypothesis``: an archived official verdict, else a call. When the official judge is
    gone (404 / 410) and the run names a successor, the successor judges it (``Verdict.successor``); a loop run
    after the day (``successor_only``) asks the successor alone."""
    if is_offline(settings.judge_provider):
        return offline_judge.offline_verdict(q.question_id, q.question_type, q.question, q.answer, hypothesis)

    judged = judge_official.Judged(q.question_id, q.question_type, q.question, q.answer, hypothesis)
    route = judge_official.JudgeRoute(settings.longmemeval_root, settings.judge_provider, settings.judge_model, llm,
                                      repeat=settings.judge_repeat, reasoning_effort=settings.judge_reasoning_effort)
    successor = settings.successor
    if settings.successor_only and successor is not None:  # a loop after the day: one judge throughout
        return judge_official.judge_verdict(judged, route.to(*successor, successor=True))
    try:
        return judge_official.judge_verdict(judged, route.to(route.provider, route.model,
                                                             archive=verdict_archive.for_project(settings.project)))
    except providers.ProviderError as err:
        if successor is None or not judge_official.official_judge_gone(err, settings.judge_provider,
                                                                          settings.judge_model):
            raise
    return judge_official.judge_verdict(judged, route.to(*successor, successor=True))


def run_item(q: Question, settings: RunSettings, llm: LLM,
             prompts: list[ChatRequest] | None = None) -> ResultRow:
    """Return the result row for ``q``: ``status`` ``judged``, or ``error`` with the failing stage.

    The row's ``prompt_keys`` name the chat requests the target sent (``ChatRequest.key()``, in order); the
    requests themselves go into ``prompts`` when given, for the run's writer to store (``prompt_store``)."""
    recorder = None if llm is None else RecordingLLM(llm)
    row = _run_item(q, settings, llm, recorder)
    if recorder is None:
        return row
    if prompts is not None:
        prompts.extend(recorder.requests)
    return row.with_(prompt_keys=tuple(recorder.keys()))


def _run_item(q: Question, settings: RunSettings, llm: LLM, gen_llm: LLM | None) -> ResultRow:
    t0 = time.monotonic()
    try:
        hyp = generate(q, settings, gen_llm)
    except providers.ProviderError as err:
        return _error_row(q, settings, _failure("generate", err.kind, str(err), getattr(err, "attempts", 1)))
    except UserError as err:
        return _error_row(q, settings, _failure("generate", getattr(err, "kind", "target"), str(err)))
    except Exception as err:  # a target bug must not take the run down: it is this item's error
        return _error_row(q, settings, _failure("generate", "target", f"{type(err).__name__}: {err}"))
    gen_ms = (time.monotonic() - t0) * 1000.0

    hypothesis = judged_text(hyp, settings)
    if hypothesis is None:
        return _error_row(q, settings, _failure("generate", "target", "the target returned no hypothesis text"), hyp)

    try:
        verdict = judge(q, hypothesis, settings, llm)
    except providers.ProviderError as err:
        failure = _failure("judge", err.kind, str(err), getattr(err, "attempts", 1))
        return _error_row(q, settings, failure, hyp, hypothesis)
    except UserError as err:
        return _error_row(q, settings, _failure("judge", "judge_input", str(err)), hyp, hypothesis)
    except Exception as err:  # an unforeseen reply must fail this item, not the run
        failure = _failure("judge", "malformed", f"{type(err).__name__}: {err}")
        return _error_row(q, settings, failure, hyp, hypothesis)

    gen_calls = hyp.calls
    if gen_calls:  # the calls' own time, not the item's wait for its first connection, tokenizer or target import
        gen_ms = sum(c.latencyMs or 0.0 for c in gen_calls)
    if gen_calls:
        gen_usd = call_cost(gen_calls)
    else:  # no model calls we made: free (offline), or a user's system whose spending we cannot price
        gen_usd = 0.0 if not (hyp.tokensIn or hyp.tokensOut) else None
    judge_usd = verdict_cost(verdict)
    total = None if gen_usd is None or judge_usd is None else gen_usd + judge_usd

    retrieved = hyp.retrieved_session_ids
    return ResultRow.for_question(
        q,
        status=JUDGED,
        hypothesis=hypothesis,
        judgment=verdict,
        latencyMs=round(gen_ms, 3),
        tokensIn=int(hyp.tokensIn),
        tokensOut=int(hyp.tokensOut),
        target=_target_block(settings, hyp),
        retrieval=None if retrieved is None else RowRetrieval(tuple(retrieved), tuple(q.gold_session_ids())),
        cost=RowCost(generation_usd=gen_usd, judge_usd=judge_usd, total_usd=total),
        calls=gen_calls,
        error=None,
        finished_at=utc_now_precise(),
    )
