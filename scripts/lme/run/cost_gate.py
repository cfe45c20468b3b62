"""Money before a run and during it: the confirmation gate (``confirmCostUsd``) and the ``--max-cost`` cap.

The gate: a run that will make paid calls and whose dry-run estimate (the items this invocation would run) is
above ``confirmCostUsd`` is refused before anything is written, with the estimate, unless ``--yes``. An unknown
price gates too: it cannot be shown to be below the limit.

The cap: ``--max-cost USD`` counts what the run has spent (every row it recorded, all invocations: the calls made
through this toolkit, cache hits free) plus an upper-bound estimate of each item admitted and not yet recorded,
and admits no item that would take that sum past the cap. Admitted items finish and are recorded normally, so
the run stops between items: status ``paused``, exit 6, resumable with a higher cap.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Mapping

from lme.store import run_store
from lme.core.errors import UserError
from lme.core.facts import is_offline
from lme.models.prices import row_spend, spent
from lme.core.records import Question
from lme.core.run_records import ResultRow
from lme.run.run_settings import RunSettings
from lme.data import dataset
from lme.run import dry_run
from lme.run import run_state
from lme.models import prices
from lme.run.dry_run import dollars as dry_run_dollars

DEFAULT_CONFIRM_COST_USD = 5.0
EXIT_NEEDS_CONFIRMATION = 5
EXIT_COST_CAP = 6
ASK_LINE = "ask the user; to start it add --yes (or set confirmCostUsd)"


def confirm_threshold(cfg: Mapping[str, Any]) -> float:
    value = cfg.get("confirmCostUsd", DEFAULT_CONFIRM_COST_USD)
    return DEFAULT_CONFIRM_COST_USD if value is None else float(value)


def makes_paid_calls(settings: RunSettings) -> bool:
    return not is_offline(settings.target_provider) or not is_offline(settings.judge_provider)


def check(settings: RunSettings, run_id: str | None, threshold: float) -> tuple[str | None, Any]:
    """``(block, scan)``: the gate's stdout block when this invocation must be confirmed first (else None), and the
    new run's dataset scan (else None). A new run on a file with no stored scan is estimated on the scan it needs
    anyway (one pass over the dataset, not two): hand the scan to ``run_driver.execute(scanned=...)``."""
    if not makes_paid_calls(settings):
        return None, None
    scanned = None
    if run_state.needs_scan(settings, run_id):
        tally = dry_run.EstimateTally(settings)
        scanned = run_state.scan_new_run(settings, on_item=tally.offer_new)
        result = tally.result()
    else:
        result = dry_run.estimate(settings, run_id)
    return _block(result, threshold), scanned


def _block(result: Mapping[str, Any], threshold: float) -> str | None:
    total = result["total_usd_max"]
    if total is not None and total <= threshold:
        return None
    if total is None:
        why = "its cost cannot be shown to be below confirmCostUsd (a price is unknown)"
    else:
        why = f"estimated {dry_run.dollars(total, bound=True)}, above confirmCostUsd {dry_run.dollars(threshold)}"
    return f"cost gate: this run needs confirmation: {why}\n{dry_run.format_block(result)}\n{ASK_LINE}"


# --------------------------------------------------------------------------- the cap


class CostCap:
    """Admission control for ``--max-cost``: the run's driver asks before it starts each item."""

    def __init__(self, cap_usd: float, settings: RunSettings, work: Path) -> None:
        self.cap = cap_usd
        self.estimator = dry_run.Estimator(settings)
        self.spent, _ = spent(run_store.iter_rows(work, include_shards=False))
        self.reserved: dict[str, float] = {}
        self.refused_estimate: float | None = None
        self._lock = threading.Lock()

    def admit(self, q: Question) -> bool:
        estimate = self.estimator.item_usd(q)
        if estimate is None:  # checked before the run; a per-item surprise must not pass the cap silently
            raise UserError(f"--max-cost: item {q.question_id} uses a model that is not in the price table")
        with self._lock:
            if self.spent + sum(self.reserved.values()) + estimate > self.cap:
                self.refused_estimate = estimate
                return False
            self.reserved[q.question_id] = estimate
            return True

    def settle(self, row: ResultRow) -> None:
        with self._lock:
            reserved = self.reserved.pop(row.question_id, 0.0)
            usd = row_spend(row)
            self.spent += reserved if usd is None else usd

    def message(self) -> str:

        nxt = "" if self.refused_estimate is None else f"; the next item needs up to ${self.refused_estimate:,.4f}"
        return (f"cost cap reached: ${self.spent:,.4f} spent of --max-cost {dry_run_dollars(self.cap)}{nxt}; "
                "resume with a higher --max-cost")


def check_cap_is_enforceable(settings: RunSettings, cap_usd: float) -> None:
    """``--max-cost`` needs a price for every call the run makes; refuse it up front otherwise."""
    if cap_usd < 0:
        raise UserError(f"--max-cost {cap_usd:g} is negative", fix="give a dollar amount >= 0, e.g. --max-cost 20")
    if settings.batch != "off":
        raise UserError(f"--max-cost with --batch {settings.batch}: a submitted batch runs as a whole, so the cap "
                        "cannot stop it midway", fix="check the dry run's batch price instead, or drop --batch")
    est = dry_run.Estimator(settings)
    if not est.previewable and settings.target not in dry_run.OWN_CALLS_TARGETS:
        raise UserError(f"--max-cost: target {settings.target} cannot preview its calls (no prepare_requests), so "
                        "its cost cannot be capped", fix="drop --max-cost, or add prepare_requests to the target")
    judge_model = est.judge_model
    if not is_offline(settings.judge_provider) and prices.price_for(judge_model) is None:
        raise UserError(f"--max-cost: judge model {judge_model} is not in the price table (scripts/lme/models/prices.py)",
                        fix="drop --max-cost or add the model's price")
    if not is_offline(settings.target_provider) and settings.target not in dry_run.OWN_CALLS_TARGETS \
            and prices.price_for(settings.target_model) is None:
        raise UserError(f"--max-cost: target model {settings.target_model} is not in the price table "
                        "(scripts/lme/models/prices.py)", fix="drop --max-cost or add the model's price")
    items = dataset.iter_items(Path(settings.dataset_path))
    first = next(items, None)
    items.close()
    if first is not None and est.item_usd(Question.from_dict(first)) is None:  # e.g. a memory-ref stack role
        raise UserError("--max-cost: a model this run calls is not in the price table (scripts/lme/models/prices.py)",
                        fix="drop --max-cost, or use priced models (see the dry run's unpriced_models)")
