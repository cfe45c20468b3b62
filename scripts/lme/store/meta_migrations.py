"""Numbered migrations of an old run's ``run-meta.json``, applied where the store reads one (``run_store``).

A fact that today is settled where the settings are made (``run_settings``) but that runs made before did not
record that way is brought up to date here, once, by a numbered step, so no reader resolves it again. Each step is
idempotent (a current run-meta passes through unchanged) and works on the parsed JSON object before it becomes a
``RunMeta``; the file on disk is never rewritten (an old run or a snapshot may be read-only, and it is evidence).
A new step takes the next number; the numbers are never reused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from lme.core.facts import resolve_judge_model


@dataclass(frozen=True)
class Migration:
    number: int
    what: str
    apply: Callable[[dict[str, Any]], None]
    """Brings one parsed run-meta up to date in place."""


def _judge_alias_to_snapshot(meta: dict[str, Any]) -> None:
    judge = meta.get("judge")
    if isinstance(judge, dict) and isinstance(judge.get("model"), str):
        judge["model"] = resolve_judge_model(judge["model"])


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "the judge model recorded as upstream's alias (gpt-4o) names its snapshot (gpt-4o-2024-08-06), as "
                 "run_settings records it since", _judge_alias_to_snapshot),
)


def migrate(meta: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``meta`` with every migration applied, in number order."""
    out = {**meta, **({"judge": dict(meta["judge"])} if isinstance(meta.get("judge"), Mapping) else {})}
    for step in MIGRATIONS:
        step.apply(out)
    return out
