"""Money before a run and during it: the confirmation gate (``confirmCostUsd``) and the ``--max-cost`` cap.

What is gated, what an approval recorded in the run covers and how the cap admits items: ``references/SPEC.md``,
"Cost gate and cap". An unknown price gates too: it cannot be shown to be below the limit.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any, Mapping

from lme.store import run_store
from lme.core.errors import UserError
from lme.core.facts import is_offline
from lme.models.prices import row_spend, spend
from lme.core.records import Question
from lme.core.run_records import ResultRow
from lme.run.settings import RunSettings
from lme.data import dataset
from lme.run import dry_run
from lme.run.estimate_record import Estimate
from lme.run import state
from lme.models import prices
from lme.targets.targets import users_system

DEFAULT_CONFIRM_COST_USD = 5.0
ASK_LINE = ("to start it, run the same command again with --yes once the cost is approved (an agent asks the user "
            "first), or raise confirmCostUsd in .longmemeval-benchmarks/config.json")
"""The gate's last line: for a person at a shell and for an agent, who must not add --yes on its own."""


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
    if state.needs_scan(settings, run_id):
        tally = dry_run.EstimateTally(settings)
        scanned = state.scan_new_run(settings, on_item=tally.offer_new)
        result = tally.result()
    else:
        result = dry_run.estimate(settings, run_id)
    return _block(settings, run_id, result, threshold), scanned


def _block(settings: RunSettings, run_id: str | None, result: Estimate, threshold: float) -> str | None:
    total = result.total_usd_max
    if total is not None and total <= threshold:
        return None
    if total is not None and within_approval(settings, run_id, total):
        return None
    if total is None:
        why = "its cost cannot be shown to be below confirmCostUsd (a price is unknown)"
    else:
        why = f"estimated {dry_run.dollars(total, bound=True)}, above confirmCostUsd {dry_run.dollars(threshold)}"
    return f"cost gate: this run needs confirmation: {why}\n{dry_run.format_block(result)}\n{ASK_LINE}"


# --------------------------------------------------------------------------- an approval, recorded in the run

APPROVAL_KEY = "approved_usd"
"""The run-meta invocation field an approved (``--yes``) start records: the dollars the user approved for the run."""


def _spent_so_far(settings: RunSettings, run_id: str | None) -> tuple[float, int]:
    """(dollars the run's rows cost, rows of unknown price); nothing for a new run."""
    root = dry_run.run_root(settings, run_id) if run_id else None
    if root is None or not root.is_dir():
        return 0.0, 0
    so_far = spend(run_store.iter_rows(root))
    return so_far.known_total_usd, so_far.rows_unknown


def approval_to_record(settings: RunSettings, run_id: str | None) -> float | None:
    """What a ``--yes`` start approves: the run's spend so far plus this invocation's upper-bound estimate (None
    when a price is unknown, or nothing is paid: such an approval cannot carry over)."""
    if not makes_paid_calls(settings):
        return None
    total = dry_run.estimate(settings, run_id).total_usd_max
    done, unknown = _spent_so_far(settings, run_id)
    return None if total is None or unknown else round(done + total, 6)


def recorded_approval(settings: RunSettings, run_id: str | None) -> float | None:
    """The latest ``approved_usd`` the run's invocations recorded (None: never approved)."""
    if not run_id:
        return None
    directory = run_store.shard_dir(dry_run.run_root(settings, run_id), settings.shard)
    meta = run_store.peek_meta(directory) or {}
    for invocation in reversed(meta.get("invocations") or []):
        value = invocation.get(APPROVAL_KEY) if isinstance(invocation, dict) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
            return float(value)
    return None


def within_approval(settings: RunSettings, run_id: str | None, estimate_usd: float) -> bool:
    """A resume whose spend so far plus ``estimate_usd`` stays within the approval the run recorded (said on
    stderr); False when it has none or would pass it."""
    approved = recorded_approval(settings, run_id)
    if approved is None:
        return False
    done, unknown = _spent_so_far(settings, run_id)
    if unknown or done + estimate_usd > approved + 1e-9:
        return False
    print(f"cost gate: within the {dry_run.dollars(approved)} approved for run {run_id} (spent "
          f"{dry_run.dollars(done)} + this resume up to {dry_run.dollars(estimate_usd)}): no second "
          "approval needed", file=sys.stderr)
    return True


