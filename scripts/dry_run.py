"""``--dry-run``: build every prompt the run would send, count tokens, and estimate cost and time. No model call.

Token counts use the provider layer's documented estimate (no network); generation prompts come from the target's
``prepare_requests`` (targets without it are counted as unknown). The judge prompt is sized from the question,
gold answer and an assumed hypothesis length. Time assumes a per-call latency model, divided by the concurrency:
a rough figure to plan with, printed as such.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from records import ChatRequest, TargetContext
from run_settings import RunSettings

ASSUMED_HYPOTHESIS_TOKENS = 60
JUDGE_TEMPLATE_TOKENS = 150
JUDGE_OUTPUT_TOKENS = 2


def _seconds_per_call(tokens_in: int, tokens_out: int) -> float:
    """A planning model of one call's latency: 0.5 s + 1 s per 20k input tokens + 20 ms per output token."""
    return 0.5 + tokens_in / 20000.0 + tokens_out * 0.02


class _NoCalls:
    """The LLM a dry run hands to targets: any call is a bug in the target's prepare_requests."""

    def complete(self, request: ChatRequest):  # pragma: no cover - guard
        raise RuntimeError("dry run: no model calls")

    def embed(self, provider, model, texts):  # pragma: no cover - guard
        raise RuntimeError("dry run: no model calls")


def estimate(settings: RunSettings, run_id: str | None = None) -> dict[str, Any]:
    import checkpoint_io
    import dataset
    import generation_driver
    import prices
    import providers
    from records import Question

    module = generation_driver.load_target(settings.target)
    prepare = getattr(module, "prepare_requests", None)
    done: set[str] = set()
    if run_id:
        run_dir = checkpoint_io.run_dir_for(Path(settings.runs_dir), checkpoint_io.validate_run_id(run_id))
        if run_dir.exists():
            done = checkpoint_io.load_completed(run_dir)

    ctx = TargetContext(
        provider=settings.target_provider,
        model=settings.target_model,
        llm=_NoCalls(),
        options=dict(settings.target_options),
        cache_dir=settings.cache_dir,
    )
    gen_in = gen_out = judge_in = judge_out = 0
    gen_seconds = judge_seconds = 0.0
    items = unknown = 0
    for raw in dataset.iter_items(Path(settings.dataset_path)):
        if items >= settings.max_evals:
            break
        q = Question.from_dict(raw)
        if q.question_id in done:
            continue
        items += 1
        if prepare is None:
            unknown += 1
        else:
            public = generation_driver.public_view(q, settings.target)
            for req in prepare(public, ctx):
                tin = sum(providers.estimate_tokens(m["content"]) for m in req.messages)
                tin += providers.estimate_tokens(req.system or "")
                gen_in += tin
                gen_out += req.max_tokens
                gen_seconds += _seconds_per_call(tin, req.max_tokens)
        jin = JUDGE_TEMPLATE_TOKENS + providers.estimate_tokens(f"{q.question} {q.answer}") + ASSUMED_HYPOTHESIS_TOKENS
        repeat = getattr(settings, "judge_repeat", 1)  # --judge-repeat K: K judge calls per item
        judge_in += jin * repeat
        judge_out += JUDGE_OUTPUT_TOKENS * repeat
        judge_seconds += _seconds_per_call(jin, JUDGE_OUTPUT_TOKENS) * repeat

    def usd(model: str, tin: int, tout: int, provider: str) -> float | None:
        if provider == "offline":
            return 0.0
        return prices.cost_usd(model, tin, tout)

    judge_model = "gpt-4o-2024-08-06" if settings.judge_model == "gpt-4o" else settings.judge_model
    gen_usd = usd(settings.target_model, gen_in, gen_out, settings.target_provider) if prepare else None
    judge_usd = usd(judge_model, judge_in, judge_out, settings.judge_provider)
    return {
        "items": items,
        "items_without_prompt_preview": unknown,
        "generation": {"tokens_in": gen_in, "tokens_out_max": gen_out, "usd_max": gen_usd,
                       "seconds": round(gen_seconds / settings.concurrency, 1)},
        "judge": {"tokens_in": judge_in, "tokens_out": judge_out, "usd": judge_usd,
                  "seconds": round(judge_seconds / settings.concurrency, 1)},
        "concurrency": settings.concurrency,
        "note": "estimates: tokens ~ chars/4, output at max_tokens, latency model in dry_run.py; cache hits would cost nothing",
    }


def run(settings: RunSettings, run_id: str | None = None) -> int:
    result = estimate(settings, run_id)
    print(json.dumps(result, indent=2))
    g, j = result["generation"], result["judge"]

    def dollars(v: float | None) -> str:
        return "unknown (model not in the price table)" if v is None else f"${v:,.2f}"

    print(
        f"dry run: {result['items']} items; generation {g['tokens_in']:,} tokens in (<= {dollars(g['usd_max'])}, "
        f"~{g['seconds']:.0f} s); judge {j['tokens_in']:,} tokens in ({dollars(j['usd'])}, ~{j['seconds']:.0f} s) "
        f"at concurrency {result['concurrency']}",
        file=sys.stderr,
    )
    return 0
