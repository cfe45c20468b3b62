"""Judge stability: how often the same judge prompt gets both labels, kept in a project registry.

At temperature 0 the official judge still flips on some items between calls; ``--judge-repeat K`` measures it.
The registry ``judge-stability.jsonl``: SPEC.md "Judge stability". Appends happen under ``.judge-stability.lock``
and re-read what other processes appended first, so shards and parallel runs never lose a count.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Iterable, Mapping

from lme.core.clock import utc_now
from lme.core import fileio
from lme.core.facts import SCHEMA_VERSIONS, STABILITY_REGISTRY, STATE_DIR
from lme.core.records import Verdict
from lme.core.run_records import ResultRow

LOCK_NAME = ".judge-stability.lock"
Key = tuple[str, str, str]
"""(question_id, judge model, prompt sha256)."""


def registry_path(project: str | Path) -> Path:
    return Path(project) / STATE_DIR / STABILITY_REGISTRY


def stability(verdicts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """``{n, yes, no, flaky}`` over the verdicts that have a label (a failed repeat has none)."""
    labels = [v.get("label") for v in verdicts if isinstance(v.get("label"), bool)]
    yes = sum(1 for label in labels if label)
    return {"n": len(labels), "yes": yes, "no": len(labels) - yes, "flaky": 0 < yes < len(labels)}


def key_of(question_id: str, verdict: Verdict) -> Key | None:
    sha = verdict.prompt_sha256
    return None if not sha else (str(question_id), str(verdict.model), str(sha))


class StabilityRegistry:
    """The project's registry: read once, then kept current by reading only what was appended since."""

    def __init__(self, project: str | Path) -> None:
        self.path = registry_path(project)
        self._lock = threading.Lock()
        self._entries: dict[Key, dict[str, Any]] = {}
        self._offset = 0

    def _catch_up(self) -> None:
        if not self.path.exists():
            return
        with open(self.path, "rb") as fh:
            fh.seek(self._offset)
            data = fh.read()
        end = data.rfind(b"\n") + 1  # a torn last line (a crash mid-append) is read once it is complete
        for raw in data[:end].splitlines():
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if isinstance(line, dict) and line.get("prompt_sha256"):
                self._entries[(str(line["question_id"]), str(line["judge_model"]), str(line["prompt_sha256"]))] = line
        self._offset += end

    def entries(self) -> dict[Key, dict[str, Any]]:
        """The last line per key."""
        with self._lock:
            self._catch_up()
            return dict(self._entries)

    def flaky(self) -> set[Key]:
        return {k for k, line in self.entries().items() if line.get("flaky")}

    def record(self, question_id: str, verdict: Verdict, source: str) -> dict[str, Any] | None:
        """Add the repeated verdicts of one judged item (``verdict.verdicts``) to its key's counts; returns the new
        line."""
        verdicts = verdict.verdicts
        key = key_of(question_id, verdict)
        if not verdicts or key is None:
            return None
        measured = stability(verdicts)
        if measured["n"] == 0:
            return None
        with self._lock, fileio.FileLock(self.path.parent, LOCK_NAME, wait=True):
            self._catch_up()
            before = self._entries.get(key) or {}
            yes = int(before.get("yes", 0)) + measured["yes"]
            no = int(before.get("no", 0)) + measured["no"]
            line = {
                "schemaVersion": SCHEMA_VERSIONS["judge-stability"], "question_id": key[0],
                "judge_provider": verdict.provider, "judge_model": key[1], "prompt_sha256": key[2],
                "yes": yes, "no": no, "n": yes + no, "flaky": yes > 0 and no > 0,
                "first_label": before.get("first_label", verdicts[0].get("label")),
                "updated_at": utc_now(), "source": source,
            }
            self._append(line)
            self._entries[key] = line
            return line

    def _append(self, line: Mapping[str, Any]) -> None:
        fileio.append_jsonl(self.path, line)  # one fsynced O_APPEND write; repairs a torn tail first
        self._offset = self.path.stat().st_size


def row_is_unstable(row: ResultRow | None, flaky: set[Key]) -> bool:
    """A judged row whose own repeated verdicts disagree, or whose exact prompt the registry marks flaky."""
    verdict = None if row is None else row.judgment
    if verdict is None:
        return False
    if (verdict.stability or {}).get("flaky") or verdict.conflict:
        return True
    key = key_of(row.question_id, verdict)
    return key is not None and key in flaky


def summary(rows: Iterable[ResultRow], flaky: set[Key]) -> dict[str, Any]:
    """How many of a run's labels are unstable: its own repeated verdicts disagree, the registry marks the row's
    exact prompt flaky, or the verdict archive holds official verdicts of both labels for it (they overlap;
    ``unstable_ids`` is their union)."""
    repeated = in_run = in_registry = conflicts = 0
    unstable = []
    for row in rows:
        verdict = row.judgment
        if not row.judged or verdict is None:
            continue
        own = bool((verdict.stability or {}).get("flaky"))
        key = key_of(row.question_id, verdict)
        registered = key is not None and key in flaky
        conflict = bool(verdict.conflict)
        repeated += verdict.verdicts is not None
        in_run += own
        in_registry += registered
        conflicts += conflict
        if own or registered or conflict:
            unstable.append(row.question_id)
    return {"repeated_items": repeated, "unstable_in_run": in_run, "flaky_in_registry": in_registry,
            "archive_conflicts": conflicts, "unstable_ids": sorted(unstable)}
