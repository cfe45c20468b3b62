"""One item through the pipeline: Question -> Hypothesis (target) -> Verdict (judge) -> result row.

Nothing here writes files: the run's single writer does. A failure at either stage becomes an error row (stage, kind,
message, attempts) that is never marked completed, so a resume re-runs the item.
"""

from __future__ import annotations

import time
from typing import Any, Mapping

from clock import utc_now_precise
from errors import UserError
from facts import HYPOTHESES_TARGET, is_offline
from prompt_store import RecordingLLM
from records import LLM, ChatRequest, Question, row_base
from run_settings import RunSettings

BILLING = "billing"


def call_cost(calls: list[Mapping[str, Any]]) -> float | None:
    """Dollars actually spent on these calls (cache hits are free); None when any paid call's price is unknown."""
    import prices

    total = 0.0
    for call in calls:
        if call.get("cached"):
            continue
        usd = prices.cost_usd(str(call.get("model", "")), int(call.get("tokensIn") or 0), int(call.get("tokensOut") or 0))
        if usd is None:
            return None
        total += usd
    return total


def _error_row(q: Question, settings: RunSettings, stage: str, kind: str, message: str, attempts: int,
               hyp: Mapping[str, Any] | None = None, hypothesis: str | None = None) -> dict[str, Any]:
    """``hypothesis``: the text that was (to be) judged, when it differs from the target's raw output."""
    row = row_base(q)
    row.update(
        status="error",
        hypothesis=hypothesis if hypothesis is not None else (None if hyp is None else hyp.get("hypothesis")),
        judgment=None,
        latencyMs=0.0 if hyp is None else float(hyp.get("latencyMs", 0.0)),
        tokensIn=0 if hyp is None else int(hyp.get("tokensIn", 0)),
        tokensOut=0 if hyp is None else int(hyp.get("tokensOut", 0)),
        target=_target_block(settings, hyp),
        retrieval=None,
        cost=None,
        calls=[] if hyp is None else list(hyp.get("calls", [])),
        error={"stage": stage, "kind": kind, "message": message[:2000], "attempts": int(attempts)},
        finished_at=utc_now_precise(),
    )
    return row


def _target_block(settings: RunSettings, hyp: Mapping[str, Any] | None) -> dict[str, Any]:
    return {
        "name": settings.target,
        "provider": settings.target_provider,
        "model": settings.target_model,
        "debug": {} if hyp is None else dict(hyp.get("debug") or {}),
    }


def generate(q: Question, settings: RunSettings, llm: LLM) -> dict[str, Any]:
    import generation_driver

    return generation_driver.generate_hypothesis(
        q,
        settings.target_provider,
        settings.target_model,
        target=settings.target,
        llm=llm,
        options=dict(settings.target_options),
        cache_dir=settings.cache_dir,
    )


def judge(q: Question, hypothesis: str, settings: RunSettings, llm: LLM) -> dict[str, Any]:
    if is_offline(settings.judge_provider):
        import offline_judge

        return offline_judge.offline_judge(q.question_id, q.question_type, q.question, q.answer, hypothesis)
    import judge_shim
    import verdict_archive

    return judge_shim.judge(
        q.question_type,
        q.question,
        q.answer,
        hypothesis,
        settings.longmemeval_root,
        provider=settings.judge_provider,
        model=settings.judge_model,
        question_id=q.question_id,
        llm=llm,
        archive=verdict_archive.for_project(settings.project),
        repeat=settings.judge_repeat,
    )


def run_item(q: Question, settings: RunSettings, llm: LLM,
             prompts: list[ChatRequest] | None = None) -> dict[str, Any]:
    """Return the result row for ``q``: ``status`` ``judged``, or ``error`` with the failing stage.

    The row's ``prompt_keys`` name the chat requests the target sent (``ChatRequest.key()``, in order); the
    requests themselves go into ``prompts`` when given, for the run's writer to store (``prompt_store``)."""
    recorder = None if llm is None else RecordingLLM(llm)
    row = _run_item(q, settings, llm, recorder)
    if recorder is not None:
        row["prompt_keys"] = recorder.keys()
        if prompts is not None:
            prompts.extend(recorder.requests)
    return row


def _run_item(q: Question, settings: RunSettings, llm: LLM, gen_llm: LLM | None) -> dict[str, Any]:
    import providers

    t0 = time.monotonic()
    try:
        hyp = generate(q, settings, gen_llm)
    except providers.ProviderError as err:
        return _error_row(q, settings, "generate", err.kind, str(err), getattr(err, "attempts", 1))
    except UserError as err:
        return _error_row(q, settings, "generate", getattr(err, "kind", "target"), str(err), 1)
    except Exception as err:  # a target bug must not take the run down: it is this item's error
        return _error_row(q, settings, "generate", "target", f"{type(err).__name__}: {err}", 1)
    gen_ms = (time.monotonic() - t0) * 1000.0

    hypothesis = hyp.get("hypothesis")
    if not isinstance(hypothesis, str):
        return _error_row(q, settings, "generate", "target", "the target returned no hypothesis text", 1, hyp)
    if settings.target != HYPOTHESES_TARGET:  # a file's hypothesis is judged as written, as upstream judges a file
        hypothesis = hypothesis.strip()  # upstream strips the reader's output, then judges it, even when empty

    try:
        verdict = judge(q, hypothesis, settings, llm)
    except providers.ProviderError as err:
        return _error_row(q, settings, "judge", err.kind, str(err), getattr(err, "attempts", 1), hyp, hypothesis)
    except UserError as err:
        return _error_row(q, settings, "judge", "judge_input", str(err), 1, hyp, hypothesis)
    except Exception as err:  # an unforeseen reply must fail this item, not the run
        return _error_row(q, settings, "judge", "malformed", f"{type(err).__name__}: {err}", 1, hyp, hypothesis)

    gen_calls = [dict(c) for c in hyp.get("calls", [])]
    if gen_calls:
        gen_usd = call_cost(gen_calls)
    else:  # no model calls we made: free (offline), or a user's system whose spending we cannot price
        gen_usd = 0.0 if not (hyp.get("tokensIn") or hyp.get("tokensOut")) else None
    judge_usd = call_cost([{**verdict, "cached": verdict.get("cached", False)}]) if not is_offline(verdict.get("provider")) else 0.0
    total = None if gen_usd is None or judge_usd is None else gen_usd + judge_usd

    retrieved = hyp.get("retrieved_session_ids")
    row = row_base(q)
    row.update(
        status="judged",
        hypothesis=hypothesis,
        judgment=dict(verdict),
        latencyMs=round(gen_ms, 3),
        tokensIn=int(hyp.get("tokensIn", 0)),
        tokensOut=int(hyp.get("tokensOut", 0)),
        target=_target_block(settings, hyp),
        retrieval=None
        if retrieved is None
        else {"retrieved_session_ids": list(retrieved), "gold_session_ids": list(q.gold_session_ids())},
        cost={"generation_usd": gen_usd, "judge_usd": judge_usd, "total_usd": total},
        calls=gen_calls,
        error=None,
        finished_at=utc_now_precise(),
    )
    return row
