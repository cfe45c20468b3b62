"""Progress of a run, for people (a tqdm bar or one line per item on stderr) or agents (one JSON line per item).

``lines`` prints what the user's original driver printed, ``qid [type] -> label``; ``json`` prints one record per
item on stdout and nothing else there; ``status`` prints ``run_status.py``'s status line on stderr every
``STATUS_EVERY_S`` seconds and at the end: the background worker's log. In every mode but ``json`` and ``quiet`` a
failed item gets one line with its cause (``error_line``: the first line of its message, bounded); the row keeps
the whole message (a stderr tail, a traceback).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any, Callable, Mapping

from lme.models import prices
from lme.core.run_records import ResultRow
from lme.run.settings import STATUS_EVERY_S
from lme.run import status as run_status


REASON_CHARS = 200
"""The most of a failed item's cause its terminal line shows."""


def error_line(row: ResultRow) -> str:
    """``qid [type] -> ERROR kind: cause``: one line, the cause the first line of the row's message, bounded."""
    error = row.error
    first = "" if error is None else one_line(error.message)
    cause = "ERROR" if error is None else f"ERROR {error.kind}: {first}" if first else f"ERROR {error.kind}"
    return f"{row.question_id} [{row.question_type}] -> {cause}"


def one_line(text: str, limit: int = REASON_CHARS) -> str:
    first = " ".join(next((line for line in text.splitlines() if line.strip()), "").split())
    return first if len(first) <= limit else first[: limit - 1] + "…"


class Progress:
    def __init__(self, mode: str, total: int, *, already_done: int = 0, run_id: str = "",
                 run_total: int | None = None, before: Mapping[str, Any] | None = None,
                 pacing: Callable[[], list[dict[str, Any]]] | None = None) -> None:
        """``before``: the run's figures when this invocation starts (``judged``, ``errors``, ``correct``,
        ``spent_usd``), so a status line counts the whole run, not just this invocation. ``pacing``: the pacer's
        figures (``Pacer.pacing``) for the status line."""
        self._pacing = pacing
        if mode == "auto":
            mode = "bar" if sys.stderr.isatty() else "lines"
        self.mode = mode
        self.total = total
        self.done = 0
        self.correct = 0
        self.judged = 0
        self.errors = 0
        self.tokens = 0
        self.usd = 0.0
        self.usd_unknown = 0
        self._lock = threading.Lock()
        self._bar = None
        self.run_id = run_id
        self.run_total = run_total if run_total is not None else total + already_done
        self.before = dict(before or {})
        self.spent_usd: float | None = float(self.before.get("spent_usd") or 0.0)
        self._error_ids = set(self.before.get("error_ids") or ())
        self._errors_fixed = 0
        self._started = time.monotonic()
        self._last_status = self._started
        if mode == "bar":
            from tqdm import tqdm

            self._bar = tqdm(total=total, unit="item", file=sys.stderr, dynamic_ncols=True)
        if already_done and mode in ("bar", "lines", "status"):
            print(f"resuming: {already_done} items already completed", file=sys.stderr)

    def update(self, row: ResultRow, run_counters: Mapping[str, Any]) -> None:
        with self._lock:
            self.done += 1
            if row.question_id in self._error_ids:
                self._errors_fixed += 1  # its earlier error row is replaced by this one
            label = None
            if row.judged and row.judgment is not None:
                self.judged += 1
                label = bool(row.judgment.label)
                self.correct += int(label)
            else:
                self.errors += 1
            self.tokens += int(row.tokensIn or 0) + int(row.tokensOut or 0)
            if row.judgment is not None:
                self.tokens += int(row.judgment.tokensIn or 0) + int(row.judgment.tokensOut or 0)
            if self.mode == "status":
                usd = prices.row_spend(row)
                self.spent_usd = None if usd is None or self.spent_usd is None else self.spent_usd + usd
            cost = None if row.cost is None else row.cost.total_usd
            if cost is None:
                self.usd_unknown += 1 if row.judged else 0
            else:
                self.usd += float(cost)
            accuracy = self.correct / self.judged if self.judged else 0.0
            error = row.error
            failed = row.status == "error"
            if self.mode == "json":
                record = {
                    "question_id": row.question_id,
                    "question_type": row.question_type,
                    "status": row.status,
                    "label": label,
                    "error": None if error is None else error.to_dict(),
                    "done": self.done,
                    "total": self.total,
                    "accuracy_judged": round(accuracy, 4),
                    "retries": run_counters.get("retries", 0),
                }
                print(json.dumps(record), flush=True)
            elif self.mode == "status":
                if failed:
                    print(error_line(row), file=sys.stderr, flush=True)
                if time.monotonic() - self._last_status >= STATUS_EVERY_S:
                    self._print_status("running")
            elif self.mode == "lines":
                shown = error_line(row) if failed else f"{row.question_id} [{row.question_type}] -> {label}"
                print(shown, file=sys.stderr, flush=True)
            elif self._bar is not None:
                if failed:
                    self._bar.write(error_line(row), file=sys.stderr)
                self._bar.set_postfix(
                    acc=f"{accuracy:.3f}",
                    err=self.errors,
                    retries=run_counters.get("retries", 0),
                    tok=self.tokens,
                    usd=f"{self.usd:.2f}" + ("+?" if self.usd_unknown else ""),
                    refresh=False,
                )
                self._bar.update(1)

    def status(self, state: str) -> Any:
        """The run's ``run_status.Status`` as this process counts it."""
        elapsed = time.monotonic() - self._started
        rate = self.done / (elapsed / 60.0) if elapsed >= run_status.MIN_RATE_SECONDS else None
        judged = int(self.before.get("judged", 0)) + self.judged
        errors = max(int(self.before.get("errors", 0)) + self.errors - self._errors_fixed, 0)
        return run_status.Status(
            state=state, run_id=self.run_id, done=judged + errors, total=self.run_total, judged=judged,
            errors=errors, correct=int(self.before.get("correct", 0)) + self.correct, spent_usd=self.spent_usd,
            items_per_min=None if rate is None else round(rate, 1),
            eta_seconds=(self.total - self.done) / rate * 60.0 if self.done and rate else None,
            pacing=self._pacing() if self._pacing is not None else [])

    def _print_status(self, state: str) -> None:
        self._last_status = time.monotonic()
        print(run_status.format_line(self.status(state)), file=sys.stderr, flush=True)

    def close(self, state: str | None = None) -> None:
        """End the display; in ``status`` mode print the final status line (``state``: how the run ended)."""
        if self._bar is not None:
            self._bar.close()
        if self.mode == "status" and state is not None:
            with self._lock:
                self._print_status(state)
