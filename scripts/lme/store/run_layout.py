"""The files of a run directory, each name defined once, and where shards live. Standard library only.

``.longmemeval-benchmarks/runs/<runId>/`` holds:

- ``run-meta.json`` (how the run was made and how it stands), ``manifest.json`` (its question ids and types);
- ``item-results.jsonl`` (one row per attempt that reached an end), ``questions_completed.jsonl`` (one mark per
  judged question), ``prompts.jsonl`` (the exact prompts a target sent);
- ``.lock`` (the one writer), ``.meta.lock`` (shards updating the root meta), ``.worker.lock`` (starting a worker),
  ``worker.json`` and ``run.log`` (a background worker), ``pacing.json`` (the pacer's live figures);
- ``shard-<i>of<n>/`` with the same per-shard files when ``--shard`` is used;
- the scorecard's outputs: ``metrics.json``, ``scorecard.md``, ``report.html``, ``charts/``, ``compare-<id>.html``;
- ``backups/<label>-<time>/`` (what drop_qids, a revert or an adoption replaced).

``run_store`` reads and writes them; the stdlib-only callers (the loop's session watch) import the names here.
"""

from __future__ import annotations

from pathlib import Path

META_FILE = "run-meta.json"
MANIFEST_FILE = "manifest.json"
RESULTS_FILE = "item-results.jsonl"
COMPLETED_FILE = "questions_completed.jsonl"
PROMPTS_FILE = "prompts.jsonl"
LOCK_FILE = ".lock"
META_LOCK_FILE = ".meta.lock"
WORKER_FILE = "worker.json"
LOG_FILE = "run.log"
WORKER_LOCK_FILE = ".worker.lock"
PACING_FILE = "pacing.json"
"""The pacer's live figures while a run runs (for run_status in another process; a hint for people)."""
RESERVE_FILE = ".disk-reserve"
"""Free space a run holds while it writes (``fileio.SpaceReserve``): given back when the disk fills, so the run
can still record that it stopped and why."""
BATCHES_FILE = "batches.jsonl"
"""The Batch API ledger (``batch_ledger``): append-only events of every batch this run (shard) submitted."""
BATCHES_DIR = "batches"
"""A batch's input JSONL (``<chunk>.input.jsonl``) and its collected results (``<chunk>.results.jsonl``)."""
METRICS_FILE = "metrics.json"
SCORECARD_FILE = "scorecard.md"
REPORT_FILE = "report.html"
CHARTS_DIR = "charts"
PER_TYPE_CHART = "per-type-accuracy.png"
HISTORY_CHART = "accuracy-over-rounds.png"
"""The PNG charts: drawn with matplotlib only when asked (``scorecard.py --png``; it costs about a second)."""
PER_TYPE_SVG = "per-type-accuracy.svg"
HISTORY_SVG = "accuracy-over-rounds.svg"
"""The SVG charts every scoring writes (``report_svg``: no chart library on the run's path)."""
BACKUPS_DIR = "backups"
SHARD_GLOB = "shard-*"

SNAPSHOT_FILES = (RESULTS_FILE, COMPLETED_FILE, META_FILE, MANIFEST_FILE, METRICS_FILE)
"""What a loop snapshot copies of a run (each shard directory is copied whole, its lock left out)."""
SNAPSHOT_RECORD = "snapshot.json"
WATCHED_FILES = (RESULTS_FILE, COMPLETED_FILE, META_FILE, WORKER_FILE)
"""The run files whose change shows a run moved on (the loop's stop hook watches them)."""


def shard_name(shard: tuple[int, int]) -> str:
    """``shard-2of4`` for shard 2 of 4."""
    return f"shard-{shard[0]}of{shard[1]}"


def shard_dir(root: Path, shard: tuple[int, int] | None) -> Path:
    """Where a writer of ``shard`` keeps its files: the run's root, or its shard directory."""
    return Path(root) if shard is None else Path(root) / shard_name(shard)


def shard_dirs(root: Path) -> list[Path]:
    return sorted(p for p in Path(root).glob(SHARD_GLOB) if p.is_dir())


def run_dirs(root: Path) -> list[Path]:
    """The run's root, then each shard directory: every place that holds rows of the run."""
    return [Path(root), *shard_dirs(root)]


COMPARE_PAGE_PREFIX = "compare-"


def compare_page_name(before_run_id: str) -> str:
    """The diff page a scorecard writes beside the later run: ``compare-<before run id>.html``."""
    return f"{COMPARE_PAGE_PREFIX}{before_run_id}.html"
