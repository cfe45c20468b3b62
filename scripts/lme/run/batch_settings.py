"""Which ``--batch`` settings can run: the modes, the targets whose generation is one call per item, and the check
that refuses the rest in one line before anything is written. Kept apart from ``batch_runner`` because
``run_settings`` runs the check while it builds the settings, and ``batch_runner`` needs those settings."""

from __future__ import annotations

from typing import Protocol

from lme.models import batch_api
from lme.core.errors import UserError
from lme.core.facts import is_offline


class BatchChoice(Protocol):
    """What the check reads of a ``run_settings.RunSettings`` (a protocol: run_settings imports this module)."""

    batch: str
    target: str
    target_provider: str
    judge_provider: str
    judge_repeat: int

BATCHABLE_TARGETS = ("full-context", "oracle", "rag")
"""Targets whose generation is one model call per item: ``--batch all`` batches it."""
MODES = ("off", "judge", "all")


def check_settings(settings: BatchChoice) -> None:
    """``--batch`` with what cannot batch: one line, exit 2, before anything is written."""
    if settings.batch not in MODES:
        raise UserError(f"batch {settings.batch!r} is not one of {', '.join(MODES)}", fix="e.g. --batch judge")
    if settings.batch == "off":
        return
    routes = [("judge", settings.judge_provider)]
    if settings.batch == "all" and settings.target in BATCHABLE_TARGETS:
        routes.append(("target", settings.target_provider))
    for role, provider in routes:
        if provider == "azure":
            raise UserError(f"--batch {settings.batch}: the {role} runs on provider azure, whose batches "
                            "(global-batch deployments) are not supported here",
                            fix="drop --batch, or use the openai route for batches")
        if is_offline(provider):
            raise UserError(f"--batch {settings.batch}: the {role} is offline and makes no model call to batch",
                            fix="drop --batch, or pick a model provider")
        if provider not in batch_api.SUPPORTED:
            raise UserError(f"--batch {settings.batch}: provider {provider!r} has no Batch API here (openai and "
                            "anthropic have)", fix="drop --batch")
    if settings.judge_repeat > 1:
        raise UserError(f"--batch with --judge-repeat {settings.judge_repeat}: repeats are not batched yet",
                        fix="drop one of them")
