"""The request shape of a judge call, per model family, recorded in every verdict and every calibration.

- ``upstream``: what upstream sends the official judge (``max_tokens`` 10, ``temperature`` 0, ``n`` 1). Every judge
  that takes these settings gets them, so a successor is measured on the official protocol as far as it allows.
- ``reasoning``: OpenAI's reasoning models (``o1``, ``o3-mini``, ``o4-mini``, ``gpt-5*``: ``request_bodies``) reject
  ``max_tokens`` and any ``temperature`` but the default: ``max_completion_tokens`` (it also pays for the model's
  reasoning, so it is far above 10), no temperature, no ``n``, and ``reasoning_effort`` when one is configured
  (config ``judgeReasoningEffort``, ``judge_agreement.py --reasoning-effort``).

A verdict is official only with the ``upstream`` shape. A successor run cites a calibration of the same candidate
with the same shape (``judge_agreement.latest``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from lme.core.errors import UserError
from lme.core.records import ChatRequest
from lme.models.request_bodies import is_reasoning_model

UPSTREAM_MAX_TOKENS = 10
REASONING_MAX_COMPLETION_TOKENS = 2048
"""Room for a reasoning model's hidden reasoning and its one-word answer (the reasoning is billed as output)."""
REASONING_EFFORTS = ("minimal", "low", "medium", "high")


@dataclass(frozen=True)
class JudgeShape:
    """The settings of one judge call (beyond the one user message holding upstream's prompt)."""

    family: str
    """``upstream`` or ``reasoning``."""
    max_tokens: int
    max_tokens_field: str = "max_tokens"
    temperature: float | None = 0
    n: int | None = 1
    reasoning_effort: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The shape as a verdict records it: ``{family, max_tokens: 10, temperature: 0, n: 1}`` or ``{family,
        max_completion_tokens: 2048[, reasoning_effort]}``."""
        out = {"family": self.family, self.max_tokens_field: self.max_tokens, "temperature": self.temperature,
               "n": self.n, "reasoning_effort": self.reasoning_effort}
        return {key: value for key, value in out.items() if value is not None}

    def request(self, prompt: str, provider: str, model: str) -> ChatRequest:
        """The judge call: one user message holding ``prompt``, no system message, this shape's settings. An empty
        reply is a reply (``allow_empty``): upstream labels it False (``'yes' in ''``) and goes on."""
        return ChatRequest(provider=provider, model=model, messages=({"role": "user", "content": prompt},),
                           system=None, max_tokens=self.max_tokens, temperature=self.temperature, n=self.n,
                           allow_empty=True, max_tokens_field=self.max_tokens_field,
                           reasoning_effort=self.reasoning_effort, judge=True)


UPSTREAM = JudgeShape("upstream", UPSTREAM_MAX_TOKENS)
"""Upstream's call: ``max_tokens`` 10, ``temperature`` 0 (an int, as upstream sends it), ``n`` 1."""


def shape_for(provider: str, model: str, reasoning_effort: str | None = None) -> JudgeShape:
    """The shape a judge ``provider:model`` is called with: ``reasoning`` for an OpenAI-wire reasoning model, else
    upstream's. ``reasoning_effort`` applies to reasoning models only."""
    if reasoning_effort is not None and reasoning_effort not in REASONING_EFFORTS:
        raise UserError(f"reasoning effort {reasoning_effort!r} is not one of {', '.join(REASONING_EFFORTS)}",
                        fix="set judgeReasoningEffort (or --reasoning-effort) to low, medium or high, or leave it out")
    if provider != "anthropic" and is_reasoning_model(model):
        return JudgeShape("reasoning", REASONING_MAX_COMPLETION_TOKENS, "max_completion_tokens", None, None,
                          reasoning_effort)
    return UPSTREAM


def is_upstream_shape(shape: Mapping[str, Any] | None) -> bool:
    """``shape`` (a verdict's ``request_shape``) is upstream's; None (verdicts recorded before shapes were, when
    every judge call had upstream's settings) counts as upstream's."""
    return shape is None or dict(shape) == UPSTREAM.to_dict()


def describe(shape: Mapping[str, Any] | None) -> str:
    """``upstream (max_tokens 10, temperature 0, n 1)`` / ``reasoning (max_completion_tokens 2048, ...)``."""
    if not shape:
        return "upstream (recorded before shapes were)"
    rest = ", ".join(f"{k} {v}" for k, v in shape.items() if k != "family")
    return f"{shape.get('family')} ({rest})"
