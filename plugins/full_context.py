"""Target ``full-context``: the reader over every history session of the item (upstream's long-context baseline).

Options: ``mode`` (``direct`` | ``con``, Chain-of-Note), ``history_format`` (``json`` | ``nl``),
``context_window`` (tokens; default from ``reader.CONTEXT_WINDOWS``), ``max_tokens`` (default 500 / 800).
When the prompt does not fit upstream's budget (context window - max_tokens - 1000, counted with tiktoken for OpenAI
models, Anthropic's count API for Claude, else estimated), the OLDEST sessions are dropped; the Hypothesis's
``truncation`` says how many and which (real ids, mapped by the driver) and ``dropped_evidence`` how many of them
were evidence.
"""

from __future__ import annotations

from typing import Any, Mapping

from lme.target_kit import reader
from lme.targets import ChatRequest, Hypothesis, PublicItem, TargetContext

NAME = "full-context"


def describe(options: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": NAME, **reader.reader_settings(options)}


def prepare_requests(item: PublicItem, ctx: TargetContext) -> list[ChatRequest]:
    request, _ = reader.build_fitted_request(item, item.sessions, provider=ctx.provider, model=ctx.model,
                                             options=ctx.options, use_provider_count=False)
    return [request]


def generate(item: PublicItem, ctx: TargetContext) -> Hypothesis:
    return reader.answer_with_reader(item, item.sessions, ctx)
