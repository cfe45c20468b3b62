"""The loop's noise floor: how often the UNCHANGED system's labels flip when its items are simply run again.

The command (its parser, ``main()`` and help text) is ``lme/cli/noise_floor.py``."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any, Iterable, Mapping

from lme.core import bounded_json
from lme.core import fileio
from lme.store import run_store
from lme.core.clock import utc_now
from lme.core.errors import UserError
from lme.core.facts import NOISE_FLOOR_FILE, SCHEMA_VERSIONS
from lme.core.run_records import ResultRow, RunMeta
from lme.score import drop_qids

DEFAULT_SAMPLE = 60
BAND_SD = 2.0
PRIOR_ITEMS = 10
"""A type's rate is shrunk toward the overall rate as if it had this many more items at the overall rate: 0 flips
on 8 sampled items of a type is not a type that never flips."""


def _sha(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def stack_of(meta: RunMeta) -> dict[str, Any]:
    """The models a run's labels depend on: target, reader, the target's model stack, judge."""
    target = meta.target
    options = target.options or {}
    return {
        "target": target.name,
        "reader": f"{target.provider}:{target.model}",
        "stack": dict(options.get("stack") or {}),
        "judge": judge_of(meta),
    }


def judge_of(meta: RunMeta) -> str:
    """The judge a run's labels come from: its judge, or the successor that judged every item of its last
    invocation (a loop run after the official judge retired: ``successor_only``)."""
    last = meta.invocations[-1] if meta.invocations else None
    if last is not None and last.successor_only and last.successor:
        return f"the successor {last.successor}"
    return f"{meta.judge_provider}:{meta.judge_model}"


def stack_key(stack: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(stack, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def path_of(project: Path) -> Path:
    return Path(project) / NOISE_FLOOR_FILE


def load(project: Path) -> dict[str, Any] | None:
    record = fileio.read_json(path_of(project), limits=bounded_json.STATE, missing_ok=True,
                              fix="restore it from git history, or delete it and measure again")
    return record if isinstance(record, dict) else None


def read_run(project: Path, run_id: str) -> tuple[Path, RunMeta, dict[str, ResultRow], dict[str, str]]:
    """A run's directory, run-meta, last row per question and question types (from its manifest)."""
    run_dir = run_store.existing_run_dir(project, run_id)
    meta = run_store.read_meta(run_dir)
    rows = run_store.load_results(run_dir)
    manifest = run_store.read_manifest(run_dir)
    types = manifest.types() if manifest is not None else {q: r.question_type for q, r in rows.items()}
    return run_dir, meta, rows, types


def measured_for(project: Path, meta: RunMeta) -> dict[str, Any] | None:
    """The measured noise floor when it belongs to this run's stack (None: missing, pending or stale)."""
    record = load(project)
    if not record or record.get("status") != "measured":
        return None
    return record if record.get("stack_key") == stack_key(stack_of(meta)) else None


def sample(rows: Mapping[str, ResultRow], types: Mapping[str, str], size: int, seed: str) -> list[str]:
    """A seeded sample of judged items, stratified by type (each type's share of the run, at least one)."""
    judged = [q for q in types if q in rows and rows[q].judged]
    if not judged:
        return []
    by_type: dict[str, list[str]] = {}
    for q in sorted(judged, key=lambda q: hashlib.sha256(f"{seed}:{q}".encode()).hexdigest()):
        by_type.setdefault(types[q], []).append(q)
    size = min(size, len(judged))
    chosen: list[str] = []
    for qtype, ids in sorted(by_type.items()):
        chosen += ids[:max(1, round(size * len(ids) / len(judged)))]
    return chosen


def start(project: Path, run_id: str, *, size: int = DEFAULT_SAMPLE, seed: str | None = None) -> dict[str, Any]:
    """Record a seeded sample's labels and hypotheses, then drop those items so the run re-runs them. Idempotent: a
    pending measurement of the same stack is returned as it is (nothing dropped twice)."""

    if size < 1:
        raise UserError(f"--sample {size} must be >= 1", fix="e.g. --sample 60")
    project = Path(project)
    run_dir, meta, rows, types = read_run(project, run_id)
    stack = stack_of(meta)
    record = load(project)
    if record and record.get("status") == "pending" and record.get("stack_key") == stack_key(stack):
        return record
    seed = seed or f"noise-{stack_key(stack)}"
    ids = sample(rows, types, size, seed)
    if not ids:
        raise UserError(f"run {run_id} has no judged item to re-run", fix="finish the loop's full run first (step 1)")
    record = {
        "schemaVersion": SCHEMA_VERSIONS["noise-floor"], "status": "pending", "run_id": run_id, "seed": seed,
        "stack": stack, "stack_key": stack_key(stack), "started_at": utc_now(),
        "sample": ids,
        "before": {q: {"type": types[q], "label": rows[q].correct, "hypothesis_sha256": _sha(rows[q].hypothesis)}
                   for q in ids},
    }
    fileio.write_atomic_json(path_of(project), record)
    drop_qids.drop_qids(run_dir, ids)
    return record


