"""The one owner of a run directory: its files, its lock, finding runs, and reading and writing its records.
The work is in one module per section (``run_rows``, ``run_meta``, ``run_discovery``, ``run_rewrite``,
``run_outputs``); the names their callers use are re-exported here (the store's one face), and callers import them
from here.

The guarantees (atomic replaces, fsynced appends, schema checks both ways, ``reconcile``, one writer) are
``references/SPEC.md``'s "Crash safety"; ``fileio`` and ``run_rows`` keep them.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from lme.core.errors import UserError
from lme.core.fileio import ensure_writable_dir, write_atomic_json  # noqa: F401  (re-exported for the run's writers)
from lme.store.run_layout import (  # noqa: F401  (the layout's names, re-exported: callers import them from here)
    COMPLETED_FILE,
    HISTORY_CHART,
    LOCK_FILE,
    META_LOCK_FILE,
    METRICS_FILE,
    PER_TYPE_CHART,
    REPORT_FILE,
    RESERVE_FILE,
    RESULTS_FILE,
    SCORECARD_FILE,
    SNAPSHOT_FILES,
    SNAPSHOT_RECORD,
    WORKER_LOCK_FILE,
    compare_page_name,
    run_dirs,
    shard_dir,
    shard_dirs,
)
from lme.core.run_records import JudgeIdentity, Manifest, ResultRow, RunMeta, item_set
from lme.store.run_rows import (  # noqa: F401  (re-exported: the store's one face)
    append_row,
    append_rows,
    filter_pending,
    iter_rows,
    load_completed,
    load_results,
    load_rows,
    mark_completed,
    mark_completed_many,
    read_json,
    reconcile,
    repair,
)
from lme.store.run_meta import (  # noqa: F401  (re-exported: the store's one face)
    has_meta,
    manifest_path,
    meta_fault,
    meta_path,
    peek_json,
    peek_meta,
    read_manifest,
    read_meta,
    shard_metas,
    stored_settings,
    write_manifest,
    write_meta,
)
from lme.store.run_discovery import (  # noqa: F401  (re-exported: the store's one face)
    RunLock,
    configured_runs_dir,
    existing_run_dir,
    in_shard,
    is_run,
    latest_run,
    new_run_id,
    refuse_links,
    run_dir_for,
    runs_by_start,
    runs_dir,
    runs_under,
    runs_with_meta,
    scoring_project,
    validate_run_id,
    writer_lock_paths,
)
from lme.store.run_rewrite import (  # noqa: F401  (re-exported: the store's one face)
    copy_run,
    has_rows,
    rewrite_run,
)
from lme.store.run_outputs import (  # noqa: F401  (re-exported: the store's one face)
    charts_dir,
    read_metrics,
    write_scorecard_files,
)


# --------------------------------------------------------------------------- what a reader sees


@dataclass(frozen=True)
class RunData:
    """What a scorecard, a comparison or the report reads from one run directory (or a snapshot of one)."""

    path: Path
    meta: RunMeta
    manifest: Manifest | None
    rows: Mapping[str, ResultRow]
    """The last row per question id, over the run and its shards."""
    earlier: Sequence[ResultRow] = ()
    """Every row a later one replaced (earlier attempts): with ``rows``, every row the run wrote."""

    def every_row(self) -> Iterator[ResultRow]:
        """Every row the run wrote, the last ones first: what its spending adds up (``prices.spend``)."""
        yield from self.rows.values()
        yield from self.earlier

    @property
    def run_id(self) -> str:
        return str(self.meta.runId or self.path.name)

    @property
    def judge(self) -> JudgeIdentity:
        """The judge as comparable: provider and model (an old run's alias is its snapshot already:
        ``migrations``, run-meta 1.1.0). Whether verdicts were official is the scorecard's banner."""
        judge = self.meta.judge
        return JudgeIdentity(provider=judge.provider, model=str(judge.model), official=judge.official)

    @property
    def dataset_sha256(self) -> str | None:
        return self.meta.dataset_sha256

    @property
    def n_total(self) -> int:
        if self.manifest is not None:
            return self.manifest.n_total
        return len(self.rows)

    def item_types(self, n_total: int | None = None) -> tuple[dict[str, str], int]:
        """``(types in manifest order, unattributed)`` of the strict denominator (``run_records.item_set``)."""
        return item_set(self.manifest, self.rows, self.n_total if n_total is None else n_total)


def load_run(run_dir: Path) -> RunData:
    """Read run-meta.json, manifest.json (optional) and the merged result rows of a run or snapshot directory."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UserError(f"run directory {run_dir} does not exist",
                        fix="pass a run dir from .longmemeval-benchmarks/runs/")
    if not has_meta(run_dir):
        raise UserError(f"{meta_path(run_dir)} is missing: {run_dir} is not a run directory",
                        fix="pass a directory written by run_benchmark.py or a snapshot of one")
    latest, earlier = load_rows(run_dir)
    return RunData(path=run_dir, meta=read_meta(run_dir), manifest=read_manifest(run_dir), rows=latest,
                   earlier=tuple(earlier))