# --------------------------------------------------------------------------- the cap


class CostCap:
    """Admission control for ``--max-cost``: the run's driver asks before it starts each item."""

    at_refusal: tuple[float, float, int] | None = None
    """(spent, reserved for the items in flight, how many) when the cap first refused an item."""

    def __init__(self, cap_usd: float, settings: RunSettings, work: Path) -> None:
        self.cap = cap_usd
        self.estimator = dry_run.Estimator(settings)
        self.spent = spend(run_store.iter_rows(work, include_shards=False)).known_total_usd
        self.reserved: dict[str, float] = {}
        self.refused_estimate: float | None = None
        self.at_refusal = None
        self._lock = threading.Lock()

    def admit(self, q: Question) -> bool:
        estimate = self.estimator.item_usd(q)
        if estimate is None:  # checked before the run; a per-item surprise must not pass the cap silently
            raise UserError(f"--max-cost: item {q.question_id} uses a model that is not in the price table")
        with self._lock:
            if self.spent + sum(self.reserved.values()) + estimate > self.cap:
                if self.at_refusal is None:
                    self.at_refusal = (self.spent, sum(self.reserved.values()), len(self.reserved))
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
        """How the cap was reached: spent, plus the upper bounds reserved for the items in flight, plus the next item
        would have passed it; then what the run has spent now those items are recorded."""
        cap = dry_run.dollars(self.cap)
        if self.at_refusal is None or self.refused_estimate is None:
            return f"cost cap reached: ${self.spent:,.4f} spent of --max-cost {cap}; resume with a higher --max-cost"
        done, in_flight, count = self.at_refusal
        return (f"cost cap reached: ${done:,.4f} spent + up to ${in_flight:,.4f} in flight ({count} items) + the next "
                f"item's up to ${self.refused_estimate:,.4f} would pass --max-cost {cap}; ${self.spent:,.4f} spent "
                "once the items in flight were recorded; resume with a higher --max-cost")


def check_cap_is_enforceable(settings: RunSettings, cap_usd: float) -> None:
    """``--max-cost`` needs a price for every call the run makes; refuse it up front otherwise."""
    if cap_usd < 0:
        raise UserError(f"--max-cost {cap_usd:g} is negative", fix="give a dollar amount >= 0, e.g. --max-cost 20")
    if settings.batch != "off":
        raise UserError(f"--max-cost with --batch {settings.batch}: a submitted batch runs as a whole, so the cap "
                        "cannot stop it midway", fix="check the dry run's batch price instead, or drop --batch")
    est = dry_run.Estimator(settings)
    if not est.previewable and not users_system(settings.target):
        raise UserError(f"--max-cost: target {settings.target} cannot preview its calls (no prepare_requests), so "
                        "its cost cannot be capped", fix="drop --max-cost, or add prepare_requests to the target")
    judge_model = est.judge_model
    if not is_offline(settings.judge_provider) and prices.price_for(judge_model) is None:
        raise UserError(f"--max-cost: judge model {judge_model} is not in the price table (scripts/lme/models/prices.py)",
                        fix="drop --max-cost or add the model's price")
    if not is_offline(settings.target_provider) and not users_system(settings.target) \
            and prices.price_for(settings.target_model) is None:
        raise UserError(f"--max-cost: target model {settings.target_model} is not in the price table "
                        "(scripts/lme/models/prices.py)", fix="drop --max-cost or add the model's price")
    items = dataset.iter_items(Path(settings.dataset_path))
    first = next(items, None)
    items.close()
    if first is not None and est.item_usd(Question.from_dict(first)) is None:  # e.g. a memory-ref stack role
        raise UserError("--max-cost: a model this run calls is not in the price table (scripts/lme/models/prices.py)",
                        fix="drop --max-cost, or use priced models (see the dry run's unpriced_models)")
