"""How a run's invocation ended, as one pure function: what the drive left behind (``Ending``) -> the exit status,
the run-meta status and its error line (``Outcome``). ``run_driver`` records the outcome; the table test
(``tests/run/test_outcome.py``) holds every branch, in the order they win.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from lme.judge.official import CONTINUITY_HINT
from lme.run.exit_codes import (EXIT_BATCH_STOPPED, EXIT_BILLING, EXIT_CODE_CHANGED, EXIT_COMPLETED,
                                 EXIT_COST_CAP, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_JUDGE_GONE)

STATUS_BY_EXIT = {EXIT_COMPLETED: "completed", EXIT_FAILED: "failed", EXIT_BILLING: "blocked on billing",
                  EXIT_COST_CAP: "paused at the cost cap", EXIT_INTERRUPTED: "interrupted",
                  EXIT_BATCH_STOPPED: "stopped at a cancelled batch", EXIT_CODE_CHANGED: "stopped: the code changed"}


@dataclass(frozen=True)
class Ending:
    """What one invocation's drive left behind."""

    stop_reason: str | None = None
    """The first reason the intake stopped: ``judge_mismatch``, ``judge_gone``, ``code_changed``, ``billing``,
    ``interrupted``, ``errors``, ``cost_cap``, or None (the items ran out)."""
    judge_gone: int = 0
    """Items left pending because the official judge is gone and no successor was named."""
    judge_message: str | None = None
    """The first judge response that named another model."""
    code_changed: str | None = None
    """The first change to the target's code seen before an item started (``memsys.py changed``)."""
    batch_stop: str | None = None
    """Why the batch phase stopped (``batch_failed``, ``billing``, ``cancelled``), or None (no batch phase, or it ran
    through)."""
    batch_message: str | None = None
    errors: int = 0
    """Item errors after retries that count against the threshold."""
    error_threshold: int = 0
    errors_by_kind: Mapping[str, int] = field(default_factory=dict)
    billing_message: str | None = None
    cap_message: str | None = None
    """The cost cap's line (``cost_gate.CostCap.message``) when a cap was set."""


@dataclass(frozen=True)
class Outcome:
    exit_code: int
    status: str
    """run-meta's ``status``."""
    error: str | None
    """run-meta's ``error`` line (None when there is nothing to say)."""


def outcome_of(end: Ending) -> Outcome:
    """The exit status, run-meta status and error line of an invocation that ended as ``end`` says (the first rule
    that applies wins: a judge that is not the pinned one or is gone, a failed or cancelled batch, billing, the
    target's code changed, a signal, too many item errors, the cost cap, else completed)."""
    if end.stop_reason == "judge_mismatch":
        return Outcome(EXIT_JUDGE_GONE, "failed", f"stopped at the first judge response naming another model: "
                                                  f"{end.judge_message}; the items not judged stay pending")
    if end.stop_reason == "judge_gone" or end.judge_gone:
        return Outcome(EXIT_JUDGE_GONE, "failed", CONTINUITY_HINT)
    if end.batch_stop in ("batch_failed", "billing"):
        return Outcome(EXIT_BILLING if end.batch_stop == "billing" else EXIT_FAILED, "failed", end.batch_message)
    if end.batch_stop == "cancelled" and end.stop_reason is None:
        return Outcome(EXIT_BATCH_STOPPED, "paused", end.batch_message)
    if end.stop_reason == "billing":
        return Outcome(EXIT_BILLING, "failed", f"blocked on API billing: {end.billing_message}")
    if end.stop_reason == "code_changed":
        return Outcome(EXIT_CODE_CHANGED, "paused", f"stopped taking items: the code changed during the run "
                                                    f"({end.code_changed}); the items in flight finished under the "
                                                    "code they started with, the rest stay pending: resume to run "
                                                    "them with the new code")
    if end.stop_reason == "interrupted":
        return Outcome(EXIT_INTERRUPTED, "interrupted", None)
    if end.errors > end.error_threshold:
        summary = ", ".join(f"{k}: {v}" for k, v in sorted(end.errors_by_kind.items()))
        return Outcome(EXIT_FAILED, "failed", f"{end.errors} item error(s) after retries ({summary}); resume to retry them")
    if end.stop_reason == "cost_cap":
        return Outcome(EXIT_COST_CAP, "paused", end.cap_message)
    return Outcome(EXIT_COMPLETED, "completed", None)
