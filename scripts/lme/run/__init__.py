"""The run stage: each ``Question`` through the target and the judge into one ``ResultRow``, for a whole run.

The effective settings (``RunSettings``), one item (``run_item``: ``Hypothesis``, then ``Verdict``, then the row),
the run session (open, drive, finish: ``execute`` with ``RunOptions``, whose ``loop_check`` a ``--loop`` command
hands in), how a run ended -> its exit code (``outcome``; every code once: ``exit_codes``), resume and shard rules, the background worker, money,
``--dry-run``'s ``Estimate``, checks before a run and the batch phase. The store keeps what it writes."""

from lme import lazy_face

_EXPORTS = {
    "RunSettings": "lme.run.settings",
    "run_item": "lme.run.item_runner",
    "execute": "lme.run.driver", "RunOptions": "lme.run.driver", "resume_hint": "lme.run.driver",
    "Outcome": "lme.run.outcome", "STATUS_BY_EXIT": "lme.run.outcome",
    "EXIT_COMPLETED": "lme.run.exit_codes", "EXIT_JUDGE_GONE": "lme.run.exit_codes",
    "EXIT_COST_CAP": "lme.run.exit_codes", "EXIT_NEEDS_CONFIRMATION": "lme.run.exit_codes",
    "estimate": "lme.run.dry_run",
    "Estimate": "lme.run.estimate_record",
}
"""Name -> the module that holds it (full dotted path, so a rename is found by grep)."""

__all__ = tuple(_EXPORTS)
__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)