def pending_ids(project: Path, run_id: str) -> list[str]:
    """Sampled ids the run has not judged again yet."""
    record = load(project)
    if not record or record.get("status") != "pending":
        return []
    _, _, rows, _ = read_run(project, run_id)
    return [q for q in record["sample"] if q not in rows or not rows[q].judged]


def flips(before: Mapping[str, Mapping[str, Any]], rows: Mapping[str, ResultRow]) -> dict[str, dict[str, Any]]:
    """Per type: ``n``, ``generation_flips``, ``judge_flips``, ``flips`` and their rates."""
    per_type: dict[str, dict[str, Any]] = {}
    for qid, was in before.items():
        row = rows.get(qid)
        if row is None or not row.judged:
            continue
        bucket = per_type.setdefault(was["type"], {"n": 0, "generation_flips": 0, "judge_flips": 0, "ids": []})
        bucket["n"] += 1
        changed = bool(row.correct) != bool(was["label"])
        same_text = _sha(row.hypothesis) == was["hypothesis_sha256"]
        unstable = bool(((row.judgment.stability if row.judgment else None) or {}).get("flaky"))
        if changed and not same_text:
            bucket["generation_flips"] += 1
        elif changed or unstable:
            bucket["judge_flips"] += 1
        else:
            continue
        bucket["ids"].append(qid)
    for bucket in per_type.values():
        bucket["flips"] = bucket["generation_flips"] + bucket["judge_flips"]
        for key in ("flips", "generation_flips", "judge_flips"):
            bucket[key.replace("flips", "rate")] = round(bucket[key] / bucket["n"], 4) if bucket["n"] else 0.0
    return dict(sorted(per_type.items()))


def overall(per_type: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    n = sum(b["n"] for b in per_type.values())
    out: dict[str, Any] = {"n": n}
    for key in ("flips", "generation_flips", "judge_flips"):
        out[key] = sum(b[key] for b in per_type.values())
        out[key.replace("flips", "rate")] = round(out[key] / n, 4) if n else 0.0
    return out


def finish(project: Path, run_id: str) -> dict[str, Any]:
    """Compare the re-run sample with its recorded labels; the record becomes ``measured``."""
    project = Path(project)
    record = load(project)
    if not record:
        raise UserError("no noise-floor measurement was started", fix="parallel_longmemeval.sh ... --noise-floor")
    if record.get("status") == "measured":
        return record
    missing = pending_ids(project, run_id)
    if missing:
        raise UserError(f"{len(missing)} sampled item(s) are not re-run yet (e.g. {', '.join(missing[:3])})",
                        fix="resume the run with --no-cache (parallel_longmemeval.sh ... --noise-floor), then finish")
    _, _, rows, _ = read_run(project, run_id)
    per_type = flips(record["before"], rows)
    record.update(status="measured", measured_at=utc_now(), per_type=per_type, overall=overall(per_type))
    fileio.write_atomic_json(path_of(project), record)
    return record


def rate_of(floor: Mapping[str, Any] | None, qtype: str) -> float:
    """An item's chance to flip from noise: its type's measured flips, shrunk toward the overall rate
    (``PRIOR_ITEMS``); a type the sample missed gets the overall rate."""
    if not floor:
        return 0.0
    base = float((floor.get("overall") or {}).get("rate", 0.0))
    bucket = (floor.get("per_type") or {}).get(qtype) or {}
    return (bucket.get("flips", 0) + PRIOR_ITEMS * base) / (bucket.get("n", 0) + PRIOR_ITEMS)


def band(floor: Mapping[str, Any] | None, failing_types: Iterable[str], control_types: Iterable[str]) -> dict[str, Any]:
    """Flips expected from noise on a re-test set, and the band its net falls in under noise alone.

    A failing item that flips is a fix (+1), a control item that flips a regression (-1), each with its type's
    rate: net has mean sum(failing) - sum(control) and variance sum r(1 - r); the band is mean +- 2 sd, widened to
    whole items.
    """
    fail_rates = [rate_of(floor, t) for t in failing_types]
    ctrl_rates = [rate_of(floor, t) for t in control_types]
    expected = sum(fail_rates) + sum(ctrl_rates)
    mean = sum(fail_rates) - sum(ctrl_rates)
    sd = math.sqrt(sum(r * (1 - r) for r in (*fail_rates, *ctrl_rates)))
    return {
        "measured": bool(floor),
        "expected_flips": round(expected, 2),
        "mean_net": round(mean, 2),
        "sd": round(sd, 2),
        "low": math.floor(mean - BAND_SD * sd),
        "high": math.ceil(mean + BAND_SD * sd),
        "set_size": len(fail_rates) + len(ctrl_rates),
    }
