"""Progress of a run, for people (a tqdm bar or one line per item on stderr) or agents (one JSON line per item).

``lines`` prints what the user's original driver printed, ``qid [type] -> label``; ``json`` prints one record per
item on stdout and nothing else there.
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any, Mapping


class Progress:
    def __init__(self, mode: str, total: int, *, already_done: int = 0) -> None:
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
        if mode == "bar":
            from tqdm import tqdm

            self._bar = tqdm(total=total, unit="item", file=sys.stderr, dynamic_ncols=True)
        if already_done and mode in ("bar", "lines"):
            print(f"resuming: {already_done} items already completed", file=sys.stderr)

    def update(self, row: Mapping[str, Any], run_counters: Mapping[str, Any]) -> None:
        with self._lock:
            self.done += 1
            label = None
            if row.get("status") == "judged":
                self.judged += 1
                label = bool(row["judgment"]["label"])
                self.correct += int(label)
            else:
                self.errors += 1
            judgment = row.get("judgment") or {}
            self.tokens += int(row.get("tokensIn") or 0) + int(row.get("tokensOut") or 0)
            self.tokens += int(judgment.get("tokensIn") or 0) + int(judgment.get("tokensOut") or 0)
            cost = (row.get("cost") or {}).get("total_usd")
            if cost is None:
                self.usd_unknown += 1 if row.get("status") == "judged" else 0
            else:
                self.usd += float(cost)
            accuracy = self.correct / self.judged if self.judged else 0.0
            shown = "ERROR " + row["error"]["kind"] if row.get("status") == "error" else label
            if self.mode == "json":
                record = {
                    "question_id": row["question_id"],
                    "question_type": row["question_type"],
                    "status": row["status"],
                    "label": label,
                    "error": row.get("error"),
                    "done": self.done,
                    "total": self.total,
                    "accuracy_judged": round(accuracy, 4),
                    "retries": run_counters.get("retries", 0),
                }
                print(json.dumps(record), flush=True)
            elif self.mode == "lines":
                print(f"{row['question_id']} [{row['question_type']}] -> {shown}", file=sys.stderr, flush=True)
            elif self._bar is not None:
                self._bar.set_postfix(
                    acc=f"{accuracy:.3f}",
                    err=self.errors,
                    retries=run_counters.get("retries", 0),
                    tok=self.tokens,
                    usd=f"{self.usd:.2f}" + ("+?" if self.usd_unknown else ""),
                    refresh=False,
                )
                self._bar.update(1)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
